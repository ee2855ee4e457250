/// Durations as people type them on the command line and in reachd.conf (reachctl(1),
/// reachd.conf(5) "SYNTAX"): systemd's time spans, as in its unit files, so that what works in
/// `TimeoutSec=` works here: `500ms`, `2s`, `1.5s`, `2min`, `1h`, `1h 30min`, `1h30min`, or a
/// bare number of seconds (`30`, `0.25`).
///
/// Grammar: one or more COMPONENTs, with optional blanks (space, tab) around and between them;
/// COMPONENT = DIGITS [ "." DIGITS ] [ blanks ] [ UNIT ], a component without a unit counting
/// seconds. The units are systemd's: us usec µs, ms msec, s sec second seconds, m min minute
/// minutes, h hr hour hours, d day days, w week weeks, M month months, y year years (a month is
/// 30.44 days, a year 365.25, as systemd counts them). No sign, no exponent, no digits left out
/// around the point. Values are exact to the nanosecond; finer fractions are truncated. Zero is
/// accepted; the largest value is `DurationText.maximum` (24 hours) unless the caller names
/// another, so a typo such as `3000m` cannot turn a timeout into days (a period back in time,
/// `HistorySince`, may reach further).
package enum DurationText {
    /// The largest duration accepted: 24 hours.
    package static let maximum: Duration = .seconds(24 * 60 * 60)

    /// The accepted forms, as error messages and help texts name them: the commonest, not every
    /// unit name (the grammar above has them). The stall tests spell this text out, so it stays.
    package static let acceptedForms =
        "a systemd time span (500ms, 2s, 1.5s, 2min, 1h30s, 1h 30min; units us, ms, s, min, h, d, w) or a bare number of seconds"

    /// The units and their length in nanoseconds, under every name systemd gives them.
    package static let units: [String: UInt64] = {
        let second: UInt64 = 1_000_000_000
        let names: [([String], UInt64)] = [
            (["us", "usec", "µs", "μs"], 1_000),
            (["ms", "msec"], 1_000_000),
            (["s", "sec", "second", "seconds"], second),
            (["m", "min", "minute", "minutes"], 60 * second),
            (["h", "hr", "hour", "hours"], 3_600 * second),
            (["d", "day", "days"], 86_400 * second),
            (["w", "week", "weeks"], 604_800 * second),
            (["M", "month", "months"], 2_629_800 * second),
            (["y", "year", "years"], 31_557_600 * second),
        ]
        return Dictionary(uniqueKeysWithValues: names.flatMap { words, length in words.map { ($0, length) } })
    }()

    /// Parses `text`, no longer than `maximum`; throws a `DurationParseError` naming the text
    /// and the accepted forms.
    package static func parse(_ text: String, maximum: Duration = maximum) throws(DurationParseError) -> Duration {
        let bytes = Array(text.utf8)
        let limit = UInt128(maximum.attoseconds / 1_000_000_000)
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

        var i = 0
        func skipBlanks() { while i < bytes.count, isBlank(bytes[i]) { i += 1 } }
        func digits() -> ArraySlice<UInt8> {
            let start = i
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
            return bytes[start..<i]
        }
        skipBlanks()
        guard i < bytes.count else { throw DurationParseError(text: text, problem: .empty) }
        if bytes[i] == UInt8(ascii: "-") { throw DurationParseError(text: text, problem: .negative) }
        // systemd's word for no limit: longer than any limit here.
        if text.split(whereSeparator: { $0 == " " || $0 == "\t" }) == ["infinity"] { throw DurationParseError(text: text, problem: .tooLarge(maximum)) }

        var total: UInt128 = 0
        while i < bytes.count {
            let whole = digits()
            guard !whole.isEmpty else { throw DurationParseError(text: text, problem: .malformed) }
            var fraction: ArraySlice<UInt8> = []
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                fraction = digits()
                guard !fraction.isEmpty else { throw DurationParseError(text: text, problem: .malformed) }
            }
            skipBlanks()
            let unitStart = i
            while i < bytes.count, !isDigit(bytes[i]), !isBlank(bytes[i]) { i += 1 }
            let unitName = String(decoding: bytes[unitStart..<i], as: UTF8.self)
            guard let unitNanoseconds = unitName.isEmpty ? units["s"] : units[unitName] else {
                throw DurationParseError(text: text, problem: .malformed)
            }
            total += try component(whole: whole, fraction: fraction, unit: UInt128(unitNanoseconds), text: text, maximum: maximum)
            guard total <= limit else { throw DurationParseError(text: text, problem: .tooLarge(maximum)) }
            skipBlanks()
        }
        return .nanoseconds(Int64(total))
    }

    /// One component's nanoseconds, truncated.
    private static func component(
        whole: ArraySlice<UInt8>, fraction: ArraySlice<UInt8>, unit: UInt128, text: String, maximum: Duration
    ) throws(DurationParseError) -> UInt128 {
        // Whole part: any value past 10^20 is far beyond the maximum; stopping there keeps the
        // arithmetic below inside UInt128 (10^20 * a year's 3.2*10^16 ns < 2^128).
        var wholeValue: UInt128 = 0
        for digit in whole {
            wholeValue = wholeValue * 10 + UInt128(digit - UInt8(ascii: "0"))
            if wholeValue > 100_000_000_000_000_000_000 {
                throw DurationParseError(text: text, problem: .tooLarge(maximum))
            }
        }
        // Fraction: 18 digits are finer than a nanosecond of even a year (3.2*10^-2 ns), so the
        // rest cannot change the truncated result, and 10^18 * a year stays inside UInt128.
        var fractionValue: UInt128 = 0
        var scale: UInt128 = 1
        for digit in fraction.prefix(18) {
            fractionValue = fractionValue * 10 + UInt128(digit - UInt8(ascii: "0"))
            scale *= 10
        }
        return wholeValue * unit + fractionValue * unit / scale
    }

    /// The shortest text `parse` reads back as the same value (to the nanosecond): whole minutes as
    /// `1m`, from one second up in seconds (`2s`, `1.5s`, `90s`), below a second in milliseconds
    /// (`500ms`, `0.25ms`). Negative durations get a leading `-` (which `parse` rejects).
    package static func format(_ duration: Duration) -> String {
        // The whole value in attoseconds, truncated to nanoseconds. Not `components`: it traps for
        // a duration whose seconds do not fit an Int64 (`.seconds(Int64.max) * 2` is a valid Duration).
        let total = duration.attoseconds / 1_000_000_000
        if total < 0 { return "-" + format(magnitude: UInt128(-total)) }
        return format(magnitude: UInt128(total))
    }

    private static func format(magnitude ns: UInt128) -> String {
        if ns == 0 { return "0s" }
        if ns % 60_000_000_000 == 0 { return "\(ns / 60_000_000_000)m" }
        if ns >= 1_000_000_000 { return decimal(ns, per: 1_000_000_000, fractionDigits: 9) + "s" }
        return decimal(ns, per: 1_000_000, fractionDigits: 6) + "ms"
    }

    /// A maximum in words: `24 hours (24h)`, `36500 days (36500d)` from two days up; else `format`.
    package static func words(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        if seconds >= 2 * 86_400, seconds % 86_400 == 0 { return "\(seconds / 86_400) days (\(seconds / 86_400)d)" }
        if seconds >= 3_600, seconds % 3_600 == 0, duration.components.attoseconds == 0 { return "\(seconds / 3_600) hours (\(seconds / 3_600)h)" }
        return format(duration)
    }

    /// `value / per` written in decimal without trailing zeros (`1500, 1000` -> `1.5`).
    private static func decimal(_ value: UInt128, per: UInt128, fractionDigits: Int) -> String {
        let whole = value / per
        let rest = value % per
        guard rest != 0 else { return "\(whole)" }
        var digits = Array(String(rest).utf8)
        digits.insert(contentsOf: repeatElement(UInt8(ascii: "0"), count: fractionDigits - digits.count), at: 0)
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        return "\(whole)." + String(decoding: digits, as: UTF8.self)
    }
}

/// A duration that `DurationText.parse` rejected. The description names the offending text,
/// what is wrong with it and the forms that are accepted, ready to show to a user.
package struct DurationParseError: Error, CustomStringConvertible, Equatable, Sendable {
    package enum Problem: Sendable, Hashable {
        /// Nothing was given.
        case empty
        /// A leading minus sign.
        case negative
        /// Not a time span (`2x`, `1.`, `1e3`, `2S`, `5 apples`).
        case malformed
        /// Longer than the maximum asked for (`DurationText.maximum` unless another), including
        /// values that overflow.
        case tooLarge(Duration)
    }

    /// The text as given.
    package var text: String
    package var problem: Problem

    package init(text: String, problem: Problem) {
        self.text = text
        self.problem = problem
    }

    package var description: String {
        let why: String
        switch problem {
        case .empty: why = "it is empty"
        case .negative: why = "durations cannot be negative"
        case .malformed: why = "it is not a duration"
        case let .tooLarge(maximum): why = "it is longer than the maximum of \(DurationText.words(maximum))"
        }
        return "invalid duration '\(text)': \(why); use \(DurationText.acceptedForms)"
    }
}
