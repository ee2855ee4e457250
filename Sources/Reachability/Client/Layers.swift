// The layers below reachd's client (Package.swift: ReachabilityClient), seen by every file of this
// folder: the bus it speaks over, the probe's settings it carries, and the values.
@_exported import ReachabilitySystem
@_exported import ReachabilityModel
@_exported import ReachabilityBus
@_exported import ReachabilityConnectivity
