internal import Reachability

/// What a reference asks about, in the words of the library and of reachd (`CheckAddress`,
/// `CheckHost`, `Watch`): an address as text, or a host name. Validated when the reference is
/// created, with the rules every other entry point uses, so an invalid one never gets this far.
enum SCTarget: Hashable, Sendable, CustomStringConvertible {
    /// An address; `0.0.0.0` and `::` ask about general connectivity.
    case address(String)
    /// A host name: answered after DNS, within the configured deadline.
    case name(String)

    var text: String {
        switch self {
        case let .address(text), let .name(text): text
        }
    }

    var isAddress: Bool {
        if case .address = self { return true }
        return false
    }

    var description: String {
        switch self {
        case let .address(text): "address = \(text)"
        case let .name(text): "name = \(text)"
        }
    }

    /// The target for `text` as `SCNetworkReachabilityCreateWithName` gets it: an address when it
    /// reads as one (Apple accepts those too), else a host name. nil when it is neither (an
    /// address the library refuses, such as `127.1`, or a name that cannot exist).
    init?(nodeName text: String) {
        if AddressTarget.looksLikeAddress(text) {
            self.init(address: text)
        } else {
            guard case .success = HostName.validate(text) else { return nil }
            self = .name(text)
        }
    }

    /// An address target; nil when the library refuses the text (a scope naming no interface is
    /// only found out when checked, and then answers as not reachable).
    init?(address text: String) {
        guard case .success = AddressTarget.parse(text) else { return nil }
        self = .address(text)
    }
}

/// A target followed for a reference: its answers go to `deliver`, in the order they were
/// found, the first as soon as it is known.
struct SCFollower: Sendable {
    let id: UInt64
    let target: SCTarget
    let deliver: @Sendable (ReachabilityFlags) -> Void
}

/// The followers of each target, as both backends keep them (one watch or lookup per target).
struct SCFollowers {
    private(set) var byTarget: [SCTarget: [UInt64: SCFollower]] = [:]
    private var targets: [UInt64: SCTarget] = [:]

    var count: Int { targets.count }
    var all: [SCFollower] { byTarget.values.flatMap(\.values) }

    func contains(_ id: UInt64) -> Bool { targets[id] != nil }

    mutating func add(_ follower: SCFollower) {
        targets[follower.id] = follower.target
        byTarget[follower.target, default: [:]][follower.id] = follower
    }

    /// Removes follower `id`: its target, and whether it was the last of it; nil for an unknown id.
    mutating func remove(_ id: UInt64) -> (target: SCTarget, wasLast: Bool)? {
        guard let target = targets.removeValue(forKey: id) else { return nil }
        byTarget[target]?.removeValue(forKey: id)
        guard byTarget[target]?.isEmpty == true else { return (target, false) }
        byTarget.removeValue(forKey: target)
        return (target, true)
    }
}
