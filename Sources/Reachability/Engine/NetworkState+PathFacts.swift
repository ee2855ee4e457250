extension NetworkState {
    /// The host's path facts now (part of its answer).
    public var pathFacts: PathFacts { host.pathFacts }

    /// The path facts of a host that is `online` or not, from the internet paths; `uplinks`: the
    /// host's available interfaces (ready links with a usable default route).
    package func pathFacts(online: Bool, uplinks: [String]) -> PathFacts {
        var facts = PathFacts()
        var reasons: [Reason] = []
        for family in AddressFamily.allCases {
            guard let route = internetRoute(family: family) else { continue }
            // A blocking route's evaluation says policyBlocked (a kill switch).
            let path = evaluate(route: route, family: family)
            guard path.isReachable else {
                if let reason = path.reason { reasons.append(reason) }
                continue
            }
            // Every live leg of a multipath route, the one `path` takes first.
            let legs = route.nextHops.filter { hop in hop.interfaceIndex.flatMap { links[$0]?.link.isReady } ?? false }
            for gateway in [path.gateway].compactMap({ $0 }) + legs.compactMap(\.gateway) where !facts.gateways.contains(gateway) {
                facts.gateways.append(gateway)
            }
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
        facts.nameservers = nameservers.map(\.address)
        facts.routableNameservers = nameservers.filter { isRoutable($0, online: online) }.map(\.address)
        facts.supportsDNS = !facts.routableNameservers.isEmpty
        if !online {
            // A dead link, a missing address or a gateway that stopped answering ARP/ND says
            // more than a family with no route at all, and a blocking rule (a kill switch)
            // more than any: it is why nothing leaves.
            // A radio switched off says most when no other uplink is left: switching it on is
            // what brings the host back (a kill switch over a live uplink stays policyBlocked).
            facts.reason = radioIsWhyOffline(uplinks: uplinks)
                ? .radioOff : [.policyBlocked, .linkDown, .noAddress, .gatewayUnreachable].first(where: reasons.contains) ?? .noRoute
        }
        return facts
    }

    /// Whether a configured nameserver can be reached: its route (the kernel's answer) leaves
    /// through a ready link with a source address. A server on this host (a stub on loopback
    /// such as systemd-resolved's 127.0.0.53, or one of the host's own addresses) is always
    /// routable, but it answers only with what it can ask upstream: it counts while the host
    /// is online (the adapter hands in resolved's upstream servers instead when it knows them).
    package func supportsDNS(online: Bool) -> Bool {
        nameservers.contains { isRoutable($0, online: online) }
    }

    /// `supportsDNS`'s rule for one server.
    package func isRoutable(_ server: NameserverRoute, online: Bool) -> Bool {
        if server.address.isLoopback || server.route?.type == .local { return online }
        guard let route = server.route else { return false }
        return evaluate(route: route, family: server.address.family).isReachable
    }

    /// No uplink can carry traffic, and a visible Wi-Fi or cellular link has its radio switched
    /// off. Looks only at the links with a radio off (a handful), never at every link.
    package func radioIsWhyOffline(uplinks: [String]) -> Bool {
        uplinks.isEmpty && radios.blocks.keys.contains { statuses[$0]?.flags.contains(.radioOff) == true }
    }
}
