/// The per-user rate of new DNS lookups: a token bucket per Unix user other than root, so that
/// no caller turns host checks into a query pump for the resolver everyone shares (one client
/// sent 3,800 queries a second with unique names before). Only lookups that would send a query
/// take a token: cached answers, /etc/hosts and "no nameserver reachable" cost nothing.
/// Loop-thread only; time is passed in, so tests need no clock.
package struct LookupRate {
    package typealias Settings = UserRate.Settings

    private var rate: UserRate
    package var settings: Settings { rate.settings }

    package init(_ settings: Settings) { rate = UserRate(settings) }

    /// Takes a token of `owner`'s bucket; nil when it had one (or the owner is not a user), else
    /// why the lookup is refused, for the caller's error.
    package mutating func admit(_ owner: LookupOwner, now: ContinuousClock.Instant) -> String? {
        guard case let .user(uid) = owner, !rate.admit(uid, now: now) else { return nil }
        return "Unix user \(uid) started more than \(settings.burst) DNS lookups at once or \(settings.perSecond) a second, "
            + "the most one user may (LookupsPerUserPerSecond=\(settings.perSecond), LookupBurstPerUser=\(settings.burst)); "
            + "try again in a moment or check fewer names"
    }
}
