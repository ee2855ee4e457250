/// Passive stall detection's verdicts as the state keeps them (`Verdicts`): per ready link,
/// joined to its interface's flags and, through the host's path, to the host's answer.
extension NetworkState {
    /// Every address of every link, for attributing sockets to links. One pass over the links:
    /// per poll, never per event.
    public var addresses: [Address] { links.values.flatMap { $0.addresses.values } }

    /// The stall evaluator's DNS evidence: `consecutive` timeouts of reachd's own lookups, counted
    /// against each link that carries the kernel's route to a configured nameserver. The resolver
    /// does not say which server went unanswered (it tries them in turn, as far as the deadline
    /// lets it), so every link that carries one is suspect; the primary link is not, when the
    /// servers are reached through a VPN or a second link. A link that is not ready is named all
    /// the same: its verdict is dropped as it comes back (`Verdicts`), rather than moved
    /// onto a link that never carried the queries.
    ///
    /// A server on this host (resolved's stub on loopback, one of the host's own addresses) asks
    /// upstream servers nobody named, and the kernel's route to it names no link; while no server
    /// names one, the timeouts count against the primary interface, the way the host's own
    /// traffic leaves (a stub without an upstream list, or servers with no route at all).
    package func dnsTimeoutsByLink(consecutive count: Int) -> [Int32: Int] {
        guard count > 0 else { return [:] }
        var charged: [Int32: Int] = [:]
        for (_, index) in routedNameservers { charged[index] = count }
        if charged.isEmpty, let primary = linkIndexByName[host.primaryInterface] { charged[primary] = count }
        return charged
    }

    /// The configured nameservers (resolved's upstream servers behind its stub) each link
    /// carries the kernel's route to, beyond the link's own subnets: where reachd asks while the
    /// link's traffic is suspected (`NameserverCheck`). A server on this host or on the link's
    /// subnet (a home router's) is left out: it answers while the uplink behind it is dead.
    package var stallNameservers: [Int32: [IPAddress]] {
        var servers: [Int32: [IPAddress]] = [:]
        for (address, index) in routedNameservers where !address.isLinkLocal {
            guard let entry = links[index] else { continue }
            let full = address.family == .ipv4 ? 32 : 128
            let onLink = entry.addresses.values.contains { Int($0.prefix.length) < full && $0.prefix.contains(address) }
            if !onLink { servers[index, default: []].append(address) }
        }
        return servers
    }

    /// The configured nameservers not on loopback, each with the link that carries the kernel's
    /// route to it (`evaluate` names no link for local and blocking routes: nothing leaves
    /// through one), in resolv.conf's order.
    private var routedNameservers: [(address: IPAddress, link: Int32)] {
        nameservers.compactMap { server in
            guard !server.address.isLoopback, let route = server.route,
                let index = evaluate(route: route, family: server.address.family).interfaceIndex
            else { return nil }
            return (server.address, index)
        }
    }

    /// Whether the last stall poll found this link's traffic stalled.
    package func isStalled(_ index: Int32) -> Bool { verdicts.stalls[index]?.isStalled ?? false }

    /// The last stall poll's figures for the host's path: its primary interface's, or those of
    /// the link beneath a tunnel when that link is the stalled one; nil when the path had none.
    public var hostStallEvidence: StallEvidence? {
        let primary = linkIndexByName[host.primaryInterface].flatMap { verdicts.stalls[$0] }
        if primary?.isStalled != true, let beneath = linkIndexByName[host.underlyingInterface].flatMap({ verdicts.stalls[$0] }),
            beneath.isStalled
        {
            return beneath.evidence
        }
        return primary?.evidence
    }

    /// The last stall poll's verdict on the link `index` (`.noEvidence` when it had none).
    public func stall(of index: Int32) -> LinkStall {
        verdicts.stalls[index] ?? LinkStall(interfaceIndex: index, verdict: .noEvidence, evidence: StallEvidence())
    }
}
