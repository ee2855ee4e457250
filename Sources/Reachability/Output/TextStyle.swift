// How reachctl's text reads: an admin's words by default (online, not ready, radio off), Apple's
// flag names and the generation only when asked (`--verbose`), and colour for states only where
// a person looks at a terminal. JSON never changes with the style.

/// The choices a text rendering takes from the command line and the terminal.
package struct TextStyle: Hashable, Sendable {
    /// Paint state words with ANSI colours (green good, yellow degraded, red bad).
    public var colour: Bool
    /// Add what a developer or a bug report needs: the SCNetworkReachability flag names and the
    /// generation.
    public var verbose: Bool

    public init(colour: Bool = false, verbose: Bool = false) {
        self.colour = colour
        self.verbose = verbose
    }

    /// No colour, no detail: what a pipe and a test read.
    public static let plain = TextStyle()

    /// How good a state is, which is all its colour says.
    public enum Tone: Sendable {
        /// Online, ready: green.
        case good
        /// Works, but not fully (local only, stalled, a portal, a link up without carrier): yellow.
        case degraded
        /// Offline, down, radio off: red.
        case bad
    }

    /// `word` in the colour of `tone` (SGR 32/33/31, then reset), or as it is without colour.
    public func paint(_ word: String, _ tone: Tone) -> String {
        guard colour, !word.isEmpty else { return word }
        let code = switch tone {
        case .good: "32"
        case .degraded: "33"
        case .bad: "31"
        }
        return "\u{1B}[\(code)m\(word)\u{1B}[0m"
    }

    /// Whether colour suits this output, by the conventions a Linux user expects: never when
    /// asked not to (`--no-color`), when `NO_COLOR` is set to anything but the empty string
    /// (no-color.org), when `TERM` is unset or `dumb`, or when the output is not a terminal.
    public static func wantsColour(refused: Bool, environment: [String: String], isTerminal: Bool) -> Bool {
        if refused || !isTerminal { return false }
        if let noColour = environment["NO_COLOR"], !noColour.isEmpty { return false }
        guard let term = environment["TERM"], !term.isEmpty, term != "dumb" else { return false }
        return true
    }
}

/// The word for an interface's state in text, from its flags, with its tone: `ready` (up, carrier
/// and a usable address), `not ready` (up, but no carrier or no usable address yet: Apple's
/// connectionRequired), `radio off` (its Wi-Fi or cellular radio switched off), `down` (none of
/// these); then what else a person acts on: `stalled`, `metered`, `constrained`.
package func interfaceStateWords(_ flags: ReachabilityFlags) -> [(word: String, tone: TextStyle.Tone)] {
    var words: [(String, TextStyle.Tone)] = []
    if flags.contains(.reachable) {
        words.append(("ready", .good))
    } else if flags.contains(.radioOff) {
        words.append(("radio off", .bad))
    } else if flags.contains(.connectionRequired) {
        words.append(("not ready", .degraded))
    } else {
        words.append(("down", .bad))
    }
    if flags.contains(.stalled) { words.append(("stalled", .degraded)) }
    if flags.contains(.isExpensive) { words.append(("metered", .degraded)) }
    if flags.contains(.isConstrained) { words.append(("constrained", .degraded)) }
    return words
}

/// An interface's state in text: `ready`, `ready, stalled`, `not ready`; in `style`'s colours.
package func renderInterfaceState(_ flags: ReachabilityFlags, _ style: TextStyle) -> String {
    interfaceStateWords(flags).map { style.paint($0.word, $0.tone) }.joined(separator: ", ")
}

/// The tone of the host's answer: good online, degraded online but stalled or the probe finding
/// less than the internet, or local; bad offline.
package func hostTone(_ host: HostStatus) -> TextStyle.Tone {
    switch host.state {
    case .online:
        if host.stalled { return .degraded }
        switch host.connectivity.verdict {
        case .unknown, .full: return .good
        case .none, .portal, .limited: return .degraded
        }
    case .local: return .degraded
    case .offline: return .bad
    }
}

/// `renderSummary` with its first word (the state) in `style`'s colour for the host's tone.
package func renderSummary(_ host: HostStatus, interfaces: [InterfaceStatus], stall: StallEvidence? = nil, style: TextStyle) -> String {
    let summary = renderSummary(host, interfaces: interfaces, stall: stall)
    guard style.colour else { return summary }
    let word = String(summary.prefix { $0.isLetter })
    return style.paint(word, hostTone(host)) + summary.dropFirst(word.count)
}
