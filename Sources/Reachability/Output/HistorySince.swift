#if canImport(Glibc)
import Glibc
#endif

/// `reachctl history --since TIME`: when the period begins, in wall-clock microseconds.
/// Forms, as journalctl reads most of them: a span back from now (`90s`, `30m`, `2h`, `1d`,
/// `1w`, with or without a leading `-` or a trailing ` ago`), `today` and `yesterday` (local
/// midnight), a local date and time (`2026-11-27`, `2026-11-27 14:02`, `2026-11-27T14:02:30`)
/// and `@SECONDS` since the epoch.
package enum HistorySince {
    package static let acceptedForms =
        "a span back from now (90s, 30m, 2h, 1d, 1w), today, yesterday, a local date and time (2026-11-27, 2026-11-27 14:02, 2026-11-27T14:02:30) or @SECONDS"

    package struct Refusal: Error, CustomStringConvertible, Sendable {
        package var description: String
    }

    private static let spans: [String: UInt64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]

    package static func parse(_ text: String, now: UInt64) throws(Refusal) -> UInt64 {
        let refusal = Refusal(description: "invalid --since '\(text.escapingControlCharacters())': write \(acceptedForms)")
        var word = text.trimmingBlanks()
        if word == "today" || word == "yesterday" {
            var seconds = time_t(now / 1_000_000)
            var parts = tm()
            guard localtime_r(&seconds, &parts) != nil else { throw refusal }
            (parts.tm_hour, parts.tm_min, parts.tm_sec, parts.tm_isdst) = (0, 0, 0, -1)
            if word == "yesterday" { parts.tm_mday -= 1 }
            let midnight = mktime(&parts)
            guard midnight >= 0 else { throw refusal }
            return UInt64(midnight) * 1_000_000
        }
        if word.hasPrefix("@") {
            guard let seconds = UInt64(word.dropFirst()), seconds < 1 << 40 else { throw refusal }
            return seconds * 1_000_000
        }
        if word.contains("-"), word.first?.isNumber == true {
            return try date(word, refusal)
        }
        if word.hasSuffix(" ago") { word = String(word.dropLast(4)).trimmingBlanks() }
        if word.hasPrefix("-") { word.removeFirst() }
        guard let unit = word.last.map(String.init), let scale = spans[unit], let count = UInt64(word.dropLast()),
            count <= 100 * 365 * 86_400 / scale
        else { throw refusal }
        let back = count * scale * 1_000_000
        return now > back ? now - back : 0
    }

    /// `YYYY-MM-DD`, then optionally ` HH:MM` or `THH:MM`, then optionally `:SS`: local time.
    private static func date(_ text: String, _ refusal: Refusal) throws(Refusal) -> UInt64 {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int32? {
            guard range.upperBound <= bytes.count, range.allSatisfy({ (48...57).contains(bytes[$0]) }) else { return nil }
            return range.reduce(0) { $0 * 10 + Int32(bytes[$1] - 48) }
        }
        guard [10, 16, 19].contains(bytes.count), bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            (1...12).contains(month), (1...31).contains(day)
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
        let seconds = mktime(&parts)
        guard seconds >= 0 else { throw refusal }
        return UInt64(seconds) * 1_000_000
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
