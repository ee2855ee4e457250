/// What kind of network an interface is, as far as reachability cares.
public enum InterfaceKind: String, Sendable, Hashable, CaseIterable {
    case loopback, wired, wifi, cellular, vpn, bridge, virtual, other

    /// `.wired` by NWInterface.InterfaceType's name for it, so that code written against
    /// NWPathMonitor (`requiredInterfaceType: .wiredEthernet`, `case .wiredEthernet:`) ports by
    /// renaming the monitor's type alone.
    public static let wiredEthernet = InterfaceKind.wired

    /// Preference when several links could carry traffic: lower is preferred.
    /// NetworkManager's default route metrics are the reference (VPN 50, Ethernet 100,
    /// Wi-Fi 600, WWAN 700); everything else comes after.
    public var defaultPriority: Int {
        switch self {
        case .vpn: 50
        case .wired: 100
        case .wifi: 600
        case .cellular: 700
        case .bridge, .virtual, .other: 800
        case .loopback: 1000
        }
    }

    /// The flags that describe an egress link of this kind.
    public var flags: ReachabilityFlags {
        switch self {
        case .wired: .isWired
        case .wifi: .isWiFi
        case .cellular: [.isWWAN, .isExpensive]
        case .vpn: [.isVPN, .transientConnection]
        case .loopback, .bridge, .virtual, .other: []
        }
    }
}

/// Why a target is not reachable.
public enum Reason: String, Sendable, Hashable, CaseIterable {
    case noRoute, linkDown, noAddress, dnsTimeout, dnsNotFound, dnsFailure, invalidTarget
    /// The kernel refuses the path: an unreachable, prohibit or blackhole route or rule (a VPN
    /// kill switch with its tunnel down, or a user's uidrange rule into such a table).
    case policyBlocked
    /// The only links that could carry traffic are Wi-Fi or cellular links whose radio is
    /// switched off (rfkill). The host's path facts only.
    case radioOff
    /// The link is up with an address and a route, but the kernel's own neighbour resolution
    /// (ARP, IPv6 ND) gave up on every gateway of that route: the neighbour entry is FAILED,
    /// and the fresh resolutions the core had the kernel make failed too (`GatewayNeighbour`).
    case gatewayUnreachable
    /// The host's own firewall drops or rejects the packet before it leaves: a rule of its
    /// nftables output or postrouting hook, as `reachctl check --port` reads them as root.
    case firewallRefused
}

/// The host's overall connectivity, as the `State` property names it.
public enum HostState: String, Sendable, Hashable, CaseIterable {
    /// The default route the kernel would use right now leaves through a ready link.
    case online
    /// Not online, but a non-loopback link is ready with an address.
    case local
    /// Neither.
    case offline
}
