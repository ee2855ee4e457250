/// Remembers resolver answers for as long as DNS allows, so repeated host checks cost no
/// lookup. Pure: the caller passes the time, so tests move it instead of sleeping.
///
/// - Positive answers live for their TTL, at least `minimumTTL` (a TTL of 0, as /etc/hosts
///   answers carry, would otherwise defeat the cache) and at most `maximumTTL` (an address
///   that stopped working is forgotten within the hour, whatever its zone claims).
/// - Negative answers (NXDOMAIN, no data) live for `negativeTTL`: long enough to absorb a burst
///   of checks of a mistyped name, short enough that a newly published name shows up quickly.
/// - Timeouts and failures are not cached: the next check asks again.
///
/// Keys are compared without ASCII case (DNS names are case-insensitive); a trailing dot makes a
/// different key, because it changes the lookup (no search list).
package struct HostCache: Sendable {
    package static let minimumTTL: Duration = .seconds(1)
    package static let maximumTTL: Duration = .seconds(3600)
    /// The default lifetime of a negative answer (`[Checks] NegativeCacheTime=`).
    package static let negativeTTL: Duration = .seconds(5)

    private struct Entry: Sendable {
        var outcome: HostResolver.Outcome
        var expiry: ContinuousClock.Instant
    }

    /// At most this many names are kept; storing past it evicts the entry that expires first.
    package let capacity: Int
    /// How long NXDOMAIN / no-data answers are kept; zero keeps none.
    package let negativeLifetime: Duration
    private var entries: [String: Entry] = [:]

    package init(capacity: Int = 4096, negativeLifetime: Duration = HostCache.negativeTTL) {
        precondition(capacity > 0, "a cache holds at least one entry")
        self.capacity = capacity
        self.negativeLifetime = negativeLifetime
    }

    package var count: Int { entries.count }

    /// The cached outcome for `name` if it is still fresh at `now`. A positive answer comes with
    /// the TTL that remains (rounded up to whole seconds), as a downstream cache would expect.
    package mutating func lookup(_ name: String, now: ContinuousClock.Instant) -> HostResolver.Outcome? {
        let key = Self.key(name)
        guard let entry = entries[key] else { return nil }
        guard now < entry.expiry else {
            entries[key] = nil
            return nil
        }
        if case .resolved(let addresses, _) = entry.outcome {
            return .resolved(addresses, ttl: UInt32(clamping: now.duration(to: entry.expiry).secondsRoundedUp))
        }
        return entry.outcome
    }

    /// Remembers `outcome` for `name` from `now`, if it is the kind of outcome that is cached.
    package mutating func store(_ name: String, _ outcome: HostResolver.Outcome, now: ContinuousClock.Instant) {
        let lifetime: Duration
        switch outcome {
        case .resolved(let addresses, let ttl):
            guard !addresses.isEmpty else { return }
            lifetime = min(max(.seconds(ttl), Self.minimumTTL), Self.maximumTTL)
        case .notFound:
            guard negativeLifetime > .zero else { return }
            lifetime = negativeLifetime
        case .timedOut, .failed:
            return
        }
        let key = Self.key(name)
        if entries[key] == nil, entries.count >= capacity { makeRoom(now: now) }
        entries[key] = Entry(outcome: outcome, expiry: now + lifetime)
    }

    /// Forgets everything (e.g. when resolv.conf or the network changed).
    package mutating func removeAll() {
        entries.removeAll()
    }

    /// Drops what has expired; when nothing has, the entry closest to expiry (the least valuable
    /// one). Linear in the capacity, and only run when the cache is full.
    private mutating func makeRoom(now: ContinuousClock.Instant) {
        entries = entries.filter { now < $0.value.expiry }
        guard entries.count >= capacity, let soonest = entries.min(by: { $0.value.expiry < $1.value.expiry }) else {
            return
        }
        entries[soonest.key] = nil
    }

    private static func key(_ name: String) -> String {
        String(decoding: name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }
}
