#if canImport(Glibc)
import Glibc
#endif

/// When a line was written, as `reachctl monitor` stamps its lines: ISO 8601 with milliseconds,
/// local time with its UTC offset for people (`2026-11-27T17:40:01.123+01:00`, as `ip -ts
/// monitor` stamps its lines and the journal shows them), UTC for JSON
/// (`2026-11-27T16:40:01.123Z`), which sorts and compares across hosts and time zones.
package struct Timestamp: Hashable, Sendable {
    /// Seconds since the Unix epoch.
    public var seconds: Int
    /// Milliseconds into that second (0-999).
    public var milliseconds: Int

    public init(seconds: Int, milliseconds: Int) {
        self.seconds = seconds
        self.milliseconds = milliseconds
    }

    /// The wall clock now (CLOCK_REALTIME).
    public static func now() -> Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Timestamp(seconds: time.tv_sec, milliseconds: time.tv_nsec / 1_000_000)
    }

    /// In this host's time zone (TZ, /etc/localtime), with its offset: `2026-11-27T17:40:01.123+01:00`.
    public var local: String {
        var time = time_t(seconds)
        var parts = tm()
        guard localtime_r(&time, &parts) != nil else { return utc }
        return format(parts, offset: parts.tm_gmtoff)
    }

    /// In UTC: `2026-11-27T16:40:01.123Z`.
    public var utc: String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return format(parts, offset: nil)
    }

    /// `offset` nil: `Z`; else `+HH:MM` or `-HH:MM`.
    package func format(_ parts: tm, offset: Int?) -> String {
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        var text = "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
            + "T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)"
        guard let offset else { return text + "Z" }
        let minutes = abs(offset) / 60
        text += (offset < 0 ? "-" : "+") + two(Int32(minutes / 60)) + ":" + two(Int32(minutes % 60))
        return text
    }
}
