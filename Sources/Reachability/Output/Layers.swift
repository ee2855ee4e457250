// The library below this layer (Package.swift: ReachabilityOutput), seen by every file of this
// folder and by the layers above.
@_exported import Reachability
