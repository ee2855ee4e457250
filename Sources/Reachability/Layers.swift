// The layers that are targets of their own (Package.swift), seen by every file of this module and
// by the package's programs as part of it. Their declarations are `package`, but for the Model's
// values a program reads (IPAddress, ReachabilityFlags, ...): those are public, and a program that
// imports Reachability sees them as the library's own.
@_exported import ReachabilitySystem
@_exported import ReachabilityEngine
