/// The per-user rate of new DNS lookups: a token bucket per Unix user other than root, so that
/// no caller turns host checks into a query pump for the resolver everyone shares (one client
/// sent 3,800 queries a second with unique names before). Only lookups that would send a query
/// take a token: cached answers, /etc/hosts and "no nameserver reachable" cost nothing.
/// Loop-thread only; time is passed in, so tests need no clock.
struct LookupRate {
    struct Settings: Equatable, Sendable {
        /// Tokens added per second: the sustained rate of new lookups of one user.
        var perSecond: Int
        /// The bucket's size: a burst a user may start at once (a desktop checking its
        /// accounts after a network change), from a full bucket.
        var burst: Int
    }

    let settings: Settings
    private var buckets: [UInt32: (tokens: Double, at: ContinuousClock.Instant)] = [:]

    init(_ settings: Settings) { self.settings = settings }

    /// Takes a token of `owner`'s bucket; nil when it had one (or the owner is not a user), else
    /// why the lookup is refused, for the caller's error.
    mutating func admit(_ owner: LookupOwner, now: ContinuousClock.Instant) -> String? {
        guard case let .user(uid) = owner, settings.perSecond > 0 else { return nil }
        let full = Double(settings.burst)
        let tokens = buckets[uid].map { min(full, refilled($0, now: now)) } ?? full
        guard tokens >= 1 else {
            buckets[uid] = (tokens, now)
            return "Unix user \(uid) started more than \(settings.burst) DNS lookups at once or \(settings.perSecond) a second, "
                + "the most one user may (LookupsPerUserPerSecond=\(settings.perSecond), LookupBurstPerUser=\(settings.burst)); "
                + "try again in a moment or check fewer names"
        }
        buckets[uid] = (tokens - 1, now)
        // Forget users whose buckets are full again: the table stays as small as the active users.
        if buckets.count > 64 { buckets = buckets.filter { refilled($0.value, now: now) < full } }
        return nil
    }

    private func refilled(_ bucket: (tokens: Double, at: ContinuousClock.Instant), now: ContinuousClock.Instant) -> Double {
        bucket.tokens + Double(bucket.at.duration(to: now).wholeMilliseconds) / 1000 * Double(settings.perSecond)
    }
}
