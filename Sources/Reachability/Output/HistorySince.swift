#if canImport(Glibc)
import Glibc
#endif

/// `reachctl history --since TIME`: when the period begins, in wall-clock microseconds. The
/// forms are journalctl's: a time span back from now, in `DurationText`'s grammar (systemd's time
/// spans, the one span syntax of every option and of reachd.conf) with or without a leading `-`
/// or a trailing ` ago` (`2h`, `-2h`, `2min`, `1h30s`, `1 hour ago`, `25h`); `now`, `today` and
/// `yesterday` (local midnight); a date and time in ISO 8601 (`2026-11-27`, `2026-11-27 14:02`,
/// `2026-11-27T14:02:30`, local time, or with `Z` or an offset such as `+01:00`: that zone);
/// and `@SECONDS` since the epoch.
package enum HistorySince {
    package static let acceptedForms =
        "a time span back from now (2h, -2h, 2min, 1h30s, '1 hour ago'), now, today, yesterday, "
        + "an ISO 8601 date and time (2026-11-27, '2026-11-27 14:02', 2026-11-27T14:02:30, 2026-11-27T14:02:30Z, "
        + "2026-11-27T14:02:30+01:00) or @SECONDS"

    /// How far back a span may reach: the records hold no more, and the arithmetic stays exact.
    package static let longestSpan: Duration = .seconds(100 * 365 * 86_400)

    package struct Refusal: Error, CustomStringConvertible, Sendable {
        package var description: String
    }

    package static func parse(_ text: String, now: UInt64) throws(Refusal) -> UInt64 {
        let refusal = Refusal(description: "invalid --since '\(text.escapingControlCharacters())': write \(acceptedForms)")
        var word = text.trimmingBlanks()
        switch word {
        case "now": return now
        case "today", "yesterday":
            var seconds = time_t(now / 1_000_000)
            var parts = tm()
            guard localtime_r(&seconds, &parts) != nil else { throw refusal }
            (parts.tm_hour, parts.tm_min, parts.tm_sec, parts.tm_isdst) = (0, 0, 0, -1)
            if word == "yesterday" { parts.tm_mday -= 1 }
            let midnight = mktime(&parts)
            guard midnight >= 0 else { throw refusal }
            return UInt64(midnight) * 1_000_000
        default: break
        }
        if word.hasPrefix("@") {
            guard let seconds = UInt64(word.dropFirst()), seconds < 1 << 40 else { throw refusal }
            return seconds * 1_000_000
        }
        if word.utf8.count >= 10, word.utf8.dropFirst(4).first == UInt8(ascii: "-"), word.first?.isNumber == true {
            return try date(word, refusal)
        }
        if word.hasSuffix(" ago") { word = String(word.dropLast(4)).trimmingBlanks() }
        if word.hasPrefix("-") { word.removeFirst() }
        let span: Duration
        do {
            span = try DurationText.parse(word, maximum: longestSpan)
        } catch {
            if case .tooLarge = error.problem {
                throw Refusal(description: "invalid --since '\(text.escapingControlCharacters())': more than \(DurationText.words(longestSpan)) back")
            }
            throw refusal
        }
        let back = UInt64(span.components.seconds) * 1_000_000 + UInt64(span.components.attoseconds / 1_000_000_000_000)
        return now > back ? now - back : 0
    }

    /// `YYYY-MM-DD`, then optionally ` HH:MM` or `THH:MM`, then optionally `:SS` and a fraction
    /// of a second (dropped), then optionally `Z` or `+HH:MM`, `-HH:MM`, `+HHMM`: local time
    /// without a zone.
    private static func date(_ text: String, _ refusal: Refusal) throws(Refusal) -> UInt64 {
        var bytes = Array(text.utf8)
        let offset = try zoneOffset(&bytes, refusal)
        func number(_ range: Range<Int>) -> Int32? {
            guard range.upperBound <= bytes.count, range.allSatisfy({ (48...57).contains(bytes[$0]) }) else { return nil }
            return range.reduce(0) { $0 * 10 + Int32(bytes[$1] - 48) }
        }
        if bytes.count > 20, bytes[19] == UInt8(ascii: "."), bytes[20...].allSatisfy({ (48...57).contains($0) }) {
            bytes.removeSubrange(19...)
        }
        guard [10, 16, 19].contains(bytes.count), bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            (1...12).contains(month), (1...31).contains(day), offset == nil || bytes.count > 10
        else { throw refusal }
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday, parts.tm_isdst) = (year - 1900, month - 1, day, -1)
        if bytes.count >= 16 {
            guard [UInt8(ascii: " "), UInt8(ascii: "T")].contains(bytes[10]), bytes[13] == UInt8(ascii: ":"),
                let hour = number(11..<13), let minute = number(14..<16), hour < 24, minute < 60
            else { throw refusal }
            (parts.tm_hour, parts.tm_min) = (hour, minute)
        }
        if bytes.count == 19 {
            guard bytes[16] == UInt8(ascii: ":"), let second = number(17..<19), second < 61 else { throw refusal }
            parts.tm_sec = second
        }
        let seconds: Int
        if let offset {
            seconds = timegm(&parts) - offset
        } else {
            seconds = mktime(&parts)
        }
        guard seconds >= 0 else { throw refusal }
        return UInt64(seconds) * 1_000_000
    }

    /// Removes a trailing `Z`, `+HH:MM`, `-HH:MM` or `+HHMM` from `bytes` and returns its offset
    /// east of UTC in seconds; nil when there is none (local time).
    private static func zoneOffset(_ bytes: inout [UInt8], _ refusal: Refusal) throws(Refusal) -> Int? {
        guard bytes.count > 10 else { return nil }
        if bytes.last == UInt8(ascii: "Z") {
            bytes.removeLast()
            return 0
        }
        for length in [6, 5] where bytes.count > 16 + length - 1 {
            let sign = bytes[bytes.count - length]
            guard sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { continue }
            let zone = Array(bytes[(bytes.count - length + 1)...]).filter { $0 != UInt8(ascii: ":") }
            guard zone.count == 4, zone.allSatisfy({ (48...57).contains($0) }), length == 5 || bytes[bytes.count - 3] == UInt8(ascii: ":")
            else { throw refusal }
            let digits = zone.map { Int($0 - 48) }
            let (hours, minutes) = (digits[0] * 10 + digits[1], digits[2] * 10 + digits[3])
            guard hours < 24, minutes < 60 else { throw refusal }
            bytes.removeLast(length)
            return (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
        }
        return nil
    }
}

extension String {
    fileprivate func trimmingBlanks() -> String {
        var scalars = Substring(self)
        while scalars.first == " " || scalars.first == "\t" { scalars.removeFirst() }
        while scalars.last == " " || scalars.last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
