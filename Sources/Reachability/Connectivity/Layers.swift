// The layers below this adapter (Package.swift: ReachabilityConnectivity), seen by every file of this
// folder; the layers above see this one through the library's Layers.swift.
@_exported import ReachabilitySystem
@_exported import ReachabilityModel
