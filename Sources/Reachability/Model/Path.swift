import ReachabilitySystem  // String.inertExcerpt

/// What Apple's NWPath tells, for the host's internet path as one monitor sees it: whether it can
/// carry traffic, over which interfaces of which kinds, what it costs, which families and
/// gateways it has, and why not when it cannot. Derived from one snapshot (`init(host:...)`), the
/// interfaces restricted to the kinds the monitor asked for; equal values are the same path.
public struct Path: Hashable, Sendable {
    /// NWPath.Status.
    public enum Status: String, Hashable, Sendable {
        /// Traffic can leave through an interface the monitor counts.
        case satisfied
        /// It cannot; `unsatisfiedReason` says why.
        case unsatisfied
        /// Not available now, but a connection could bring it up (on-demand links). Linux has no
        /// traffic-triggered links the library knows of, so nothing produces it yet: it comes only
        /// from the reserved `connectionOnDemand`/`connectionOnTraffic` flags.
        case requiresConnection
    }

    /// One interface the path can use (NWInterface): name, kernel index and kind.
    public struct Interface: Hashable, Sendable {
        public var name: String
        public var index: Int32
        public var kind: InterfaceKind
        /// `kind` by NWInterface's name for it, so that `interface.type == .wiredEthernet` ports
        /// as written.
        public var type: InterfaceKind { kind }

        public init(name: String, index: Int32, kind: InterfaceKind) {
            self.name = name
            self.index = index
            self.kind = kind
        }
    }

    public var status: Status
    /// The path in the host's words (`State`): online when satisfied; unsatisfied, local when a
    /// counted link is ready with an address, else offline. Unrestricted, the host's state.
    public var state: HostState
    /// The path's flags (`Flags`): the host's when the path goes through the host's primary
    /// interface, else those of its first interface; unsatisfied, `connectionRequired` when a
    /// counted link is down (none otherwise). Unrestricted, the host's flags.
    public var flags: ReachabilityFlags
    /// The interface the path uses first (`PrimaryInterface`); empty when unsatisfied.
    /// Unrestricted, the host's primary interface.
    public var primaryInterface: String
    /// The interfaces that carry a default route and are ready, restricted to the counted kinds,
    /// in the host's order of preference (the one the path uses first).
    public var availableInterfaces: [Interface]
    /// The path's first interface is expensive: cellular, or `Metered=yes` in reachd.conf.
    public var isExpensive: Bool
    /// Low Data Mode: the path leaves through a link configured `Constrained=yes` in reachd.conf
    /// (unrestricted, the host's answer, so a tunnel over such a link is constrained too).
    public var isConstrained: Bool
    public var supportsIPv4: Bool
    public var supportsIPv6: Bool
    /// A configured nameserver is routable (`PathFacts.supportsDNS`); false when the path is not
    /// the host's own, as for `gateways`.
    public var supportsDNS: Bool
    /// The next hops of the path, IPv4's first; empty when the path is not the host's own (a
    /// restriction left only other interfaces) since the library knows gateways of that one only.
    public var gateways: [IPAddress]
    /// Why the path is unsatisfied; nil when it is satisfied.
    public var unsatisfiedReason: Reason?
    /// The NAT64 prefix a router announced for this path (PREF64, RFC 8781), where a program
    /// synthesizes IPv6 addresses for IPv4-only destinations; nil when none was, and when the
    /// path is not the host's own (the library knows the host path's only).
    public var nat64Prefix: IPPrefix?

    /// `state` defaults to online when satisfied, else offline; `primaryInterface` to the first
    /// available interface.
    public init(
        status: Status, state: HostState? = nil, flags: ReachabilityFlags = [], primaryInterface: String? = nil,
        availableInterfaces: [Interface] = [], isExpensive: Bool = false, isConstrained: Bool = false,
        supportsIPv4: Bool = false, supportsIPv6: Bool = false, gateways: [IPAddress] = [], unsatisfiedReason: Reason? = nil,
        supportsDNS: Bool = false, nat64Prefix: IPPrefix? = nil
    ) {
        self.supportsDNS = supportsDNS
        self.nat64Prefix = nat64Prefix
        self.status = status
        self.state = state ?? (status == .satisfied ? .online : .offline)
        self.flags = flags
        self.primaryInterface = primaryInterface ?? availableInterfaces.first?.name ?? ""
        self.availableInterfaces = availableInterfaces
        self.isExpensive = isExpensive
        self.isConstrained = isConstrained
        self.supportsIPv4 = supportsIPv4
        self.supportsIPv6 = supportsIPv6
        self.gateways = gateways
        self.unsatisfiedReason = unsatisfiedReason
    }

    /// NWPath.usesInterfaceType: the path's interfaces include one of `kind`.
    public func usesInterfaceType(_ kind: InterfaceKind) -> Bool { availableInterfaces.contains { $0.kind == kind } }
}

extension Path {
    /// Which interface kinds a monitor counts (NWPathMonitor's `requiredInterfaceType` and
    /// `prohibitedInterfaceTypes`): the path is judged as if the others were not there.
    public struct Restriction: Hashable, Sendable {
        public var requiredInterfaceType: InterfaceKind?
        public var prohibitedInterfaceTypes: Set<InterfaceKind>

        public init(requiredInterfaceType: InterfaceKind? = nil, prohibitedInterfaceTypes: Set<InterfaceKind> = []) {
            self.requiredInterfaceType = requiredInterfaceType
            self.prohibitedInterfaceTypes = prohibitedInterfaceTypes
        }

        public var isEmpty: Bool { requiredInterfaceType == nil && prohibitedInterfaceTypes.isEmpty }

        public func counts(_ kind: InterfaceKind) -> Bool {
            (requiredInterfaceType.map { $0 == kind } ?? true) && !prohibitedInterfaceTypes.contains(kind)
        }

        /// The prohibited kinds in `InterfaceKind`'s declaration order, as D-Bus and JSON list them.
        public var prohibitedInOrder: [InterfaceKind] { InterfaceKind.allCases.filter(prohibitedInterfaceTypes.contains) }

        /// A restriction from kind names (`wired`, `wifi`, ... as `InterfaceKind` spells them), as
        /// WatchPath's options and reachctl's `--kind`/`--not-kind` give them; the error names the
        /// unknown one and the known ones. A kind both required and prohibited is refused naming
        /// both: no interface could ever count, so the path could never be satisfied, and the caller
        /// surely meant something else. A kind prohibited twice is the same restriction.
        public static func parse(required: String?, prohibited: [String]) -> Result<Restriction, RestrictionError> {
            func kind(_ name: String) -> Result<InterfaceKind, RestrictionError> {
                InterfaceKind(rawValue: name).map { .success($0) } ?? .failure(.unknownKind(name))
            }
            var restriction = Restriction()
            if let required {
                switch kind(required) {
                case let .success(kind): restriction.requiredInterfaceType = kind
                case let .failure(error): return .failure(error)
                }
            }
            for name in prohibited {
                switch kind(name) {
                case let .success(kind): restriction.prohibitedInterfaceTypes.insert(kind)
                case let .failure(error): return .failure(error)
                }
            }
            if let required = restriction.requiredInterfaceType, restriction.prohibitedInterfaceTypes.contains(required) {
                return .failure(.requiredKindProhibited(required))
            }
            return .success(restriction)
        }
    }

    /// Why kind names make no restriction: a name `InterfaceKind` does not know, or the one
    /// required kind also prohibited.
    public enum RestrictionError: Error, Hashable, Sendable, CustomStringConvertible {
        case unknownKind(String)
        case requiredKindProhibited(InterfaceKind)

        public var description: String {
            switch self {
            case let .unknownKind(name):
                "unknown interface kind \(name.inertExcerpt()) (known: \(InterfaceKind.allCases.map(\.rawValue).joined(separator: ", ")))"
            case let .requiredKindProhibited(kind):
                "kind '\(kind.rawValue)' is both required (RequiredKind, --kind) and prohibited (ProhibitedKinds, --not-kind): "
                    + "no interface could count, so the path could never be satisfied"
            }
        }
    }

    /// The path `restriction` sees in the host's answer and its interfaces (by index).
    /// Unrestricted, it is the host's answer itself: satisfied exactly when the host is online,
    /// with its path facts. Restricted, it is satisfied when a counted interface is available and
    /// no kill switch (`policyBlocked`) stops everything; its facts are the host's when the host's
    /// primary interface is counted, else read from the first counted interface's addresses; its
    /// reason is `radioOff` when a counted link has its radio switched off, else `linkDown` when
    /// a counted link with an address is not ready, else `noRoute`.
    public init(host: HostStatus, interfaces: [Int32: InterfaceStatus], restriction: Restriction = Restriction()) {
        let byName = Dictionary(interfaces.values.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let available = host.availableInterfaces.compactMap { byName[$0] }.filter { restriction.counts($0.kind) }
        // Counted links configured for traffic beyond themselves (a veth's bare peer is not).
        let counted = interfaces.values.filter {
            $0.kind != .loopback && restriction.counts($0.kind) && $0.addresses.contains { !$0.address.isLinkLocal }
        }
        let satisfied = restriction.isEmpty
            ? host.state == .online
            : !available.isEmpty && host.pathFacts.reason != .policyBlocked
        guard satisfied, let first = available.first else {
            let onDemand = !host.flags.isDisjoint(with: [.connectionOnDemand, .connectionOnTraffic])
            let reason: Reason =
                if restriction.isEmpty || host.pathFacts.reason == .policyBlocked { host.pathFacts.reason ?? .noRoute }
                else if interfaces.values.contains(where: { restriction.counts($0.kind) && $0.flags.contains(.radioOff) }) { .radioOff }
                else if counted.contains(where: { $0.flags.contains(.connectionRequired) }) { .linkDown }
                else { .noRoute }
            if restriction.isEmpty {
                self.init(
                    status: onDemand ? .requiresConnection : .unsatisfied, state: host.state, flags: host.flags,
                    primaryInterface: host.primaryInterface, unsatisfiedReason: reason)
            } else {
                let ready = counted.contains { $0.flags.contains(.reachable) }
                self.init(
                    status: onDemand ? .requiresConnection : .unsatisfied, state: ready ? .local : .offline,
                    flags: reason == .linkDown ? [.connectionRequired] : [], primaryInterface: "", unsatisfiedReason: reason)
            }
            return
        }
        let throughPrimary = restriction.isEmpty || first.name == host.primaryInterface
        let facts: PathFacts
        let isHostPath = restriction.isEmpty || available.contains(where: { $0.name == host.primaryInterface })
        if isHostPath {
            facts = host.pathFacts
        } else {
            func global(_ family: AddressFamily) -> Bool {
                first.addresses.contains { $0.address.family == family && !$0.address.isLinkLocal }
            }
            facts = PathFacts(supportsIPv4: global(.ipv4), supportsIPv6: global(.ipv6))
        }
        self.init(
            status: .satisfied, state: .online, flags: throughPrimary ? host.flags : first.flags,
            primaryInterface: restriction.isEmpty ? host.primaryInterface : first.name,
            availableInterfaces: available.map { Interface(name: $0.name, index: $0.index, kind: $0.kind) },
            isExpensive: first.flags.contains(.isExpensive),
            isConstrained: (throughPrimary ? host.flags : first.flags).contains(.isConstrained),
            supportsIPv4: facts.supportsIPv4, supportsIPv6: facts.supportsIPv6, gateways: facts.gateways,
            supportsDNS: facts.supportsDNS, nat64Prefix: isHostPath ? host.nat64Prefix?.prefix : nil)
    }
}

extension Path {
    /// The path `restriction` sees in `snapshot`: the one derivation above, for reachd's
    /// WatchPath objects, `PathMonitor` and reachctl alike.
    public init(snapshot: ReachabilitySnapshot, restriction: Restriction = Restriction()) {
        let interfaces = Dictionary(snapshot.interfaces.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        self.init(host: snapshot.host, interfaces: interfaces, restriction: restriction)
    }
}

/// Another name for the path a `PathMonitor` yields, after Network.framework's `NWPath` (the
/// docs/swift.md, "NWPathMonitor: `PathMonitor`").
package typealias NetworkPath = Path
