/// `explain`'s layers of the host's traffic through a path, from the stall detector's figures:
/// whether the host's own firewall lets it leave, and whether anything comes back.
extension NetworkState {
    /// Broken while the link is stalled and the host itself kept its connections' segments in:
    /// connections whose queued data it refuses to send (`StallEvidence.socketsHeldInHost`), or
    /// retransmissions it refused (`retransmissionsRefused`). Nothing of theirs left, so the
    /// network beyond the gateway is not the one to blame. A rule that rejects shows no failing
    /// connection at all (the connection is refused at once); this layer sees drops.
    package func firewallLayer(_ egress: LinkEntry?) -> Explanation.Layer {
        guard let egress else { return .init(name: .firewall, status: .unknown, evidence: ["no path: no traffic to judge"]) }
        let stall = stall(of: egress.link.index)
        let name = egress.link.name
        let figures = stall.evidence
        guard stall.verdict != .noEvidence else {
            return .init(name: .firewall, status: .unknown, evidence: ["\(name): no TCP traffic to judge (or stall detection is off)"])
        }
        guard Self.keptInHost(figures) else {
            return .init(name: .firewall, status: .ok, evidence: ["\(name): nothing the host's connections sent was refused inside the host"])
        }
        var evidence: [String] = []
        if figures.socketsHeldInHost > 0 {
            evidence.append("\(figures.socketsHeldInHost) of \(figures.socketsFailing) failing connection(s) through \(name) hold data the host refuses to send (backed off with nothing in flight and the peer's window open)")
        }
        if figures.retransmissionsRefused > 0 {
            evidence.append("\(figures.retransmissionsRefused) retransmission(s) refused inside the host within the stall window (the kernel's TcpExt TCPRetransFail)")
        }
        return .init(
            name: .firewall, status: stall.isStalled ? .broken : .ok, evidence: evidence,
            fix: "the host's own firewall (or a queue discipline) drops them before they leave: look at the output and postrouting hooks (nft list ruleset; iptables -S OUTPUT)")
    }

    package static func keptInHost(_ figures: StallEvidence) -> Bool {
        figures.socketsFailing > 0 && (figures.socketsHeldInHost > 0 || figures.retransmissionsRefused > 0)
    }

    package func trafficLayer(_ egress: LinkEntry?) -> Explanation.Layer {
        guard let egress else { return .init(name: .traffic, status: .unknown, evidence: ["no path: no traffic to judge"]) }
        return Self.trafficLayer(egress.link.name, stall(of: egress.link.index))
    }

    /// The traffic layer of a watched unit (`[Units] Watch=`): its own sockets' verdicts, the
    /// stalled link's first, else the first judged; in place of the host's, whose verdict a
    /// unit's traffic neither makes nor breaks.
    package func unitTrafficLayer(_ unit: String, _ verdicts: [LinkStall]) -> Explanation.Layer {
        let chosen = verdicts.first(where: \.isStalled) ?? verdicts.first
        guard let chosen, let name = links[chosen.interfaceIndex]?.link.name else {
            return .init(name: .traffic, status: .unknown, evidence: ["\(unit)'s own traffic: no TCP connection of its to judge"])
        }
        var layer = Self.trafficLayer(name, chosen)
        layer.evidence = layer.evidence.enumerated().map { $0.offset == 0 ? "\(unit)'s own traffic: \($0.element)" : $0.element }
        if layer.status == .broken {
            layer.fix = Self.keptInHost(chosen.evidence)
                ? "the host's own firewall keeps the service's connections in (a rule on its cgroup or its user?)"
                : "the service's own connections get nothing back: what they connect to, or a rule on the way that drops its traffic "
                    + "alone (the host's own traffic is judged apart: the traffic layer of reachctl why)"
        }
        return layer
    }

    /// One link's traffic layer from its verdict.
    package static func trafficLayer(_ name: String, _ stall: LinkStall) -> Explanation.Layer {
        let figures = stall.evidence
        switch stall.verdict {
        case .noEvidence:
            return .init(name: .traffic, status: .unknown, evidence: ["\(name): no TCP traffic to judge (or stall detection is off)"])
        case .flowing:
            return .init(name: .traffic, status: .ok, evidence: ["\(name): flowing, \(figures.socketsJudged) socket(s) judged"])
        case .stalled:
            // Only the figures there are: a stall of DNS timeouts alone judged no socket.
            var why: [String] = []
            if figures.socketsFailing > 0 {
                why.append("\(Self.failingPhrase(figures)) with nothing back for \(figures.waiting.components.seconds)s")
            }
            if figures.dnsTimeouts > 0 { why.append("\(figures.dnsTimeouts) DNS timeouts in a row") }
            var evidence = ["\(name): stalled" + (why.isEmpty ? "" : ": " + why.joined(separator: "; "))]
            if let since = figures.sinceReceive { evidence.append("last segment received \(since.components.seconds)s ago") }
            if figures.nameserverSilent { evidence.append("reachd's own DNS queries to a nameserver beyond \(name) went unanswered too") }
            let fix = Self.keptInHost(figures)
                ? "the host's own firewall keeps them in (see the firewall layer)"
                : "packets leave and nothing comes back: the network beyond the gateway is down (check the modem or the provider)"
            return .init(name: .traffic, status: .broken, evidence: evidence, fix: fix)
        }
    }

    /// "3 connection(s) retransmit (2 open of 5 judged, 1 closed so)": true counts, the open
    /// ones out of those judged now and those that closed failing within the window apart.
    package static func failingPhrase(_ figures: StallEvidence) -> String {
        let open = figures.socketsFailing - figures.socketsClosedFailing
        var phrase = "\(figures.socketsFailing) connection(s) retransmit (\(open) open of \(figures.socketsJudged) judged"
        if figures.socketsClosedFailing > 0 { phrase += ", \(figures.socketsClosedFailing) closed so" }
        return phrase + ")"
    }
}
