// The layers below the core (Package.swift: ReachabilityCore), seen by every file of this folder:
// the Engine and the adapters but the bus, which the core never names.
@_exported import ReachabilitySystem
@_exported import ReachabilityEngine
@_exported import ReachabilityNetlink
@_exported import ReachabilityResolver
@_exported import ReachabilityConnectivity
