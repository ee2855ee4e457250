/// How a packet would leave this host along one route, as far as reachability cares.
package struct PathEvaluation: Hashable, Sendable {
    public var flags: ReachabilityFlags
    public var interfaceIndex: Int32?
    /// The egress link's name, empty when there is none.
    public var interfaceName: String
    public var gateway: IPAddress?
    /// Why the path cannot carry traffic now; nil when `flags` holds `reachable`.
    public var reason: Reason?

    public var isReachable: Bool { flags.contains(.reachable) }

    package static let noRoute = PathEvaluation(flags: [], interfaceIndex: nil, interfaceName: "", gateway: nil, reason: .noRoute)
    package static let policyBlocked = PathEvaluation(flags: [], interfaceIndex: nil, interfaceName: "", gateway: nil, reason: .policyBlocked)
}

extension NetworkState {
    /// The default route of the main or default table the kernel would use for `family` (AF_INET
    /// or AF_INET6) when no policy rule sends traffic elsewhere: the main table before the default
    /// table, lowest metric first. A route whose link lost carrier stays chosen (the kernel only
    /// marks it linkdown), which is why a worse route through a good link does not make the host
    /// online. This is also what carries a VPN: VPN clients leave it in place and steer traffic
    /// around it (0/1 + 128/1, or a rule into a table of their own).
    public func kernelDefaultRoute(family: AddressFamily) -> Route? {
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

    /// The route internet traffic of `family` takes now. Fed by the kernel's own answers when the
    /// adapter provides them (every table, every `ip rule`: split defaults, wg-quick, Tailscale);
    /// without them (pure tests), the main table's default route.
    public func internetRoute(family: AddressFamily) -> Route? {
        guard followsKernelPaths else { return kernelDefaultRoute(family: family) }
        return internetPaths[family].map(withEveryLeg)
    }

    /// The kernel's answer with every leg of the multipath route it came from, its own pick
    /// first. The answer names the one next hop the kernel's hash picked for that destination,
    /// and keeps picking it after its link lost carrier (unless `ignore_routes_with_linkdown`),
    /// while other flows take the other legs: the host's path is every leg, good while one is.
    /// The route is found among those through the picked hop's link (a handful), never all.
    private func withEveryLeg(_ answer: Route) -> Route {
        guard answer.nextHops.count == 1, let picked = answer.nextHops.first, let index = picked.interfaceIndex else { return answer }
        var source: Route?
        for key in routesByInterface[index] ?? [] {
            guard let route = routes[key], route.nextHops.count > 1, route.table == answer.table, route.type == answer.type,
                route.destination.contains(answer.destination.address), route.nextHops.contains(picked)
            else { continue }
            // The kernel's choice: the most specific prefix, then the lowest metric.
            if let best = source, (route.destination.length, best.metric) <= (best.destination.length, route.metric) { continue }
            source = route
        }
        guard let source else { return answer }
        var widened = answer
        widened.nextHops = [picked] + source.nextHops.filter { $0 != picked }
        return widened
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

    /// Evaluates sending along `route` for an address of `family`; `destination`, when known,
    /// lets a link-local one (169.254/16, fe80::/10) leave from a link-local source.
    public func evaluate(route: Route, family: AddressFamily, toward destination: IPAddress? = nil) -> PathEvaluation {
        // Multicast and broadcast destinations leave through their link like unicast ones (the
        // kernel answers them with such routes); blackhole, unreachable and prohibit never leave,
        // by a policy someone set (a kill switch), which is not the same as no route at all.
        if route.type.isBlocking { return .policyBlocked }
        guard [.unicast, .multicast, .broadcast].contains(route.type) else { return .noRoute }
        let hop = route.nextHops.first { isReady($0.interfaceIndex) } ?? route.nextHops.first
        guard let hop, let index = hop.interfaceIndex, let entry = links[index] else { return .noRoute }
        var result = PathEvaluation(
            flags: kindFlags(entry), interfaceIndex: index, interfaceName: entry.link.name,
            gateway: hop.gateway, reason: nil)
        if !entry.link.isReady {
            result.flags.insert(.connectionRequired)
            result.reason = .linkDown
        } else if !hasSourceAddress(family: family, egress: entry, toward: destination) {
            result.flags.insert(.connectionRequired)
            result.reason = .noAddress
        } else if gatewaysUnreachable(route) {
            // The link is fine; the next hop is not: ARP/ND got no answer from any gateway.
            result.reason = .gatewayUnreachable
        } else {
            result.flags.insert(.reachable)
            if isStalled(index) { result.flags.insert(.stalled) }
        }
        return result
    }

    /// Whether the kernel can pick a source address: the egress link's own first, else any ready
    /// link's (IPv4 and IPv6 source selection both fall back to other interfaces). Toward a
    /// link-local destination the egress link's link-local addresses count too: a peer on the
    /// same link answers 169.254.23.7 or fe80::2 (RFC 3927, RFC 4291), though nothing beyond it.
    private func hasSourceAddress(family: AddressFamily, egress: LinkEntry, toward destination: IPAddress? = nil) -> Bool {
        if egress.addresses.values.contains(where: { $0.address.family == family && $0.isUsableBeyondLink }) {
            return true
        }
        if destination?.isLinkLocal == true,
            egress.addresses.values.contains(where: { $0.address.family == family && $0.isUsable && $0.scope != Address.scopeHost })
        {
            return true
        }
        return !(sourceCapable[family]?.isEmpty ?? true)
    }

    package func deriveHost() -> HostStatus {
        let paths = AddressFamily.allCases.compactMap { family in
            internetRoute(family: family).map { (family: family, path: evaluate(route: $0, family: family)) }
        }
        guard let chosen = paths.first(where: { $0.path.isReachable }) ?? paths.first else {
            let available = availableInterfaces(primary: nil)
            return HostStatus(
                state: readyLinks.isEmpty ? .offline : .local, availableInterfaces: available, connectivity: verdicts.connectivity,
                validatedInterfaces: validatedInterfaces(available: available, primary: "", connectivity: verdicts.connectivity))
        }
        var flags = chosen.path.flags
        if !chosen.path.isReachable { flags.remove(.stalled) }
        var underlying = ""
        var reason = chosen.path.interfaceIndex.flatMap { links[$0] }.flatMap { expensiveReason($0) }
        // The network the host is attached to: under a tunnel, its carrier's.
        var attached = chosen.path
        if flags.contains(.isVPN), let carrier = tunnelCarrier(of: chosen.path, family: chosen.family) {
            underlying = carrier.interfaceName
            attached = carrier
            reason = reason ?? carrier.interfaceIndex.flatMap { links[$0] }.flatMap { expensiveReason($0) }
            // A tunnel over a metered, constrained or cellular link costs what its carrier costs.
            // A tunnel over a link whose traffic stalled stalls too (the tunnel's own TCP
            // sockets may not have shown it yet).
            flags.formUnion(carrier.flags.intersection([.isWWAN, .isExpensive, .isConstrained, .stalled]))
        }
        // The probe's verdict counts only for a path packets can take.
        if chosen.path.isReachable { flags.formUnion(verdicts.connectivity.flags) }
        let announcing = [chosen.path.interfaceIndex, underlying.isEmpty ? nil : linkIndexByName[underlying]]
        let announcer = announcing.lazy.compactMap { $0 }.first { self.linkPortal(on: $0) != nil }
        let announced = announcer.flatMap { linkPortal(on: $0)?.uri }
        let session = announcer.flatMap { portalSession(on: $0) } ?? .none
        // The API's word counts as the probe's does: only for a path packets can take. Where the
        // probe has no verdict (off, or quiet while the API answers) it is the connectivity too.
        if chosen.path.isReachable, session.captive { flags.insert(.interventionRequired) }
        let published = Self.connectivity(probe: verdicts.connectivity, session: chosen.path.isReachable ? session : .none)
        let available = availableInterfaces(primary: chosen.path.isReachable ? chosen.path.interfaceIndex : nil)
        var host = HostStatus(
            flags: flags, state: chosen.path.isReachable ? .online : (readyLinks.isEmpty ? .offline : .local),
            primaryInterface: chosen.path.interfaceName, availableInterfaces: available,
            underlyingInterface: underlying, connectivity: published, announcedPortal: announced ?? "",
            validatedInterfaces: validatedInterfaces(
                available: available, primary: chosen.path.isReachable ? chosen.path.interfaceName : "", connectivity: published),
            stalled: chosen.path.isReachable && flags.contains(.stalled),
            nat64Prefix: nat64Prefix(on: announcing, gateway: chosen.path.gateway),
            expensiveReason: flags.contains(.isExpensive) ? reason : nil,
            networkID: chosen.path.isReachable ? attached.interfaceIndex.map { networkID(of: $0) } ?? "" : "")
        host.portalSession = session
        return host
    }


    /// The link that carries a tunnel, where the kernel tells: the main table's default route
    /// (of the tunnel's family first), when it leaves through another link that is no tunnel.
    private func tunnelCarrier(of tunnel: PathEvaluation, family: AddressFamily) -> PathEvaluation? {
        let other = family.other
        for candidate in [family, other] {
            guard let route = kernelDefaultRoute(family: candidate) else { continue }
            let carrier = evaluate(route: route, family: candidate)
            if carrier.interfaceIndex != nil, carrier.interfaceIndex != tunnel.interfaceIndex, !carrier.flags.contains(.isVPN) {
                return carrier
            }
        }
        return nil
    }

    /// Visible, ready links that carry a usable default route of the main or default table, and
    /// the link internet traffic takes now (a split default over a tunnel, a VPN's own table), by
    /// priority, then metric, then index.
    private func availableInterfaces(primary: Int32?) -> [String] {
        var best: [Int32: (priority: Int, metric: UInt32)] = [:]
        forEachReadyDefaultHop { route, entry, classification in
            let index = entry.link.index
            guard hasSourceAddress(family: route.destination.address.family, egress: entry)
            else { return }
            let candidate = (classification.priority, route.metric)
            if let known = best[index], known <= candidate { return }
            best[index] = candidate
        }
        if let primary, best[primary] == nil, let entry = links[primary], !effectiveClassification(entry).isIgnored {
            best[primary] = (effectiveClassification(entry).priority, 0)
        }
        return best.sorted { a, b in
            (a.value.priority, a.value.metric, a.key) < (b.value.priority, b.value.metric, b.key)
        }.compactMap { links[$0.key]?.link.name }
    }

    /// Each next hop of a unicast default route of the main or default table through a ready link
    /// that is not ignored, with the link's effective classification: where both the available
    /// interfaces and the uplinks start. One pass over the default routes, not over every link.
    /// A hop whose gateway the kernel's ARP/ND gave up on carries nothing, and is left out.
    package func forEachReadyDefaultHop(_ body: (Route, LinkEntry, Classification) -> Void) {
        for key in defaultRoutes {
            guard let route = routes[key], route.type == .unicast else { continue }
            for hop in route.nextHops {
                guard let index = hop.interfaceIndex, let entry = links[index], entry.link.isReady else { continue }
                if let gateway = hop.gateway, isGatewayUnreachable(gateway, on: index) { continue }
                let classification = effectiveClassification(entry)
                guard !classification.isIgnored else { continue }
                body(route, entry, classification)
            }
        }
    }

    /// The host's connectivity: the probe's verdict, or where it has none and the network's
    /// portal API says captive, `portal` at the API's login page (so the verdict, the status line
    /// and NetworkManager's PORTAL agree with the network's own word without a probe).
    package static func connectivity(probe: ConnectivityStatus, session: PortalSession) -> ConnectivityStatus {
        guard probe.verdict == .unknown, session.captive else { return probe }
        return ConnectivityStatus(verdict: .portal, portal: session.loginURL, detail: "the network's captive-portal API says the host is captive")
    }
}
