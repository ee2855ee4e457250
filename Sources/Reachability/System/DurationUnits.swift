#if canImport(Glibc)
import Glibc
#endif

/// Durations in the units the C interfaces take: sd-bus and sd-event count microseconds, poll(2),
/// D-Bus arguments and c-ares milliseconds, metrics seconds as a Double. The one place that does
/// arithmetic on `components` (whole seconds, and attoseconds of the same sign on top).
extension Duration {
    /// Whole microseconds, the fraction dropped.
    public var wholeMicroseconds: Int64 { components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000 }

    /// Whole milliseconds, the fraction dropped.
    public var wholeMilliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }

    /// Milliseconds rounded up, so that a wait this long never ends early; 0 below zero.
    public var millisecondsRoundedUp: Int64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }

    /// Whole seconds rounded up.
    public var secondsRoundedUp: Int64 { components.attoseconds > 0 ? components.seconds + 1 : components.seconds }

    /// Microseconds, 0 below zero: sd-bus and sd-event timeouts, ElapsedUSec.
    public var unsignedMicroseconds: UInt64 { UInt64(max(0, wholeMicroseconds)) }

    /// Seconds as a Double, for metrics.
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension ContinuousClock.Instant {
    /// This instant as CLOCK_MONOTONIC microseconds, sd-event's timer clock. Swift's ContinuousClock
    /// reads CLOCK_BOOTTIME on Linux, which also counts time suspended: convert through the
    /// distance from now, which both clocks agree on while the machine is awake.
    public var monotonicMicroseconds: UInt64 {
        let monotonicNow = SystemClock.monotonicMicroseconds()
        let delta = ContinuousClock.now.duration(to: self).wholeMicroseconds
        return delta >= 0 ? monotonicNow &+ UInt64(delta) : monotonicNow &- min(monotonicNow, UInt64(-delta))
    }
}

/// The clocks that other programs read as numbers.
package enum SystemClock {
    /// CLOCK_MONOTONIC in microseconds: sd-event's and sd-bus's timestamps, sd_notify's MONOTONIC_USEC.
    public static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }

    /// How long the host has been suspended since boot, in microseconds: CLOCK_BOOTTIME counts
    /// the time asleep, CLOCK_MONOTONIC does not. Both are read through the vDSO: no system call.
    public static func suspendedMicroseconds() -> UInt64 {
        var boot = timespec()
        var monotonic = timespec()
        clock_gettime(CLOCK_MONOTONIC, &monotonic)
        clock_gettime(CLOCK_BOOTTIME, &boot)
        let bootMicroseconds = UInt64(boot.tv_sec) * 1_000_000 + UInt64(boot.tv_nsec) / 1000
        let monotonicMicroseconds = UInt64(monotonic.tv_sec) * 1_000_000 + UInt64(monotonic.tv_nsec) / 1000
        return bootMicroseconds > monotonicMicroseconds ? bootMicroseconds - monotonicMicroseconds : 0
    }

    /// CLOCK_REALTIME in seconds since the epoch (process_start_time_seconds).
    public static func wallSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
