// The layers that are targets of their own (Package.swift), seen by every file of this module and
// by the package's programs as part of it. Their declarations are `package`: a program that
// imports Reachability sees none of them.
@_exported import ReachabilitySystem
