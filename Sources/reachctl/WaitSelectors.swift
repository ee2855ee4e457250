import ArgumentParser
import Reachability

/// `wait --interface IF[:STATE]`, with systemd-networkd-wait-online's meaning: wait for these
/// links, ignoring every other, each at least in STATE. The states are what reachd knows of a
/// link, under networkd's names where one means the same:
///   up (networkd: no-carrier)  administratively up, carrier or not
///   ready (networkd: degraded) up, carrier and a usable address (link-local counts)
///   routable                   ready, with a routable address (not link-local)
/// networkd's other states (carrier, dormant, enslaved, ...) are refused by name: reachd learns a
/// carrier only together with an address, so it cannot tell them apart honestly.
struct InterfaceRequirement: Hashable, Sendable {
    enum State: String, CaseIterable, Sendable {
        case up, ready, routable

        /// networkd's operational states that mean the same as one of these.
        static let networkdNames: [String: State] = ["no-carrier": .up, "degraded": .ready, "routable": .routable]
    }

    var name: String
    var state: State

    init(name: String, state: State) {
        self.name = name
        self.state = state
    }

    /// Reads `IF` or `IF:STATE`; the error names the value and the accepted states.
    init(parsing text: String) throws {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard let name = parts.first, !name.isEmpty, name.count < 16, !name.contains("/"), !name.contains(where: \.isWhitespace) else {
            throw ValidationError("--interface '\(text)': give an interface name (at most 15 characters, no '/' or space), optionally :STATE.")
        }
        let accepted = "up, ready, routable, or networkd's no-carrier, degraded"
        switch parts.count {
        case 1: state = .ready
        case 2:
            guard let state = State(rawValue: parts[1]) ?? State.networkdNames[parts[1]] else {
                throw ValidationError("--interface '\(text)': unknown state '\(parts[1])'; use \(accepted).")
            }
            self.state = state
        default:
            throw ValidationError("--interface '\(text)': a maximum state (IF:MIN:MAX) is not supported; give IF or IF:STATE with STATE \(accepted).")
        }
        self.name = name
    }

    /// The link as it is in `snapshot`, or nil when reachd lists no link of that name (absent, or
    /// ignored by configuration).
    func interface(in snapshot: ReachabilitySnapshot) -> InterfaceStatus? {
        snapshot.interfaces.first { $0.name == name }
    }

    /// Whether the link is in this state or better, with an address of each family asked for
    /// (`-4`, `-6`; routable: a routable one; no family asked and routable: either family).
    func isMet(in snapshot: ReachabilitySnapshot, ipv4: Bool, ipv6: Bool) -> Bool {
        guard let interface = interface(in: snapshot) else { return false }
        switch state {
        case .up: guard interface.flags.contains(.reachable) || interface.flags.contains(.connectionRequired) else { return false }
        case .ready, .routable: guard interface.flags.contains(.reachable) else { return false }
        }
        func has(_ family: AddressFamily) -> Bool {
            interface.addresses.contains { prefix in
                prefix.address.family == family && !prefix.address.isLoopback && (state != .routable || !prefix.address.isLinkLocal)
            }
        }
        if state == .routable, !ipv4, !ipv6 { return has(.ipv4) || has(.ipv6) }
        return (!ipv4 || has(.ipv4)) && (!ipv6 || has(.ipv6))
    }

    /// `eth0 ready`, for the timeout message's goal.
    var goal: String { "\(name) \(state.rawValue)" }

    /// What the link is instead: `eth0 is not ready`, `eth0 is missing (or ignored by
    /// configuration)`, `lo is ready, without a routable address`, `eth0 is ready, without an IPv6 address`.
    func seen(in snapshot: ReachabilitySnapshot?, ipv4: Bool, ipv6: Bool) -> String {
        guard let snapshot else { return "\(name): state unknown" }
        guard let interface = interface(in: snapshot) else { return "\(name) is missing (or ignored by configuration)" }
        let words = "\(name) is " + renderInterfaceState(interface.flags, .plain)
        // In the state asked for by its flags: what fails is an address.
        let bare = InterfaceRequirement(name: name, state: state == .routable ? .ready : state)
        guard bare.isMet(in: snapshot, ipv4: false, ipv6: false) else { return words }
        let families = [ipv4 ? "IPv4" : nil, ipv6 ? "IPv6" : nil].compactMap { $0 }.joined(separator: " and ")
        let what = (state == .routable ? "a routable " : "an ") + (families.isEmpty ? "" : families + " ") + "address"
        return words + ", without " + what
    }
}

/// Reads one `--interface` value (ArgumentParser shows the thrown message).
@Sendable func parseInterfaceRequirement(_ text: String) throws -> InterfaceRequirement {
    try InterfaceRequirement(parsing: text)
}
