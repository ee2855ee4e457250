import ReachabilitySystem  // String.inertExcerpt

/// Checks host names before they reach DNS, so a typo is reported as what it is
/// (`invalidTarget`) instead of a slow NXDOMAIN.
///
/// The rules are those of RFC 1123 host names, with `_` also allowed because real zones use it
/// (`_dmarc`, SRV-style names). IP literals are not host names: callers recognise them first.
package enum HostName {
    /// 253 characters is the longest name that fits the 255-byte wire form (RFC 1035 3.1).
    public static let maximumLength = 253
    /// RFC 1035 2.3.4.
    public static let maximumLabelLength = 63

    /// Returns `text` unchanged when it is a valid host name (one trailing dot, the "fully
    /// qualified, skip the search list" mark, is allowed), or what is wrong with it.
    public static func validate(_ text: String) -> Result<String, HostNameError> {
        if text.isEmpty { return .failure(HostNameError(name: text, problem: .empty)) }
        for (offset, character) in text.enumerated() where !isAllowed(character) {
            return .failure(HostNameError(name: text, problem: .invalidCharacter(character, position: offset + 1)))
        }
        let qualified = text.hasSuffix(".") && text != "."
        let body = qualified ? String(text.dropLast()) : text
        if body.utf8.count > maximumLength {
            return .failure(HostNameError(name: text, problem: .tooLong(body.utf8.count)))
        }
        if isNumericForm(body) { return .failure(HostNameError(name: text, problem: .numericAddressForm)) }
        // A dotted quad passes: callers take it for the address it is before asking here.
        if let label = numericTopLabel(body), IPAddress(body) == nil {
            return .failure(HostNameError(name: text, problem: .numericTopLevelLabel(label)))
        }
        for label in body.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { return .failure(HostNameError(name: text, problem: .emptyLabel)) }
            if label.utf8.count > maximumLabelLength {
                return .failure(HostNameError(name: text, problem: .labelTooLong(String(label))))
            }
            if label.hasPrefix("-") { return .failure(HostNameError(name: text, problem: .hyphenAtStart(String(label)))) }
            if label.hasSuffix("-") { return .failure(HostNameError(name: text, problem: .hyphenAtEnd(String(label)))) }
        }
        return .success(text)
    }

    /// Whether `text` is one of the numeric IPv4 forms inet_aton accepts (`127.1`, `2130706433`,
    /// `0x7f.0.0.1`, `010.0.0.1`): up to four labels, each decimal, octal or 0x-hexadecimal. No
    /// top-level domain is numeric, so such a text is never a host name; it must never go to DNS
    /// either. One rule everywhere (CheckAddress, CheckHost, Watch, reachctl, in-process or
    /// through reachd): refused, saying what to write. Not read as ping does, because the octal
    /// reading of `010.0.0.1` (8.0.0.1) surprises more people than it serves.
    public static func isNumericForm(_ text: String) -> Bool {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false).map { $0.lowercased() }
        guard (1...4).contains(labels.count) else { return false }
        var values: [UInt64] = []
        for label in labels {
            // Digits only: Swift's integer parsing also takes a leading '+' or '-', which inet_aton
            // does not (`-0`, `+1`, `0x+f.1` are no address, and must not be called one).
            let digits = label.hasPrefix("0x") ? label.dropFirst(2) : Substring(label)
            guard digits.utf8.allSatisfy({ UInt8(ascii: "0") <= $0 && $0 <= UInt8(ascii: "9") || UInt8(ascii: "a") <= $0 && $0 <= UInt8(ascii: "f") }) else {
                return false
            }
            let value: UInt64? =
                if label.hasPrefix("0x") { label.count > 2 ? UInt64(label.dropFirst(2), radix: 16) : nil }
                else if label.count > 1, label.hasPrefix("0") { UInt64(label, radix: 8) }
                else { UInt64(label) }
            guard let value else { return false }
            values.append(value)
        }
        // inet_aton: every part but the last is one byte; the last fills the bytes left.
        guard values.dropLast().allSatisfy({ $0 <= 255 }), values[values.count - 1] < UInt64(1) << (32 - 8 * (values.count - 1)) else {
            return false
        }
        // Four plain decimal parts are the ordinary dotted quad, not one of these forms.
        let plain = labels.allSatisfy { !($0.count > 1 && $0.hasPrefix("0")) && !$0.hasPrefix("0x") }
        return !(values.count == 4 && plain)
    }

    /// The last label of `text` (one trailing dot ignored) when it is all decimal digits: no
    /// top-level domain is (RFC 1123 2.1, RFC 3696 2), so `host.123` or `192.0.2.999` is a
    /// mistyped address or name, never something to ask DNS about.
    public static func numericTopLabel(_ text: String) -> String? {
        let body = text.hasSuffix(".") ? text.dropLast() : Substring(text)
        guard let label = body.split(separator: ".", omittingEmptySubsequences: false).last,
            !label.isEmpty, label.allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        return String(label)
    }

    /// ASCII letters, digits, '-', '_' and the '.' between labels. Internationalised names must
    /// arrive in their ASCII (punycode) form: c-ares does no IDN conversion.
    private static func isAllowed(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        switch ascii {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }
}

/// Why a text is not a host name, naming the offending label or character.
package struct HostNameError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Problem: Hashable, Sendable {
        case empty
        /// `position` counts characters from 1.
        case invalidCharacter(Character, position: Int)
        /// The length without the trailing dot.
        case tooLong(Int)
        case emptyLabel
        case labelTooLong(String)
        case hyphenAtStart(String)
        case hyphenAtEnd(String)
        /// A numeric IPv4 form inet_aton accepts (`0x7f.0.0.1`): an address, not a name.
        case numericAddressForm
        /// The last label is all digits (`host.123`): no top-level domain is.
        case numericTopLevelLabel(String)
    }

    public var name: String
    public var problem: Problem

    public init(name: String, problem: Problem) {
        self.name = name
        self.problem = problem
    }

    public var description: String {
        switch problem {
        case .empty:
            return "invalid host name: empty"
        case .invalidCharacter(let character, let position):
            return "invalid character \(Self.quoted(character)) at position \(position) in \(name.inertExcerpt())"
        case .tooLong(let length):
            return "invalid host name \(name.inertExcerpt()): \(length) characters, at most \(HostName.maximumLength)"
        case .emptyLabel:
            return "invalid host name \(name.inertExcerpt()): empty label"
        case .labelTooLong(let label):
            return "invalid host name \(name.inertExcerpt()): label \(label.inertExcerpt()) is \(label.utf8.count) characters, at most "
                + "\(HostName.maximumLabelLength)"
        case .hyphenAtStart(let label):
            return "invalid host name \(name.inertExcerpt()): label \(label.inertExcerpt()) begins with '-'"
        case .numericAddressForm:
            return "\(name.inertExcerpt()) is a hexadecimal, octal, short or single-number IPv4 form (as inet_aton reads it), "
                + "not a host name, and reachd does not guess at it: write the four decimal parts, as in 127.0.0.1"
        case .numericTopLevelLabel(let label):
            return "\(name.inertExcerpt()) is neither an address nor a host name: its last label \(label.inertExcerpt()) is all digits, and no "
                + "top-level domain is; write an address as 192.0.2.1 or 2001:db8::1"
        case .hyphenAtEnd(let label):
            return "invalid host name \(name.inertExcerpt()): label \(label.inertExcerpt()) ends with '-'"
        }
    }

    /// A character as a reader can see it: control characters and invisible ones by code point.
    private static func quoted(_ character: Character) -> String {
        let scalars = character.unicodeScalars
        if scalars.count == 1, let scalar = scalars.first, scalar.value >= 0x20, scalar.value != 0x7F {
            return "'\(character)'"
        }
        return scalars.map { "U+" + hex($0.value) }.joined(separator: " ")
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
