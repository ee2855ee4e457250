// The layers that are targets of their own (Package.swift), seen by every file of this module and
// by the package's programs as part of it. Their declarations are `package`, but for what a
// program reads (the Model's values such as IPAddress and ReachabilityFlags, the bus's address and
// errors, reachd's client): those are public, and a program that imports Reachability sees them as the library's.
@_exported import ReachabilitySystem
@_exported import ReachabilityEngine
@_exported import ReachabilityNetlink
@_exported import ReachabilityResolver
@_exported import ReachabilityConnectivity
@_exported import ReachabilityBus
@_exported import ReachabilityCore
@_exported import ReachabilityClient
