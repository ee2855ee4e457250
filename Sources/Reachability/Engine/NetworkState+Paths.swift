/// How a packet would leave this host along one route, as far as reachability cares.
public struct PathEvaluation: Hashable, Sendable {
    public var flags: ReachabilityFlags
    public var interfaceIndex: Int32?
    /// The egress link's name, empty when there is none.
    public var interfaceName: String
    public var gateway: IPAddress?
    /// Why the path cannot carry traffic now; nil when `flags` holds `reachable`.
    public var reason: Reason?

    public var isReachable: Bool { flags.contains(.reachable) }

    static let noRoute = PathEvaluation(flags: [], interfaceIndex: nil, interfaceName: "", gateway: nil, reason: .noRoute)
}

extension NetworkState {
    /// The default route the kernel would use now for `family` (AF_INET or AF_INET6), mirroring
    /// its FIB choice: the main table before the default table, lowest metric first. A route whose
    /// link lost carrier stays chosen (the kernel only marks it linkdown), which is why a worse
    /// route through a good link does not make the host online.
    public func kernelDefaultRoute(family: UInt8) -> Route? {
        var best: Route?
        for key in defaultRoutes where key.destination.address.family == family {
            guard let route = routes[key] else { continue }
            guard let current = best else {
                best = route
                continue
            }
            if ranks(route, before: current) { best = route }
        }
        return best
    }

    private func ranks(_ a: Route, before b: Route) -> Bool {
        if a.table != b.table { return a.table == Route.mainTable }
        if a.metric != b.metric { return a.metric < b.metric }
        let readyA = a.nextHops.contains { isReady($0.interfaceIndex) }
        let readyB = b.nextHops.contains { isReady($0.interfaceIndex) }
        if readyA != readyB { return readyA }
        return (a.nextHops.first?.interfaceIndex ?? 0) < (b.nextHops.first?.interfaceIndex ?? 0)
    }

    private func isReady(_ index: Int32?) -> Bool {
        index.flatMap { links[$0]?.link.isReady } ?? false
    }

    /// Evaluates sending along `route` for an address of `family`.
    public func evaluate(route: Route, family: UInt8) -> PathEvaluation {
        guard route.type == .unicast else { return .noRoute }
        let hop = route.nextHops.first { isReady($0.interfaceIndex) } ?? route.nextHops.first
        guard let hop, let index = hop.interfaceIndex, let entry = links[index] else { return .noRoute }
        var result = PathEvaluation(
            flags: kindFlags(entry), interfaceIndex: index, interfaceName: entry.link.name,
            gateway: hop.gateway, reason: nil)
        if !entry.link.isReady {
            result.flags.insert(.connectionRequired)
            result.reason = .linkDown
        } else if !hasSourceAddress(family: family, egress: entry, preferred: route.preferredSource) {
            result.flags.insert(.connectionRequired)
            result.reason = .noAddress
        } else {
            result.flags.insert(.reachable)
        }
        return result
    }

    /// Whether the kernel can pick a source address: the egress link's own first, else any ready
    /// link's (IPv4 and IPv6 source selection both fall back to other interfaces).
    private func hasSourceAddress(family: UInt8, egress: LinkEntry, preferred: IPAddress?) -> Bool {
        if egress.addresses.values.contains(where: { $0.address.family == family && $0.isUsableBeyondLink }) {
            return true
        }
        return !(sourceCapable[family]?.isEmpty ?? true)
    }

    func deriveHost() -> HostStatus {
        let v4 = kernelDefaultRoute(family: RT.familyIPv4).map { evaluate(route: $0, family: RT.familyIPv4) }
        let v6 = kernelDefaultRoute(family: RT.familyIPv6).map { evaluate(route: $0, family: RT.familyIPv6) }
        let chosen = [v4, v6].compactMap { $0 }.first { $0.isReachable } ?? v4 ?? v6
        let state: ConnectivityState =
            chosen?.isReachable == true ? .online : (readyLinks.isEmpty ? .offline : .local)
        return HostStatus(
            flags: chosen?.flags ?? [], state: state, primaryInterface: chosen?.interfaceName ?? "",
            availableInterfaces: availableInterfaces())
    }

    /// Visible, ready links that carry a usable default route, by priority, then metric, then index.
    private func availableInterfaces() -> [String] {
        var best: [Int32: (priority: Int, metric: UInt32)] = [:]
        for key in defaultRoutes {
            guard let route = routes[key], route.type == .unicast else { continue }
            let family = route.destination.address.family
            for hop in route.nextHops {
                guard let index = hop.interfaceIndex, let entry = links[index], entry.link.isReady else { continue }
                let classification = effectiveClassification(entry)
                guard !classification.isIgnored,
                    hasSourceAddress(family: family, egress: entry, preferred: route.preferredSource)
                else { continue }
                let candidate = (classification.priority, route.metric)
                if let known = best[index], known <= candidate { continue }
                best[index] = candidate
            }
        }
        return best.sorted { a, b in
            (a.value.priority, a.value.metric, a.key) < (b.value.priority, b.value.metric, b.key)
        }.compactMap { links[$0.key]?.link.name }
    }
}
