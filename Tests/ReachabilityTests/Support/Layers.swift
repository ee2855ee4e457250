// The library's layers that are targets of their own above Reachability (Package.swift), seen by
// every test file: their `package` declarations are what the tests reach.
@_exported import ReachabilityConfig
