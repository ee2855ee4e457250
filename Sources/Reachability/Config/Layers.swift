// The layers below reachd.conf's (Package.swift: ReachabilityConfig), seen by every file of this
// folder and by the programs above.
@_exported import ReachabilityMetrics
