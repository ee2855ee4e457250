/// A configured rule for one network, whatever link reaches it: `[Network]` in reachd.conf,
/// keyed by the name reachd gives the network (`NetworkID`, as `reachctl status --verbose`
/// shows it). It wins over interface rules and over reachd's own guesses, so "my phone's
/// hotspot is metered" or "the office is not" holds on any adapter, and only there.
package struct NetworkRule: Sendable, Hashable {
    /// The network's name: 16 lowercase hexadecimal digits.
    public var id: String
    public var metered: Bool?
    public var constrained: Bool?
    public var probe: Bool?

    public init(id: String, metered: Bool? = nil, constrained: Bool? = nil, probe: Bool? = nil) {
        self.id = id; self.metered = metered; self.constrained = constrained; self.probe = probe
    }

    /// Whether `text` is a network's name as reachd writes it.
    public static func isValid(id text: String) -> Bool {
        text.utf8.count == 16 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `classification` as this network's rule says, over whatever said otherwise.
    package func apply(to classification: inout Classification) {
        if let metered {
            classification.isMetered = metered
            classification.isUnmeteredByConfiguration = !metered
        }
        if let constrained { classification.isConstrained = constrained }
        if let probe { classification.allowsProbe = probe }
    }
}
