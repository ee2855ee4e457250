import Testing
@testable import Reachability

/// Stall verdicts as an input of the pure Engine (`NetworkEvent.stalls`): how they join the
/// host's and the interfaces' answers, and that only a flip is a change. No root, no sockets.
struct StallStateTests {
    static let carrier: LinkFlags = [.up, .running, .lowerUp, LinkFlags(rawValue: 0x2), LinkFlags(rawValue: 0x1000)]

    static func link(_ index: Int32, _ name: String, carrier: Bool = true) -> Link {
        Link(
            index: index, name: name, flags: carrier ? Self.carrier : [.up], hardwareType: Link.hardwareEther,
            operState: carrier ? .up : .lowerLayerDown)
    }

    static func address(_ index: Int32, _ text: String) -> Address {
        Address(interfaceIndex: index, prefix: IPPrefix(IPAddress(text)!, length: 24), scope: 0, flags: AddressFlags(rawValue: 0x80))
    }

    static func defaultRoute(via gateway: String, dev index: Int32, metric: UInt32) -> Route {
        Route(destination: IPPrefix(.anyV4, length: 0), metric: metric, nextHops: [NextHop(gateway: IPAddress(gateway)!, interfaceIndex: index)])
    }

    /// eth0 (2) online as the primary, wlan0 (3) a second uplink.
    static func twoUplinks() -> NetworkState {
        var state = NetworkState()
        _ = state.apply([
            .link(link(2, "eth0"), device: DeviceFacts()),
            .address(address(2, "192.0.2.10")),
            .route(defaultRoute(via: "192.0.2.1", dev: 2, metric: 100), replace: false),
            .link(link(3, "wlan0"), device: DeviceFacts()),
            .address(address(3, "198.51.100.7")),
            .route(defaultRoute(via: "198.51.100.1", dev: 3, metric: 600), replace: false),
        ])
        return state
    }

    static func changed(_ change: ReachabilityChange?, sourceLocation: SourceLocation = #_sourceLocation) throws -> ReachabilityChange {
        try #require(change, sourceLocation: sourceLocation)
    }

    static func verdict(_ index: Int32, _ verdict: StallVerdict, sockets: Int = 4) -> LinkStall {
        var evidence = StallEvidence()
        evidence.socketsJudged = sockets
        evidence.socketsFailing = verdict == .stalled ? 3 : 0
        evidence.waiting = .seconds(verdict == .stalled ? 38 : 0)
        evidence.sinceReceive = .seconds(verdict == .stalled ? 38 : 0)
        return LinkStall(interfaceIndex: index, verdict: verdict, causes: verdict == .stalled ? .tcpRetransmissions : [], evidence: evidence)
    }

    @Test func aStalledPrimaryIsOneChangeOfTheHostsAnswer_figuresAloneAreNone() throws {
        var state = Self.twoUplinks()
        #expect(state.host.state == .online && state.host.primaryInterface == "eth0" && !state.host.stalled)
        let epoch = state.routingEpoch
        #expect(state.apply([.stalls([Self.verdict(2, .flowing)])]) == nil, "flowing traffic changes nothing shown")
        #expect(state.hostStallEvidence?.socketsJudged == 4)

        let change = try Self.changed(state.apply([.stalls([Self.verdict(2, .stalled)])]))
        #expect(change.hostChanged && change.host.stalled)
        #expect(change.host.flags.contains([.reachable, .stalled]))
        #expect(change.host.state == .online, "a stalled path is still a path: online, reachable")
        #expect(change.changedInterfaces.map(\.name) == ["eth0"])
        #expect(change.changedInterfaces.first?.flags.contains(.stalled) == true)
        #expect(state.routingEpoch == epoch, "a verdict moves no route")
        #expect(state.snapshot.stallEvidence?.socketsFailing == 3)

        // The next poll with new figures but the same verdict: no change at all.
        var later = Self.verdict(2, .stalled, sockets: 9)
        later.evidence.sinceReceive = .seconds(58)
        #expect(state.apply([.stalls([later])]) == nil)
        #expect(state.hostStallEvidence?.sinceReceive == .seconds(58))

        // Cleared: one change back.
        let cleared = try Self.changed(state.apply([.stalls([Self.verdict(2, .flowing)])]))
        #expect(cleared.hostChanged && !cleared.host.stalled && !cleared.host.flags.contains(.stalled))
    }

    @Test func anotherUplinksStallShowsOnItsInterfaceOnly() throws {
        var state = Self.twoUplinks()
        let change = try Self.changed(state.apply([.stalls([Self.verdict(2, .flowing), Self.verdict(3, .stalled)])]))
        #expect(!change.hostChanged, "the host's path is eth0")
        #expect(change.changedInterfaces.map(\.name) == ["wlan0"])
        #expect(state.interface(named: "wlan0")?.flags.contains(.stalled) == true)
        #expect(state.interface(named: "eth0")?.flags.contains(.stalled) == false)
        #expect(state.snapshot.interfaces.first { $0.name == "wlan0" }?.json["stalled"] == .bool(true))
        #expect(renderStatus(state.snapshot).contains("Available: eth0, wlan0 (stalled)"), "\(renderStatus(state.snapshot))")
        // An address check through wlan0 carries it too; through eth0 it does not.
        #expect(state.evaluate(route: Self.defaultRoute(via: "198.51.100.1", dev: 3, metric: 600), family: .ipv4).flags.contains(.stalled))
        #expect(!state.evaluate(route: Self.defaultRoute(via: "192.0.2.1", dev: 2, metric: 100), family: .ipv4).flags.contains(.stalled))
    }

    @Test func aLinkThatLosesCarrierForgetsItsVerdict_andAnEmptyListForgetsAll() throws {
        var state = Self.twoUplinks()
        _ = state.apply([.stalls([Self.verdict(2, .stalled), Self.verdict(3, .stalled)])])
        #expect(state.host.stalled)
        _ = state.apply([.link(Self.link(3, "wlan0", carrier: false), device: nil)])
        _ = state.apply([.link(Self.link(3, "wlan0"), device: nil)])
        #expect(state.interface(named: "wlan0")?.flags.contains(.stalled) == false)
        let change = try Self.changed(state.apply([.stalls([])]))
        #expect(change.hostChanged && !state.host.stalled && state.hostStallEvidence == nil)
        // A verdict for a link that is not ready is dropped.
        _ = state.apply([.link(Self.link(3, "wlan0", carrier: false), device: nil), .stalls([Self.verdict(3, .stalled)])])
        #expect(state.verdicts.stalls.isEmpty)
    }

    /// The kernel's answer for one nameserver (RTM_GETROUTE): a host route through `index`, or
    /// of another type (local for the host's own addresses, blocking for a kill switch).
    static func nameserver(_ text: String, dev index: Int32?, type: RouteType = .unicast) -> NameserverRoute {
        let address = IPAddress(text)!
        return NameserverRoute(
            address: address,
            route: index.map { Route(destination: IPPrefix(address, length: 32), type: type, nextHops: [NextHop(interfaceIndex: $0)]) })
    }

    @Test func dnsTimeoutsCountAgainstTheLinksTheNameserversAreRoutedThrough() throws {
        var state = Self.twoUplinks()
        #expect(state.host.primaryInterface == "eth0")
        let viaEth0 = Self.nameserver("192.0.2.53", dev: 2)
        let viaWlan0 = Self.nameserver("203.0.113.53", dev: 3)
        let stub = Self.nameserver("127.0.0.53", dev: 1, type: .local)

        _ = state.apply([.nameservers([viaEth0, viaWlan0])])
        #expect(state.dnsTimeoutsByLink(consecutive: 4) == [2: 4, 3: 4], "every server's link had its chance")
        #expect(state.dnsTimeoutsByLink(consecutive: 0) == [:])

        _ = state.apply([.nameservers([viaWlan0])])
        #expect(state.dnsTimeoutsByLink(consecutive: 5) == [3: 5], "the primary carries no query")
        // Beside a server with a link, the stub's unknown upstreams blame no other link.
        _ = state.apply([.nameservers([stub, viaWlan0])])
        #expect(state.dnsTimeoutsByLink(consecutive: 5) == [3: 5])

        // No server through any link: the stub alone, servers with no route or a blocked one,
        // none at all. The host's own path is all there is to blame.
        for servers in [[stub], [Self.nameserver("198.51.100.53", dev: nil)], [Self.nameserver("198.51.100.53", dev: 3, type: .prohibit)], []] {
            _ = state.apply([.nameservers(servers)])
            #expect(state.dnsTimeoutsByLink(consecutive: 5) == [2: 5], "\(servers)")
        }
        // The primary moves to wlan0 (eth0's default route goes): so does the fallback.
        _ = state.apply([.routeRemoved(Self.defaultRoute(via: "192.0.2.1", dev: 2, metric: 100))])
        #expect(state.host.primaryInterface == "wlan0")
        #expect(state.dnsTimeoutsByLink(consecutive: 5) == [3: 5])
    }

    /// Through the evaluator into the interfaces' answer: a dead resolver reached over wlan0
    /// stalls wlan0, not the primary eth0, and so not the host.
    @Test func aSecondLinksDeadNameserverStallsThatLinkNotTheHost() throws {
        var state = Self.twoUplinks()
        _ = state.apply([.nameservers([Self.nameserver("203.0.113.53", dev: 3)])])
        var settings = StallSettings()
        settings.dnsTimeouts = 2
        var evaluator = StallEvaluator(settings: settings)
        _ = evaluator.poll(at: .zero, samples: [], addresses: state.addresses)
        let report = evaluator.poll(
            at: .seconds(20), samples: [], addresses: state.addresses, dnsTimeouts: state.dnsTimeoutsByLink(consecutive: 2))
        #expect(report.links.map(\.interfaceIndex) == [3] && report.links.first?.causes == .dnsTimeouts, "\(report.links)")
        _ = state.apply([.stalls(report.links)])
        #expect(state.interface(named: "wlan0")?.flags.contains(.stalled) == true)
        #expect(state.interface(named: "eth0")?.flags.contains(.stalled) == false)
        #expect(!state.host.stalled)
    }

    @Test func notOnlineIsNeverStalled() throws {
        var state = Self.twoUplinks()
        _ = state.apply([.stalls([Self.verdict(2, .stalled)])])
        _ = state.apply([.link(Self.link(2, "eth0", carrier: false), device: nil)])
        // eth0's default route stays chosen (linkdown): not online, and not stalled.
        #expect(state.host.state != .online && !state.host.stalled && !state.host.flags.contains(.stalled))
    }

    @Test func theFlagIsInTheLinuxRangeNotTheApplications() {
        #expect(ReachabilityFlags.stalled.rawValue == 1 << 15)
        #expect(ReachabilityFlags.application.intersection(.stalled).isEmpty)
        #expect(ReachabilityFlags(name: "stalled") == .stalled)
        #expect(([.reachable, .stalled, .isWired] as ReachabilityFlags).description == "reachable|stalled|isWired")
    }

    @Test func theSummaryAndTheFiguresSayIt() {
        var host = HostStatus(flags: [.reachable, .isWired, .stalled], state: .online, primaryInterface: "up0", stalled: true)
        var evidence = StallEvidence()
        evidence.socketsJudged = 14
        evidence.socketsFailing = 9
        evidence.owners = 1
        evidence.waiting = .milliseconds(12_400)
        evidence.sinceReceive = .milliseconds(38_400)
        let interfaces = [InterfaceStatus(index: 2, name: "up0", kind: .wired, flags: [.reachable, .isWired, .stalled], addresses: [])]
        #expect(renderSummary(host, interfaces: interfaces, stall: evidence)
            == "online via up0 (wired), but traffic is stalled: 9 sockets waiting for 12 s, nothing received")
        #expect(renderSummary(host, interfaces: interfaces) == "online via up0 (wired), but traffic is stalled")
        #expect(renderStallEvidence(stalled: true, evidence)
            == "Traffic: stalled; 14 sockets judged, 9 waiting in retransmission (1 owner) for 12 s, last receive 38 s ago, 0 DNS timeouts in a row")
        #expect(evidence.json["socketsFailing"] == .int(9) && evidence.json["secondsSinceReceive"] == .int(38))
        // Sockets that never received anything: said so, not "0 s".
        evidence.sinceReceive = nil
        #expect(renderStallEvidence(stalled: true, evidence).contains(", nothing ever received, "))
        #expect(evidence.json["secondsSinceReceive"] == .null)
        #expect(evidence.json["nameserverSilent"] == .bool(false))
        // One upload alone, corroborated by the nameserver's silence: the line says why one socket sufficed.
        var lone = StallEvidence()
        lone.socketsJudged = 1
        lone.socketsFailing = 1
        lone.owners = 1
        lone.waiting = .seconds(9)
        lone.nameserverSilent = true
        #expect(renderSummary(host, interfaces: interfaces, stall: lone)
            == "online via up0 (wired), but traffic is stalled: 1 socket waiting for 9 s, nothing received, the nameserver beyond the link silent too")
        #expect(renderStallEvidence(stalled: true, lone).hasSuffix(", 0 DNS timeouts in a row, the nameserver beyond the link silent"))
        #expect(lone.json["nameserverSilent"] == .bool(true))
        host.stalled = false
        host.flags.remove(.stalled)
        #expect(renderSummary(host, interfaces: interfaces, stall: evidence) == "online via up0 (wired)")
        #expect(ReachabilitySnapshot(generation: 1, host: host, interfaces: []).json["stalled"] == .bool(false))
    }
}

/// issue 42: `why`'s traffic layer gives only the figures there are: a stall of DNS timeouts
/// alone says so, never "0 of 0 socket(s) ... for 0s".
struct StallExplanationTests {
    static func explainHost(_ state: NetworkState) -> Explanation.Layer? {
        explain(state).layers.first { $0.name == .traffic }
    }

    static func explain(_ state: NetworkState) -> Explanation {
        let route = StallStateTests.defaultRoute(via: "192.0.2.1", dev: 2, metric: 100)
        return state.explain(target: "", lookups: [(IPAddress("198.51.100.200")!, .route(route))], uid: nil)
    }

    @Test func aStallOfDNSTimeoutsAloneNamesThemAndNoEmptySocketFigures() throws {
        var state = StallStateTests.twoUplinks()
        var evidence = StallEvidence()
        evidence.dnsTimeouts = 5
        _ = state.apply([.stalls([LinkStall(interfaceIndex: 2, verdict: .stalled, causes: .dnsTimeouts, evidence: evidence)])])
        let traffic = try #require(Self.explainHost(state))
        #expect(traffic.status == .broken)
        #expect(traffic.evidence == ["eth0: stalled: 5 DNS timeouts in a row"], "\(traffic.evidence)")

        _ = state.apply([.stalls([StallStateTests.verdict(2, .stalled)])])
        let sockets = try #require(Self.explainHost(state))
        #expect(sockets.evidence.first == "eth0: stalled: 3 connection(s) retransmit (3 open of 4 judged) with nothing back for 38s", "\(sockets.evidence)")
    }
}
