import Testing
@testable import Reachability
@testable import ReachabilityEngine

/// The Engine's rule for a gateway's FAILED (issue 49): one FAILED is a question, not a verdict.
/// The gateway is resolved afresh (`gatewaysToResolve`, which the core's `GatewayRechecks`
/// sends), and only when `freshResolutions` more FAILED in a row is it unreachable; any answer
/// in between starts the count again. The network's name follows the kernel's own resolutions
/// (and an administrator's entries), never a claim nobody asked for.
@Suite struct GatewayFreshResolutionTests {
    static let gateway = Fact.ip("192.0.2.1")
    static let real: [UInt8] = [0x02, 0x00, 0x5e, 0x10, 0x00, 0x01]
    static let forged: [UInt8] = [0x02, 0xba, 0xd0, 0x00, 0x00, 0x66]

    static func neighbour(_ state: NeighbourState, _ mac: [UInt8] = [], confirmedAge: Duration? = nil, received: ContinuousClock.Instant? = nil) -> NetworkEvent {
        .neighbour(Neighbour(interfaceIndex: 2, address: gateway, state: state, linkLayerAddress: mac, confirmedAge: confirmedAge, received: received))
    }

    /// Online, its gateway answered once (the kernel's first resolution).
    static func answered() -> NetworkState {
        var state = GatewayNeighbourTests.online()
        _ = state.apply([neighbour(.reachable, real)])
        return state
    }

    @Test func oneFailed_isResolvedAfresh_andUnreachableOnlyWhenTheFreshOnesFailToo() throws {
        var state = Self.answered()
        #expect(state.gatewaysToResolve.isEmpty)
        let epoch = state.routingEpoch
        #expect(state.apply([Self.neighbour(.failed)]) == nil, "the first FAILED shows nothing")
        #expect(state.host.state == .online && state.routingEpoch == epoch)
        #expect(state.gatewaysToResolve == [GatewayToResolve(interfaceIndex: 2, address: Self.gateway, failures: 1)])
        for failures in 2...NetworkState.freshResolutions {
            #expect(state.apply([Self.neighbour(.failed)]) == nil)
            #expect(state.gatewaysToResolve.first?.failures == failures)
        }
        let verdictFound = state.apply([Self.neighbour(.failed)])
        let verdict = try #require(verdictFound)
        #expect(verdict.host.state == .local && verdict.host.pathFacts.reason == .gatewayUnreachable)
        #expect(state.routingEpoch != epoch)
        // Still asked about (slower), so that a router back on the link brings the host back.
        #expect(state.gatewaysToResolve.first?.failures == NetworkState.freshResolutions + 1)
        // INCOMPLETE (a dump in the middle of a resolution) keeps the verdict.
        #expect(state.apply([Self.neighbour(.incomplete)]) == nil)
        #expect(state.gatewaysToResolve.isEmpty, "resolving already: nothing to ask")
        let backFound = state.apply([Self.neighbour(.reachable, Self.real)])
        let back = try #require(backFound)
        #expect(back.host.state == .online && state.gatewaysToResolve.isEmpty)
    }

    @Test func aGatewayThatNeverAnswered_isTakenAtItsWord() throws {
        var state = GatewayNeighbourTests.online()
        let verdictFound = state.apply([Self.neighbour(.failed)])
        let verdict = try #require(verdictFound, "no claim came first: nothing forged can be behind it")
        #expect(verdict.host.pathFacts.reason == .gatewayUnreachable)
        #expect(state.gatewaysToResolve.first?.failures == NetworkState.freshResolutions + 1, "still asked, slower")
    }

    @Test func anAnswerBetweenFailures_startsTheCountAgain() {
        var state = Self.answered()
        for _ in 0..<10 {
            for _ in 0..<NetworkState.freshResolutions { _ = state.apply([Self.neighbour(.failed)]) }
            _ = state.apply([Self.neighbour(.stale, Self.real)])
        }
        #expect(state.host.state == .online, "never three FAILED in a row")
    }

    @Test func aDumpsCopyOfAKnownFailure_isNoFreshFailure() {
        var state = Self.answered()
        _ = state.apply([Self.neighbour(.failed)])
        var dump = NetworkDump(
            links: [(Fact.ethernet(2, "eth0"), DeviceFacts())], addresses: [Fact.v4(2, "192.0.2.10")],
            routes: [Fact.defaultV4(via: "192.0.2.1", dev: 2)])
        dump.neighbours = [Neighbour(interfaceIndex: 2, address: Self.gateway, state: .failed)]
        for _ in 0..<5 { _ = state.replace(with: dump) }
        #expect(state.gatewaysToResolve.first?.failures == 1, "five resyncs saw the one FAILED")
        #expect(state.host.state == .online)
    }

    @Test func aClaimNobodyAskedFor_neverRenamesTheNetwork_theKernelsResolutionDoes() {
        var state = NetworkIdentityTests.online()
        _ = state.apply([Self.neighbour(.reachable, Self.real)])
        let name = state.host.networkID
        #expect(!name.isEmpty)
        // A host on the link claims the gateway's address: an ARP request or a gratuitous reply
        // (STALE), a unicast reply (REACHABLE), one after the other.
        _ = state.apply([Self.neighbour(.stale, Self.forged)])
        #expect(state.host.networkID == name)
        _ = state.apply([Self.neighbour(.reachable, Self.forged)])
        #expect(state.host.networkID == name)
        // The kernel's resolution of the forged MAC failed; its fresh one finds the real router.
        _ = state.apply([Self.neighbour(.failed)])
        _ = state.apply([Self.neighbour(.reachable, Self.real)])
        #expect(state.host.networkID == name)
        // The kernel probes the address it holds by unicast (PROBE): another MAC's reply is a
        // claim, not its answer.
        _ = state.apply([Self.neighbour(.probe, Self.real)])
        _ = state.apply([Self.neighbour(.reachable, Self.forged)])
        #expect(state.host.networkID == name)
        // Another router answering the kernel's broadcast resolution (after FAILED): another network.
        _ = state.apply([Self.neighbour(.failed)])
        _ = state.apply([Self.neighbour(.reachable, Self.forged)])
        let other = state.host.networkID
        #expect(other != name && !other.isEmpty)
        // An administrator's entry counts at once.
        _ = state.apply([Self.neighbour(.permanent, Self.real)])
        #expect(state.host.networkID == name)
    }

    @Test func anEntryTheKernelDrops_keepsTheNameItGave_untilAnotherRouterAnswersTheKernel() {
        var state = NetworkIdentityTests.online()
        _ = state.apply([Self.neighbour(.reachable, Self.real)])
        let name = state.host.networkID
        #expect(!name.isEmpty)
        // Garbage collection (a host filling the kernel's table can force it): no entry, same name.
        #expect(state.apply([.neighbourRemoved(Neighbour(interfaceIndex: 2, address: Self.gateway, state: .stale))]) == nil)
        #expect(state.host.networkID == name && state.gatewayState(Self.gateway, on: 2) == nil)
        // A claim making a new entry (an ARP request from the gateway's address: STALE) renames nothing.
        _ = state.apply([Self.neighbour(.stale, Self.forged)])
        #expect(state.host.networkID == name)
        // A FAILED after it is one failure of a gateway that answered before, not a verdict.
        _ = state.apply([Self.neighbour(.failed)])
        #expect(state.host.state == .online)
        // Dropped again, then the kernel's own resolution of a new entry finds another router.
        _ = state.apply([.neighbourRemoved(Neighbour(interfaceIndex: 2, address: Self.gateway, state: .failed))])
        _ = state.apply([Self.neighbour(.reachable, Self.forged)])
        #expect(state.host.networkID != name && !state.host.networkID.isEmpty)
        // The route going takes everything.
        _ = state.apply([.routeRemoved(Fact.defaultV4(via: "192.0.2.1", dev: 2))])
        #expect(state.gatewayNeighbours.isEmpty)
    }

    @Test func theExplanation_saysHowFreshTheAnswerIs_andHowManyResolutionsFailed() {
        var state = Self.answered()
        let now = ContinuousClock.now
        _ = state.apply([Self.neighbour(.reachable, Self.real, confirmedAge: .milliseconds(1500), received: now - .seconds(10))])
        let route = RouteLookup.route(Fact.defaultV4(via: "192.0.2.1", dev: 2))
        func evidence() -> [String] {
            state.explain(target: "", lookups: [(GatewayNeighbourTests.internet, route)], uid: nil, now: now)[.gateway]?.evidence ?? []
        }
        #expect(evidence() == ["192.0.2.1 on eth0: REACHABLE, answered 11s ago"])
        _ = state.apply([Self.neighbour(.failed, confirmedAge: .seconds(100), received: now)])
        #expect(evidence() == ["192.0.2.1 on eth0: FAILED, resolving it afresh (1 of 3 failed), answered 11s ago"], "a FAILED's own age is not an answer")
        for _ in 0..<NetworkState.freshResolutions { _ = state.apply([Self.neighbour(.failed)]) }
        #expect(evidence() == ["192.0.2.1 on eth0: FAILED, and 2 fresh resolutions failed too, answered 11s ago"])
    }
}
