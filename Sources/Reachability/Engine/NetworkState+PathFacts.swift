/// What Apple's NWPath tells about the host's internet path, beside flags and kinds: which
/// families it carries, through which gateways, and why it does not when the host is not
/// online. Computed from the same facts as the host's answer (`deriveHost`), so both agree.
public struct PathFacts: Hashable, Sendable {
    /// A usable default path of that family leaves through a ready link that has a global
    /// address of that family.
    public var supportsIPv4: Bool
    public var supportsIPv6: Bool
    /// The next hops of the internet paths that can carry traffic, IPv4's first.
    public var gateways: [IPAddress]
    /// Why the host is not online; nil when it is.
    public var reason: Reason?

    public init(supportsIPv4: Bool = false, supportsIPv6: Bool = false, gateways: [IPAddress] = [], reason: Reason? = nil) {
        self.supportsIPv4 = supportsIPv4
        self.supportsIPv6 = supportsIPv6
        self.gateways = gateways
        self.reason = reason
    }
}

extension NetworkState {
    /// The host's path facts now.
    public var pathFacts: PathFacts {
        var facts = PathFacts()
        var reasons: [Reason] = []
        for family in AddressFamily.allCases {
            guard let route = internetRoute(family: family) else { continue }
            if Self.blockingTypes.contains(route.type) {
                reasons.append(.policyBlocked)
                continue
            }
            let path = evaluate(route: route, family: family)
            guard path.isReachable else {
                if let reason = path.reason { reasons.append(reason) }
                continue
            }
            if let gateway = path.gateway, !facts.gateways.contains(gateway) { facts.gateways.append(gateway) }
            // The egress link's own global address: a source borrowed from another link (which
            // `reachable` accepts) rarely gets a reply back through this one.
            let global = path.interfaceIndex.flatMap { links[$0] }?.addresses.values.contains {
                $0.address.family == family && $0.isUsableBeyondLink
            } ?? false
            switch family {
            case .ipv4: facts.supportsIPv4 = global
            case .ipv6: facts.supportsIPv6 = global
            }
        }
        if host.state != .online {
            // A dead link or a missing address says more than a family with no route at all,
            // and a blocking rule (a kill switch) more than either: it is why nothing leaves.
            facts.reason = [.policyBlocked, .linkDown, .noAddress].first(where: reasons.contains) ?? .noRoute
        }
        return facts
    }

    /// Route types that answer a packet with an error or drop it (`ip route add unreachable|
    /// prohibit|blackhole ...`): how kill switches stop traffic when their tunnel is down.
    static let blockingTypes: Set<RouteType> = [.unreachable, .prohibit, .blackhole]
}
