/// Why a value was refused; the message names the value.
package struct ValueProblem: Error {
    package var message: String

    package static func duration(_ text: String, in range: ClosedRange<Duration>) throws(ValueProblem) -> Duration {
        let value: Duration
        do {
            value = try DurationText.parse(text)
        } catch {
            throw ValueProblem(message: error.description)
        }
        guard range.contains(value) else {
            throw ValueProblem(message: "duration '\(text)' is out of range: must be from "
                + "\(DurationText.format(range.lowerBound)) to \(DurationText.format(range.upperBound))")
        }
        return value
    }

    /// Decimal digits only: no sign, no spaces, no hexadecimal.
    package static func integer(_ text: String, in range: ClosedRange<Int>) throws(ValueProblem) -> Int {
        let expected = "a whole number from \(range.lowerBound) to \(range.upperBound)"
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            throw ValueProblem(message: "invalid number '\(text)'; expected \(expected)")
        }
        // Digits only, so nil means it overflowed Int: far out of any range.
        guard let value = Int(text), range.contains(value) else {
            throw ValueProblem(message: "number \(text) is out of range; expected \(expected)")
        }
        return value
    }

    /// A whole number in `range`, or `auto` (any case) for nil: a default derived from other keys.
    package static func integerOrAuto(_ text: String, in range: ClosedRange<Int>) throws(ValueProblem) -> Int? {
        if text.lowercased() == "auto" { return nil }
        do {
            return try integer(text, in: range)
        } catch {
            throw ValueProblem(message: error.message + ", or auto")
        }
    }

    /// systemd's spellings, without regard to case.
    package static func boolean(_ text: String) throws(ValueProblem) -> Bool {
        switch text.lowercased() {
        case "yes", "true", "on", "1": return true
        case "no", "false", "off", "0": return false
        default: throw ValueProblem(message: "invalid boolean '\(text)'; expected yes, no, true, false, on, off, 1 or 0")
        }
    }

    /// What `reachctl wait --target` takes: an address, or a host name (refused as it would refuse it).
    package static func target(_ text: String) throws(ValueProblem) -> String {
        if AddressTarget.looksLikeAddress(text) {
            if case let .failure(error) = AddressTarget.parse(text) { throw ValueProblem(message: error.description) }
        } else if case let .failure(error) = HostName.validate(text) {
            // HostNameError cuts a long name short for a caller's log; a configuration error
            // names the value whole, as every other key's does.
            if case let .tooLong(length) = error.problem {
                throw ValueProblem(message: "invalid host name '\(text)': \(length) characters, at most \(HostName.maximumLength)")
            }
            throw ValueProblem(message: error.description)
        }
        return text
    }

    package static func waitKind(_ text: String) throws(ValueProblem) -> InterfaceKind {
        let names = Configuration.waitOnlineKinds.map(\.rawValue).joined(separator: ", ")
        guard let kind = InterfaceKind(rawValue: text.lowercased()), Configuration.waitOnlineKinds.contains(kind) else {
            throw ValueProblem(message: "'\(text)' is not a kind of link that carries an uplink; expected one of \(names)")
        }
        return kind
    }

    package static func kind(_ text: String) throws(ValueProblem) -> InterfaceKind {
        guard let kind = InterfaceKind(rawValue: text.lowercased()) else {
            let names = InterfaceKind.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValueProblem(message: "unknown interface kind '\(text)'; expected one of \(names)")
        }
        return kind
    }
}

/// Near misses for unknown names: a typo gets a "did you mean".
package enum Suggestion {
    /// The candidate that equals `name` but for case, else the first within edit distance 2 (ignoring
    /// case); nil when none is that close.
    package static func nearest(to name: String, among candidates: [String]) -> String? {
        let lowered = Array(name.lowercased().unicodeScalars)
        // Long garbage is never a typo, and skipping it bounds the cost of the distance.
        guard lowered.count <= 64 else { return nil }
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(lowered, Array(candidate.lowercased().unicodeScalars))
            if distance <= 2, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// Levenshtein distance: insertions, deletions and substitutions each cost one.
    package static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(substitution, previous[j] + 1, current[j - 1] + 1)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
