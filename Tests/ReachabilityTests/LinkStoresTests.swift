import Testing
@testable import Reachability

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
        #expect(hints.take(.linkGone(2)) == .none && hints.dhcp.isEmpty)
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
        #expect(verdicts.take(.linkDown(3), isReady: ready) == .none && verdicts.stalls.isEmpty && verdicts.uplinks.isEmpty)
    }
}
