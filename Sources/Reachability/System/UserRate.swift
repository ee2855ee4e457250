/// A token bucket per Unix user other than root: `perSecond` tokens a second, at most `burst`
/// held. What one user may do at a sustained rate, however many connections it opens, while
/// root (and so the system's own work) is never counted. Loop-thread only; time is passed in, so
/// tests need no clock.
package struct UserRate: Sendable {
    public struct Settings: Equatable, Sendable {
        /// Tokens added per second: the sustained rate.
        public var perSecond: Int
        /// The bucket's size: what one user may do at once, from a full bucket.
        public var burst: Int

        public init(perSecond: Int, burst: Int) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    public let settings: Settings
    private var buckets: [UInt32: (tokens: Double, at: ContinuousClock.Instant)] = [:]

    public init(_ settings: Settings) { self.settings = settings }

    /// Takes a token of `uid`'s bucket: true when it had one (always for root, and when
    /// `perSecond` is 0: no bound).
    public mutating func admit(_ uid: UInt32, now: ContinuousClock.Instant) -> Bool {
        guard uid != 0, settings.perSecond > 0 else { return true }
        let full = Double(settings.burst)
        let tokens = buckets[uid].map { min(full, refilled($0, now: now)) } ?? full
        guard tokens >= 1 else {
            buckets[uid] = (tokens, now)
            return false
        }
        buckets[uid] = (tokens - 1, now)
        // Forget users whose buckets are full again: the table stays as small as the active users.
        if buckets.count > 64 { buckets = buckets.filter { refilled($0.value, now: now) < full } }
        return true
    }

    private func refilled(_ bucket: (tokens: Double, at: ContinuousClock.Instant), now: ContinuousClock.Instant) -> Double {
        bucket.tokens + Double(bucket.at.duration(to: now).wholeMilliseconds) / 1000 * Double(settings.perSecond)
    }
}
