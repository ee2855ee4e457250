/// Tells that the host slept by the clocks alone, for hosts without logind: CLOCK_BOOTTIME counts
/// the time asleep and CLOCK_MONOTONIC does not, so the gap between them grows only across a
/// suspend. Pure apart from the default readings: tests pass the numbers.
package struct SleepClock: Sendable {
    /// Less time asleep than this is no sleep worth redoing anything for (and no suspend of a
    /// laptop lasts less): a stop of a few hundred milliseconds is left alone.
    public static let threshold: Duration = .seconds(2)

    /// The gap at the last reading, in microseconds.
    private var suspended: UInt64

    public init(suspendedMicroseconds: UInt64 = SystemClock.suspendedMicroseconds()) {
        suspended = suspendedMicroseconds
    }

    /// How long the host slept since the last reading, when at least `threshold`; nil otherwise.
    /// The reading becomes the new reference either way.
    public mutating func slept(suspendedMicroseconds now: UInt64 = SystemClock.suspendedMicroseconds()) -> Duration? {
        defer { suspended = now }
        guard now > suspended else { return nil }
        let asleep = Duration.microseconds(Int64(clamping: now - suspended))
        return asleep >= Self.threshold ? asleep : nil
    }
}
