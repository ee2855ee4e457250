/// Durations as people type them on the command line (reachctl(1), reachd.conf(5) "SYNTAX"):
/// `500ms`, `2s`, `1m`, `1.5s`, or a bare number of seconds (`30`, `0.25`).
///
/// Grammar: DIGITS [ "." DIGITS ] [ "ms" | "s" | "m" ], nothing else (no sign, no spaces, no
/// exponent). Values are exact to the nanosecond; finer fractions are truncated. Zero is
/// accepted; the largest value is `DurationText.maximum` (24 hours), so a typo such as
/// `3000m` cannot turn a timeout into days.
public enum DurationText {
    /// The largest duration accepted: 24 hours.
    public static let maximum: Duration = .seconds(24 * 60 * 60)

    /// The accepted forms, as error messages and help texts name them.
    public static let acceptedForms = "a number with a unit ms, s or m (500ms, 2s, 1.5s, 1m) or a bare number of seconds"

    public enum Unit: String, Sendable, CaseIterable {
        case milliseconds = "ms"
        case seconds = "s"
        case minutes = "m"

        var nanoseconds: UInt64 {
            switch self {
            case .milliseconds: 1_000_000
            case .seconds: 1_000_000_000
            case .minutes: 60_000_000_000
            }
        }
    }

    /// Parses `text`; throws a `DurationParseError` naming the text and the accepted forms.
    public static func parse(_ text: String) throws(DurationParseError) -> Duration {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw DurationParseError(text: text, problem: .empty) }
        if bytes[0] == UInt8(ascii: "-") { throw DurationParseError(text: text, problem: .negative) }

        var i = 0
        func digits() -> ArraySlice<UInt8> {
            let start = i
            while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
            return bytes[start..<i]
        }
        let whole = digits()
        guard !whole.isEmpty else { throw DurationParseError(text: text, problem: .malformed) }
        var fraction: ArraySlice<UInt8> = []
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            fraction = digits()
            guard !fraction.isEmpty else { throw DurationParseError(text: text, problem: .malformed) }
        }
        let suffix = String(decoding: bytes[i...], as: UTF8.self)
        let unit: Unit
        if suffix.isEmpty {
            unit = .seconds
        } else if let named = Unit(rawValue: suffix) {
            unit = named
        } else {
            throw DurationParseError(text: text, problem: .malformed)
        }

        // Whole part: any value past 10^20 is far beyond the maximum; stopping there keeps the
        // arithmetic below inside UInt128 (10^20 * 6*10^10 < 2^128).
        var wholeValue: UInt128 = 0
        for digit in whole {
            wholeValue = wholeValue * 10 + UInt128(digit - UInt8(ascii: "0"))
            if wholeValue > 100_000_000_000_000_000_000 {
                throw DurationParseError(text: text, problem: .tooLarge)
            }
        }
        // Fraction: 18 digits are finer than a nanosecond of even a minute (6*10^-8 ns), so the
        // rest cannot change the truncated result.
        var fractionValue: UInt128 = 0
        var scale: UInt128 = 1
        for digit in fraction.prefix(18) {
            fractionValue = fractionValue * 10 + UInt128(digit - UInt8(ascii: "0"))
            scale *= 10
        }
        let unitNanoseconds = UInt128(unit.nanoseconds)
        let total = wholeValue * unitNanoseconds + fractionValue * unitNanoseconds / scale
        guard total <= UInt128(maximum.attoseconds / 1_000_000_000) else {
            throw DurationParseError(text: text, problem: .tooLarge)
        }
        return .nanoseconds(Int64(total))
    }

    /// The shortest text `parse` reads back as the same value (to the nanosecond): whole minutes as
    /// `1m`, from one second up in seconds (`2s`, `1.5s`, `90s`), below a second in milliseconds
    /// (`500ms`, `0.25ms`). Negative durations get a leading `-` (which `parse` rejects).
    public static func format(_ duration: Duration) -> String {
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
public struct DurationParseError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Problem: Sendable, Hashable {
        /// Nothing was given.
        case empty
        /// A leading minus sign.
        case negative
        /// Not a number with an optional unit (`2x`, `1.`, `1e3`, ` 2s`, `2 s`).
        case malformed
        /// Longer than `DurationText.maximum`, including values that overflow.
        case tooLarge
    }

    /// The text as given.
    public var text: String
    public var problem: Problem

    public init(text: String, problem: Problem) {
        self.text = text
        self.problem = problem
    }

    public var description: String {
        let why: String
        switch problem {
        case .empty: why = "it is empty"
        case .negative: why = "durations cannot be negative"
        case .malformed: why = "it is not a duration"
        case .tooLarge: why = "it is longer than the maximum of 24 hours (1440m)"
        }
        return "invalid duration '\(text)': \(why); use \(DurationText.acceptedForms)"
    }
}
