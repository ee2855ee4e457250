import Testing
@testable import Reachability
@testable import ReachabilityEngine

/// The state's stores (LinkStores), each alone: its events in, what it keeps and the links it
/// says moved out. Pure: no kernel, no state around them.
@Suite struct LinkStoresTests {
    @Test func radiosMoveALinkOnlyWhenItsSwitchesChange() {
        var radios = Radios()
        #expect(radios.take(.switches(index: 3, [])) == .none, "on, as a link absent is")
        #expect(radios.take(.switches(index: 3, .soft)) == LinksMoved(indices: [3]))
        #expect(radios.take(.switches(index: 3, .soft)) == .none)
        #expect(radios.take(.switches(index: 3, [.soft, .hard])) == LinksMoved(indices: [3]) && radios.blocks[3] == [.soft, .hard])
        #expect(radios.take(.switches(index: 3, [])) == LinksMoved(indices: [3]) && radios.blocks.isEmpty)
        _ = radios.take(.switches(index: 4, .hard))
        #expect(radios.take(.linkGone(4)) == .none && radios.blocks.isEmpty)
    }

    @Test func meteredHintsMoveDHCPsLinkByIndexAndNetworkManagersByName() {
        var hints = MeteredHints()
        #expect(hints.take(.dhcp(index: 2, false)) == .none)
        #expect(hints.take(.dhcp(index: 2, true)) == LinksMoved(indices: [2]) && hints.dhcp == [2])
        #expect(hints.take(.dhcp(index: 2, true)) == .none)
        #expect(hints.take(.networkManager(interface: "wwan0", .unknown)) == .none, "unknown is nothing said")
        #expect(hints.take(.networkManager(interface: "wwan0", .yes)) == LinksMoved(names: ["wwan0"]))
        #expect(hints.take(.networkManager(interface: "wwan0", .yes)) == .none)
        #expect(hints.take(.networkManager(interface: "wwan0", .unknown)) == LinksMoved(names: ["wwan0"]) && hints.networkManager.isEmpty)
        hints.forget(2)
        #expect(hints.dhcp.isEmpty)
    }

    static func stall(_ index: Int32, _ verdict: StallVerdict) -> LinkStall {
        LinkStall(interfaceIndex: index, verdict: verdict, evidence: StallEvidence())
    }

    @Test func verdictsKeepReadyLinksOnlyAndMoveTheLinksWhoseStallFlipped() {
        var verdicts = Verdicts()
        let ready: (Int32) -> Bool = { $0 != 9 }
        let limited = ConnectivityStatus(verdict: .limited, detail: "test")
        #expect(verdicts.take(.connectivity(limited), isReady: ready) == .none && verdicts.connectivity == limited)
        #expect(verdicts.take(.uplink(index: 3, .full), isReady: ready) == .none && verdicts.uplinks == [3: .full])
        _ = verdicts.take(.uplink(index: 9, .full), isReady: ready)
        #expect(verdicts.uplinks[9] == nil, "a link that is not ready carries no verdict")
        _ = verdicts.take(.uplink(index: 3, .unknown), isReady: ready)
        #expect(verdicts.uplinks.isEmpty, "unknown forgets")

        #expect(verdicts.take(.stalls([Self.stall(2, .stalled), Self.stall(3, .flowing), Self.stall(9, .stalled)]), isReady: ready)
            == LinksMoved(indices: [2]))
        #expect(Set(verdicts.stalls.keys) == [2, 3])
        #expect(verdicts.take(.stalls([Self.stall(2, .stalled), Self.stall(3, .stalled)]), isReady: ready) == LinksMoved(indices: [3]))
        #expect(verdicts.take(.stalls([Self.stall(3, .stalled)]), isReady: ready) == LinksMoved(indices: [2]), "no evidence: not stalled")
        _ = verdicts.take(.uplink(index: 3, .full), isReady: ready)
        verdicts.forget(3)
        #expect(verdicts.stalls.isEmpty && verdicts.uplinks.isEmpty)
    }

    /// eth0 (index 2) ready, eth1 (index 3) without carrier; 192.0.2.1 eth0's default router.
    static var links: Announcements.Links {
        var entries: [Int32: NetworkState.LinkEntry] = [:]
        for link in [Fact.ethernet(2, "eth0"), Fact.ethernet(3, "eth1", carrier: false)] {
            entries[link.index] = NetworkState.LinkEntry(
                link: link, device: DeviceFacts(), classification: Classifier().classify(link, device: DeviceFacts()))
        }
        return Announcements.Links(entries: entries, defaultRouters: [LinkRouter(interfaceIndex: 2, address: Fact.ip("192.0.2.1")): 1])
    }

    @Test func announcementsAreShownAtTheBatchsEndOnReadyLinksAndGoWithTheirRouter() {
        var store = Announcements()
        let (links, now) = (Self.links, ContinuousClock.now)
        let portal = { (index: Int32) in AnnouncedPortal(interfaceIndex: index, router: Fact.ip("192.0.2.1"), uri: "https://portal.example/") }
        #expect(store.take(.portal(portal(3), received: now), links: links) == .none)
        #expect(store.take(.batchEnded, links: links) == .none && store.routers.isEmpty, "a link without carrier keeps nothing")
        #expect(store.take(.portal(portal(2), received: now), links: links) == .none, "heard, not yet shown")
        #expect(store.portal(on: 2, links: links) == nil)
        #expect(store.take(.batchEnded, links: links) == LinksMoved(indices: [2]))
        #expect(store.portal(on: 2, links: links)?.uri == "https://portal.example/" && store.held == 1)
        #expect(store.take(.routerGone(index: 2, Fact.ip("192.0.2.1")), links: links) == LinksMoved(indices: [2]))
        #expect(store.portal(on: 2, links: links) == nil, "the router's word went with its route, at once")
    }

    @Test func dhcpPortalsMoveTheirNamesAndAnAnswerHoldsOnlyForTheURIAnnounced() {
        var store = Announcements()
        let links = Self.links
        let dhcp = DHCPPortal(interfaceName: "eth0", uri: "https://dhcp.example/api", source: .dhcpv4)
        #expect(store.take(.captivePortal(.dhcp([dhcp])), links: links) == LinksMoved(names: ["eth0"]))
        #expect(store.take(.captivePortal(.dhcp([dhcp])), links: links) == .none)
        #expect(store.portal(on: 2, links: links)?.source == .dhcpv4)
        let answer = { (api: String) in
            PortalAnswer(interfaceIndex: 2, api: api, session: PortalSession(captive: true), endingAt: ContinuousClock.now + .seconds(60))
        }
        _ = store.take(.captivePortal(.answer(index: 2, api: "https://other.example/api", answer("https://other.example/api"))), links: links)
        #expect(store.answers.isEmpty, "an answer for a URI the link does not announce")
        _ = store.take(.captivePortal(.answer(index: 2, api: dhcp.uri, answer(dhcp.uri))), links: links)
        #expect(store.answers[2]?.session.captive == true && store.nextDeadline != nil)
        _ = store.take(.clock(ContinuousClock.now + .seconds(61)), links: links)
        #expect(store.answers[2]?.session.ending == true && store.nextDeadline == nil, "its lead time began")
        _ = store.take(.linkGone(2), links: links)
        #expect(store.answers.isEmpty)
        #expect(store.take(.captivePortal(.dhcp([])), links: links) == LinksMoved(names: ["eth0"]))
    }

    @Test func refusalsAreKeptUpToTheirBoundUntilTaken() {
        var store = Announcements()
        let refusal = RefusedAnnouncement(option: .nat64Prefix, interfaceIndex: 2, router: Fact.ip("fe80::1"), value: "64:ff9b::/95", reason: "test")
        for _ in 0..<(Announcements.refusalsKept + 5) { _ = store.take(.refused(refusal), links: Self.links) }
        #expect(store.takeRefusals().count == Announcements.refusalsKept)
        #expect(store.takeRefusals().isEmpty)
    }
}
