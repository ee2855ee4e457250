internal import Reachability

/// Where answers come from: reachd over D-Bus (`SCDaemonBackend`) or the library in-process
/// (`SCInProcessBackend`). `SCReachabilityService` picks one, as reachctl does.
protocol SCBackend: AnyObject, Sendable {
    /// The target's flags now: an address at once, a host name by `deadline` (not reachable,
    /// reason dnsTimeout, when DNS has not answered by then). nil when this backend cannot answer
    /// (reachd went away during the call).
    func check(_ target: SCTarget, deadline: ContinuousClock.Instant) -> ReachabilityFlags?

    /// The last answer of a followed target, when one is known: `GetFlags` on a scheduled
    /// reference answers from it instead of asking again.
    func knownAnswer(for target: SCTarget) -> ReachabilityFlags?

    /// Starts following: `follower.deliver` gets the current answer as soon as it is known
    /// (before this returns, for an address) and then each new one. False when refused.
    func follow(_ follower: SCFollower) -> Bool

    /// Stops following; never waits (it may run in a reference's deinit, on any thread).
    func unfollow(_ id: UInt64)

    /// Releases threads and sockets; for tests, which make a service per namespace.
    func shutdown()
}
