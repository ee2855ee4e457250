// Every layer of the library (Package.swift), seen by every file of this program: the top one
// re-exports those below it.
@_exported import ReachabilityConfig
