// The layers below this one (Package.swift: ReachabilityMetrics), seen by every file of this
// folder and by the layers above.
@_exported import ReachabilityOutput
