/// A configured rule: links whose name matches `pattern` get the properties the rule sets.
///
/// Every property but the pattern is optional; when several rules match one link, the first matching
/// rule that sets a property decides that property (see `Classifier`).
package struct InterfaceRule: Sendable, Hashable {
    /// Shell glob on the interface name: `*` (any run of bytes), `?` (one byte), `[...]` (one byte from a
    /// set, with ranges `a-z` and negation `[!...]` or `[^...]`; a `]` right after the `[` is literal), and
    /// `\` to take the next byte literally. Matching is byte-wise, like the kernel's names.
    public var pattern: String
    public var kind: InterfaceKind?
    public var ignore: Bool?
    public var metered: Bool?
    /// `Constrained=yes`: links the user wants spared (Apple's Low Data Mode), `isConstrained`.
    public var constrained: Bool?
    /// `Probe=no`: the connectivity probe sends nothing through these links (a volume-charged
    /// modem, a network whose operator must not see the probe).
    public var probe: Bool?
    public var priority: Int?

    public init(
        pattern: String, kind: InterfaceKind? = nil, ignore: Bool? = nil, metered: Bool? = nil, probe: Bool? = nil,
        priority: Int? = nil, constrained: Bool? = nil
    ) {
        self.pattern = pattern; self.kind = kind; self.ignore = ignore; self.metered = metered; self.probe = probe
        self.priority = priority; self.constrained = constrained
    }

    /// Interface names are at most `IFNAMSIZ - 1` bytes (`<linux/if.h>`: IFNAMSIZ is 16, with the NUL).
    public static let maximumNameLength = 15
    /// A glob can be longer than the names it matches only through `*` and brackets (`wl[a-z0-9]*` is 11
    /// bytes for one name byte or more); 64 leaves room for that and still rejects nonsense.
    public static let maximumPatternLength = 64

    /// Whether `name` matches the pattern. Never traps: a pattern that fails `validate` still matches
    /// as fnmatch would (an unbalanced `[` or a trailing `\` stands for itself).
    /// Cost is bounded by pattern length times name length (no exponential backtracking).
    public func matches(_ name: String) -> Bool {
        Glob(parsing: pattern).matches(Array(name.utf8))
    }

    /// Checks this rule's pattern; see `validate(pattern:)`.
    public func validate() throws(InterfaceRuleError) {
        try Self.validate(pattern: pattern)
    }

    /// Rejects patterns that are empty, longer than `maximumPatternLength` bytes, malformed (an unbalanced
    /// `[`, a trailing `\`), or that need more than `maximumNameLength` bytes and so can never match a name.
    public static func validate(pattern: String) throws(InterfaceRuleError) {
        let length = pattern.utf8.count
        guard length > 0 else { throw .emptyPattern }
        guard length <= maximumPatternLength else {
            throw .patternTooLong(pattern: pattern, length: length)
        }
        let glob = Glob(parsing: pattern)
        switch glob.problem {
        case .unbalancedBracket?: throw .unbalancedBracket(pattern: pattern)
        case .danglingEscape?: throw .danglingEscape(pattern: pattern)
        case nil: break
        }
        guard glob.minimumLength <= maximumNameLength else {
            throw .patternNeverMatches(pattern: pattern, minimumLength: glob.minimumLength)
        }
    }
}

/// Why an interface pattern was rejected. Every description names the pattern.
package enum InterfaceRuleError: Error, Sendable, Hashable, CustomStringConvertible {
    case emptyPattern
    case patternTooLong(pattern: String, length: Int)
    case unbalancedBracket(pattern: String)
    case danglingEscape(pattern: String)
    case patternNeverMatches(pattern: String, minimumLength: Int)

    /// The offending pattern.
    public var pattern: String {
        switch self {
        case .emptyPattern: ""
        case .patternTooLong(let pattern, _), .unbalancedBracket(let pattern), .danglingEscape(let pattern),
             .patternNeverMatches(let pattern, _):
            pattern
        }
    }

    public var description: String {
        switch self {
        case .emptyPattern:
            "interface pattern \"\" is empty"
        case .patternTooLong(let pattern, let length):
            "interface pattern \"\(pattern)\" is \(length) bytes long; at most \(InterfaceRule.maximumPatternLength) are allowed"
        case .unbalancedBracket(let pattern):
            "interface pattern \"\(pattern)\" has a \"[\" without a closing \"]\""
        case .danglingEscape(let pattern):
            "interface pattern \"\(pattern)\" ends with a \"\\\" that escapes nothing"
        case .patternNeverMatches(let pattern, let minimumLength):
            "interface pattern \"\(pattern)\" needs at least \(minimumLength) bytes but interface names have at most \(InterfaceRule.maximumNameLength)"
        }
    }
}

/// A parsed shell glob. Every token but `*` consumes exactly one byte, which is what lets `matches` run
/// in O(pattern x name) with a single remembered star.
package struct Glob: Hashable, Sendable {
    package enum Token: Hashable, Sendable {
        case byte(UInt8)
        case anyByte
        case anyRun
        case set(negated: Bool, ranges: [ClosedRange<UInt8>])

        package func matches(_ byte: UInt8) -> Bool {
            switch self {
            case .byte(let literal): return literal == byte
            case .anyByte: return true
            case .anyRun: return false  // handled by the matcher, never asked
            case .set(let negated, let ranges): return ranges.contains { $0.contains(byte) } != negated
            }
        }
    }

    package enum Problem: Hashable, Sendable {
        case unbalancedBracket, danglingEscape
    }

    package private(set) var tokens: [Token] = []
    /// The first thing `validate` would reject; parsing carried on as fnmatch does.
    package private(set) var problem: Problem?

    /// Bytes a name needs at least to match.
    package var minimumLength: Int { tokens.count(where: { $0 != .anyRun }) }

    package init(parsing pattern: String) {
        let bytes = Array(pattern.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "*"):
                // Consecutive stars mean one star; collapsing them keeps the matcher's one star honest.
                if tokens.last != .anyRun { tokens.append(.anyRun) }
                index += 1
            case UInt8(ascii: "?"):
                tokens.append(.anyByte)
                index += 1
            case UInt8(ascii: "\\"):
                if index + 1 < bytes.count {
                    tokens.append(.byte(bytes[index + 1]))
                    index += 2
                } else {
                    record(.danglingEscape)
                    tokens.append(.byte(byte))
                    index += 1
                }
            case UInt8(ascii: "["):
                if let (token, next) = Self.parseBracket(bytes, openingAt: index) {
                    tokens.append(token)
                    index = next
                } else {
                    record(.unbalancedBracket)
                    tokens.append(.byte(byte))
                    index += 1
                }
            default:
                tokens.append(.byte(byte))
                index += 1
            }
        }
    }

    private mutating func record(_ found: Problem) {
        if problem == nil { problem = found }
    }

    /// Parses `[...]` starting at `start`; nil when there is no closing `]`.
    private static func parseBracket(_ bytes: [UInt8], openingAt start: Int) -> (Token, next: Int)? {
        var index = start + 1
        var negated = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "!") || bytes[index] == UInt8(ascii: "^") {
            negated = true
            index += 1
        }
        var ranges: [ClosedRange<UInt8>] = []
        var isFirst = true
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "]"), !isFirst {
                return (.set(negated: negated, ranges: ranges), index + 1)
            }
            isFirst = false
            guard let (low, afterLow) = element(bytes, at: index) else { return nil }
            index = afterLow
            // `a-z` is a range; a `-` first or last in the set is literal.
            if index + 1 < bytes.count, bytes[index] == UInt8(ascii: "-"), bytes[index + 1] != UInt8(ascii: "]") {
                guard let (high, afterHigh) = element(bytes, at: index + 1) else { return nil }
                index = afterHigh
                if low <= high { ranges.append(low...high) }  // a reversed range matches nothing, as in fnmatch
            } else {
                ranges.append(low...low)
            }
        }
        return nil
    }

    /// One byte inside brackets, honouring `\`; nil when a `\` ends the pattern.
    private static func element(_ bytes: [UInt8], at index: Int) -> (UInt8, next: Int)? {
        guard bytes[index] == UInt8(ascii: "\\") else { return (bytes[index], index + 1) }
        return index + 1 < bytes.count ? (bytes[index + 1], index + 2) : nil
    }

    /// Greedy match remembering only the last `*`: when a later token fails, that star takes one more
    /// byte and matching resumes after it. Earlier stars never need revisiting because every other token
    /// is exactly one byte wide, so the work is at most tokens x bytes.
    package func matches(_ name: [UInt8]) -> Bool {
        var nameIndex = 0
        var tokenIndex = 0
        var star: (token: Int, name: Int)?
        while nameIndex < name.count {
            if tokenIndex < tokens.count {
                let token = tokens[tokenIndex]
                if token == .anyRun {
                    star = (tokenIndex, nameIndex)
                    tokenIndex += 1
                    continue
                }
                if token.matches(name[nameIndex]) {
                    tokenIndex += 1
                    nameIndex += 1
                    continue
                }
            }
            guard let last = star else { return false }
            star = (last.token, last.name + 1)
            tokenIndex = last.token + 1
            nameIndex = last.name + 1
        }
        while tokenIndex < tokens.count, tokens[tokenIndex] == .anyRun { tokenIndex += 1 }
        return tokenIndex == tokens.count
    }
}
