/// `explain`: the layers behind an answer (`Explanation`), read from the facts the answer is
/// made of. Pure: the kernel's route lookups for the caller come in (`lookups`), nothing goes out.
extension NetworkState {
    /// Why `target` (empty: the host) can or cannot be reached. `lookups`: the kernel's answer
    /// (RTM_GETROUTE, as `uid`'s traffic) for each destination: the target's address, or for the
    /// host one internet destination per family. `now`: for address lifetimes.
    public func explain(
        target: String, lookups: [(destination: IPAddress, lookup: RouteLookup)], uid: UInt32?,
        now: ContinuousClock.Instant = .now
    ) -> Explanation {
        let paths = lookups.map { destination, lookup in
            let family = destination.family
            let route = lookup.route(family: family)
            return ExplainedPath(
                destination: destination, route: route,
                evaluation: route.map { evaluate(route: $0, family: family, toward: destination) } ?? .noRoute, lookup: lookup)
        }
        // The path the answer rests on: a working one, else one through a link, else a refusal.
        let chosen = paths.first { $0.evaluation.isReachable }
            ?? paths.first { $0.evaluation.interfaceIndex != nil }
            ?? paths.first { $0.route?.type.isBlocking == true }
            ?? paths.first
        let egress = chosen?.evaluation.interfaceIndex.flatMap { links[$0] }
        if let chosen, chosen.route?.type == .local {
            let own = Explanation.Layer(name: .route, status: .ok, evidence: ["\(chosen.destination) is an address of this host"])
            return Explanation(
                target: target, uid: uid,
                layers: Explanation.hostLayers.map { $0 == .route ? own : Explanation.Layer(name: $0, status: .ok, evidence: []) })
        }
        let layers = [
            radioLayer(egress, carries: chosen?.evaluation.isReachable ?? false),
            linkLayer(egress),
            addressLayer(egress, chosen, now: now),
            gatewayLayer(egress, chosen, now: now),
            routeLayer(chosen, target: target, uid: uid),
            firewallLayer(egress),
            dnsLayer(target: target),
            trafficLayer(egress),
            portalLayer(egress),
        ]
        return Explanation(target: target, uid: uid, layers: layers)
    }

    /// One destination's lookup and how a packet would fare along it.
    package struct ExplainedPath {
        package var destination: IPAddress
        package var route: Route?
        package var evaluation: PathEvaluation
        package var lookup: RouteLookup
    }

    /// `carries`: the path can carry traffic, so a block rfkill reports has not (yet) stopped
    /// it: said, not judged broken (cfg80211 takes a blocked phy's links down at once).
    private func radioLayer(_ egress: LinkEntry?, carries: Bool) -> Explanation.Layer {
        let switched = egress.map { [$0.link.index] } ?? Array(radios.blocks.keys)
        let off = switched.compactMap { index -> (String, RadioBlock)? in
            guard let entry = links[index], let block = self.radios.blocks[index], [.wifi, .cellular].contains(effectiveClassification(entry).kind)
            else { return nil }
            return (entry.link.name, block)
        }
        // Without a path a radio off is why only when no link is ready at all (as `radioOff`).
        guard !off.isEmpty, egress != nil || readyLinks.isEmpty else {
            return .init(name: .radio, status: .ok, evidence: [egress.map { "\($0.link.name): no radio switched off" } ?? "no radio switched off"])
        }
        let facts = off.map { "\($0.0): radio switched off (rfkill \($0.1.contains(.hard) ? "hard" : "soft") block)" }
        if carries { return .init(name: .radio, status: .ok, evidence: facts.map { $0 + ", yet the link carries traffic" }) }
        let hard = off.contains { $0.1.contains(.hard) }
        return .init(
            name: .radio, status: .broken,
            evidence: facts,
            fix: hard
                ? "switch the radio on with its hardware switch or key (a hard block: software cannot)"
                : "switch the radio on: rfkill unblock all, or leave airplane mode")
    }

    private func linkLayer(_ egress: LinkEntry?) -> Explanation.Layer {
        guard let egress else {
            let candidates = links.values.filter { !$0.link.isLoopback && !effectiveClassification($0).isIgnored }
                .sorted { $0.link.index < $1.link.index }
            let ready = candidates.filter { $0.link.isReady }
            let evidence = candidates.prefix(8).map(Self.linkFacts)
            if !ready.isEmpty { return .init(name: .link, status: .ok, evidence: evidence) }
            return .init(
                name: .link, status: .broken, evidence: evidence.isEmpty ? ["no network interface but loopback"] : evidence,
                fix: candidates.isEmpty ? "no interface: load its driver or plug in the device" : "bring a link up with carrier (ip link set NAME up, plug in the cable, connect to a network)")
        }
        let link = egress.link
        let facts = [Self.linkFacts(egress)]
        guard !link.isReady else { return .init(name: .link, status: .ok, evidence: facts) }
        let fix: String =
            if !link.isAdminUp { "bring it up: ip link set \(link.name) up" }
            else if link.operState == .dormant || link.flags.contains(.dormant) {
                "\(link.name) is dormant: it waits to be associated or authenticated (connect to a Wi-Fi network, finish 802.1X)"
            } else { "\(link.name) has no carrier: plug in its cable, or check the far end (switch port, modem, access point)" }
        return .init(name: .link, status: .broken, evidence: facts, fix: fix)
    }

    package static func linkFacts(_ entry: LinkEntry) -> String {
        let link = entry.link
        var words = [link.isAdminUp ? "up" : "down"]
        if link.isAdminUp { words.append(link.flags.contains(.lowerUp) ? "carrier" : "no carrier") }
        if link.flags.contains(.dormant) { words.append("dormant") }
        words.append("operstate \(Self.operStateName(link.operState))")
        return "\(link.name): " + words.joined(separator: ", ")
    }

    package static func operStateName(_ state: OperState) -> String {
        switch state {
        case .unknown: "unknown"
        case .notPresent: "notpresent"
        case .down: "down"
        case .lowerLayerDown: "lowerlayerdown"
        case .testing: "testing"
        case .dormant: "dormant"
        case .up: "up"
        }
    }

    private func addressLayer(_ egress: LinkEntry?, _ chosen: ExplainedPath?, now: ContinuousClock.Instant) -> Explanation.Layer {
        guard let egress, let chosen else {
            let ready = links.values.contains { !$0.link.isLoopback && $0.link.isReady }
            if let local = linkLocalOnly() {
                return .init(
                    name: .address, status: .broken, evidence: [Self.addressFacts(local.address, now: now)],
                    fix: Self.linkLocalOnlyFix(local.name))
            }
            if !readyLinks.isEmpty { return .init(name: .address, status: .ok, evidence: ["a ready link has a usable address"]) }
            return ready
                ? .init(name: .address, status: .broken, evidence: ["no ready link has a usable address"],
                    fix: "no address: check the DHCP client or SLAAC, or add one (ip addr add ... dev NAME)")
                : .init(name: .address, status: .unknown, evidence: ["no ready link to look at"])
        }
        let family = chosen.destination.family
        let addresses = egress.addresses.values.filter { $0.address.family == family }
            .sorted { Self.addressOrder($0.prefix, $1.prefix) }
        var evidence = addresses.prefix(8).map { Self.addressFacts($0, now: now) }
        if evidence.isEmpty { evidence = ["\(egress.link.name): no \(family == .ipv4 ? "IPv4" : "IPv6") address"] }
        guard chosen.evaluation.reason == .noAddress else { return .init(name: .address, status: .ok, evidence: evidence) }
        let fix: String =
            if addresses.contains(where: { $0.flags.contains(.dadFailed) }) {
                "duplicate address detection failed: another host uses that address; give \(egress.link.name) another one"
            } else if addresses.contains(where: { $0.flags.contains(.tentative) }) {
                "the address is still tentative: duplicate address detection has not finished (it takes about a second per probe, net.ipv6.conf.\(egress.link.name).dad_transmits)"
            } else if addresses.contains(where: \.address.isLinkLocal) {
                Self.linkLocalOnlyFix(egress.link.name)
            } else { "no usable address on \(egress.link.name): check the DHCP client or SLAAC, or add one (ip addr add ... dev \(egress.link.name))" }
        return .init(name: .address, status: .broken, evidence: evidence, fix: fix)
    }

    /// A ready link's link-local address when no ready link holds one usable beyond its link:
    /// the host gave itself 169.254/16 (or has only fe80::/10) and reaches nothing past it.
    private func linkLocalOnly() -> (name: String, address: Address)? {
        guard AddressFamily.allCases.allSatisfy({ sourceCapable[$0]?.isEmpty ?? true }) else { return nil }
        for index in readyLinks.sorted() {
            guard let entry = links[index] else { continue }
            let local = entry.addresses.values.filter { $0.isUsable && $0.address.isLinkLocal }
            if let first = local.min(by: { Self.addressOrder($0.prefix, $1.prefix) }) { return (entry.link.name, first) }
        }
        return nil
    }

    package static func linkLocalOnlyFix(_ name: String) -> String {
        "only a link-local address on \(name): it reaches that link's neighbours, not beyond; no DHCP server answered (check the DHCP client or SLAAC), or add an address (ip addr add ... dev \(name))"
    }

    package static func addressFacts(_ address: Address, now: ContinuousClock.Instant) -> String {
        var words: [String] = []
        if address.flags.contains(.tentative) { words.append("tentative") }
        if address.flags.contains(.dadFailed) { words.append("dadfailed") }
        if address.flags.contains(.deprecated) { words.append("deprecated") }
        if address.scope == Address.scopeLink || address.address.isLinkLocal { words.append("link-local") }
        if let until = address.validUntil { words.append("valid \(max(0, now.duration(to: until).components.seconds))s") }
        return address.prefix.description + (words.isEmpty ? "" : " (" + words.joined(separator: ", ") + ")")
    }

    private func gatewayLayer(_ egress: LinkEntry?, _ chosen: ExplainedPath?, now: ContinuousClock.Instant) -> Explanation.Layer {
        guard let egress, let chosen else { return .init(name: .gateway, status: .unknown, evidence: ["no route: no gateway to look at"]) }
        let hops = (chosen.route?.nextHops ?? []).filter { $0.gateway != nil && $0.interfaceIndex != nil }
        guard !hops.isEmpty else { return .init(name: .gateway, status: .ok, evidence: ["on-link: \(egress.link.name) needs no gateway"]) }
        let evidence = hops.prefix(8).map { hop in gatewayEvidence(hop.gateway!, on: hop.interfaceIndex!, now: now) }
        guard chosen.evaluation.reason == .gatewayUnreachable else { return .init(name: .gateway, status: .ok, evidence: evidence) }
        return .init(
            name: .gateway, status: .broken, evidence: evidence,
            fix: "the gateway does not answer ARP/neighbour discovery: check that the router is on and on this link's network (cable, VLAN, address)")
    }

    /// "192.0.2.1 on eth0: REACHABLE, answered 2s ago": the kernel's state, how many of its
    /// resolutions failed in a row (and whether fresh ones are still to come), and how fresh
    /// its last answer is, as far as the kernel told.
    private func gatewayEvidence(_ gateway: IPAddress, on index: Int32, now: ContinuousClock.Instant) -> String {
        let name = "\(gateway) on \(links[index]?.link.name ?? "#\(index)")"
        guard let known = gatewayNeighbours[LinkRouter(interfaceIndex: index, address: gateway)], known.inTable else {
            return "\(name): no neighbour entry (nothing sent that way lately)"
        }
        var words = "\(name): \(known.state.name)"
        if known.unreachable {
            words += known.linkLayerAddress.isEmpty ? ", never answered" : ", and \(Self.freshResolutions) fresh resolutions failed too"
        } else if known.failures > 0 {
            words += ", resolving it afresh (\(known.failures) of \(Self.freshResolutions + 1) failed)"
        }
        if let answered = known.answered { words += ", answered \(max(0, Int((now - answered).components.seconds)))s ago" }
        return words
    }

    private func routeLayer(_ chosen: ExplainedPath?, target: String, uid: UInt32?) -> Explanation.Layer {
        let whose = uid.map { "uid \($0)" } ?? "the system"
        let toWhat = target.isEmpty ? "the internet" : target
        guard let chosen, let route = chosen.route else {
            return .init(
                name: .route, status: .broken, evidence: ["no route to \(toWhat) for \(whose)'s traffic"],
                fix: target.isEmpty
                    ? "no default route: the DHCP client or router advertisement installed none; add one (ip route add default via GATEWAY)"
                    : "no route covers \(target): add one, or a default route")
        }
        let table = route.table == Route.mainTable ? "main" : route.table == 0 ? "" : "\(route.table)"
        if route.type.isBlocking {
            let how: String =
                if case .failed = chosen.lookup { "a rule or route of type \(Self.typeName(route.type)) refuses it" }
                else { "route \(route.destination) \(Self.typeName(route.type)) in table \(table)" }
            return .init(
                name: .route, status: .broken, evidence: ["\(chosen.destination.family == .ipv4 ? "IPv4" : "IPv6") for \(whose): \(how)"],
                fix: "a kill switch or policy rule stops this traffic: bring its VPN back up, or remove the rule (ip rule show; ip route show table all type \(Self.typeName(route.type)))")
        }
        var words = ["table \(table.isEmpty ? "?" : table)", route.destination.description]
        if let gateway = chosen.evaluation.gateway { words.append("via \(gateway)") }
        if !chosen.evaluation.interfaceName.isEmpty { words.append("dev \(chosen.evaluation.interfaceName)") }
        if let source = route.preferredSource { words.append("src \(source)") }
        if route.metric != 0 { words.append("metric \(route.metric)") }
        return .init(name: .route, status: .ok, evidence: ["for \(whose): " + words.joined(separator: " ")])
    }

    package static func typeName(_ type: RouteType) -> String {
        switch type {
        case .blackhole: "blackhole"
        case .unreachable: "unreachable"
        case .prohibit: "prohibit"
        default: "\(type)"
        }
    }

    private func dnsLayer(target: String) -> Explanation.Layer {
        if !target.isEmpty, AddressTarget.looksLikeAddress(target) {
            return .init(name: .dns, status: .ok, evidence: ["\(target) is an address: no lookup needed"])
        }
        guard !nameservers.isEmpty else { return .init(name: .dns, status: .unknown, evidence: ["no nameserver in resolv.conf"]) }
        var evidence = nameservers.prefix(8).map { server -> String in
            if server.address.isLoopback || server.route?.type == .local { return "\(server.address): on this host (a local resolver)" }
            guard let route = server.route else { return "\(server.address): no route" }
            let path = evaluate(route: route, family: server.address.family)
            if path.isReachable { return "\(server.address): routable via \(path.interfaceName)" }
            return "\(server.address): not routable (\(path.reason?.rawValue ?? "noRoute"))"
        }
        // The stall poll's count of reachd's own lookups that timed out in a row, per link.
        let timeouts = verdicts.stalls.values.map(\.evidence.dnsTimeouts).max() ?? 0
        let dnsStalled = verdicts.stalls.values.contains { $0.isStalled && $0.causes.contains(.dnsTimeouts) }
        if timeouts > 0 { evidence.append("\(timeouts) lookup(s) in a row timed out") }
        if !supportsDNS(online: host.state == .online) {
            return .init(
                name: .dns, status: .broken, evidence: evidence,
                fix: "no nameserver is routable: fix the path to them, or name reachable ones in /etc/resolv.conf")
        }
        if dnsStalled {
            return .init(
                name: .dns, status: .broken, evidence: evidence,
                fix: "the nameservers do not answer: check them (resolvectl status, /etc/resolv.conf) or name others")
        }
        return .init(name: .dns, status: .ok, evidence: evidence)
    }

    private func portalLayer(_ egress: LinkEntry?) -> Explanation.Layer {
        var evidence: [String] = []
        let announced = host.announcedPortal
        if !announced.isEmpty, announced != AnnouncedPortal.unrestricted { evidence.append("the network announces a portal: \(announced)") }
        let session = host.portalSession
        if session.captive {
            let login = session.loginURL.isEmpty ? "" : ": \(session.loginURL)"
            return .init(
                name: .portal, status: .broken, evidence: evidence + ["the network's portal API says the host is captive"],
                fix: "log in at the captive portal\(login)")
        }
        if session != .none {
            evidence.append(session.ending ? "the portal API says the session ends soon" : "the portal API says the host is not captive")
        }
        // The probe judges the host's path: it says nothing of a target that leaves elsewhere.
        guard egress == nil || egress?.link.name == host.primaryInterface else {
            return .init(name: .portal, status: .unknown, evidence: evidence + ["the probe judges the host's path, not this one"])
        }
        let status = host.connectivity
        switch status.verdict {
        case .unknown:
            return .init(name: .portal, status: .unknown, evidence: evidence + ["no probe ([Connectivity] URL= in reachd.conf)"])
        case .full:
            return .init(name: .portal, status: .ok, evidence: evidence + ["the probe got its expected answer"])
        case .portal:
            return .init(
                name: .portal, status: .broken, evidence: evidence + ["the probe was redirected to \(status.portal.isEmpty ? "a login page" : status.portal)"],
                fix: "log in at the captive portal\(status.portal.isEmpty ? "" : ": \(status.portal)")")
        case .limited, .none:
            return .init(
                name: .portal, status: .broken,
                evidence: evidence + ["the probe: \(status.verdict.rawValue)\(status.detail.isEmpty ? "" : ", \(status.detail)")"],
                fix: "the internet does not answer through this path: check the modem or the provider")
        }
    }
}
