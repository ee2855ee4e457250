// The layer below the Engine (Package.swift: ReachabilityModel), seen by every file of this folder
// and by the layers above; the Engine's own declarations are `package`.
@_exported import ReachabilityModel
