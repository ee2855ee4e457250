import Testing
@testable import Reachability

/// The gateways' ARP/ND state as a fact of the pure Engine (`NetworkEvent.neighbour`): only a
/// gateway FAILED for good (its fresh resolutions failed too: `GatewayFreshResolutionTests`) on
/// every live hop makes the host `gatewayUnreachable`; STALE, DELAY and PROBE are a live
/// gateway's ordinary states. And the
/// explanation (`NetworkState.explain`) names the first broken layer from the same facts.
@Suite struct GatewayNeighbourTests {
    static let gateway = Fact.ip("192.0.2.1")

    static func online() -> NetworkState {
        var state = NetworkState()
        _ = state.apply([
            .link(Fact.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Fact.v4(2, "192.0.2.10")),
            .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false),
        ])
        return state
    }

    static func neighbour(_ state: NeighbourState, _ address: IPAddress = gateway, on index: Int32 = 2) -> NetworkEvent {
        .neighbour(Neighbour(interfaceIndex: index, address: address, state: state))
    }

    /// The kernel's FAILED, and as many again as fresh resolutions are asked for: for good.
    static func failedForGood(_ address: IPAddress = gateway) -> [NetworkEvent] {
        Array(repeating: neighbour(.failed, address), count: NetworkState.freshResolutions + 1)
    }

    @Test func aFailedGateway_takesTheHostOffline_withAReasonOfItsOwn() throws {
        var state = Self.online()
        #expect(state.host.state == .online)
        #expect(Path(snapshot: state.snapshot, restriction: Path.Restriction(requiredInterfaceType: .wired)).status == .satisfied)
        let epoch = state.routingEpoch
        let changeFound = state.apply(Self.failedForGood())
        let change = try #require(changeFound)
        #expect(change.host.state == .local)
        #expect(!change.host.flags.contains(.reachable))
        #expect(change.host.pathFacts.reason == .gatewayUnreachable)
        #expect(change.host.availableInterfaces.isEmpty, "a link whose gateway is dead carries nothing")
        // A monitor restricted to wired links sees no usable uplink either.
        #expect(Path(snapshot: state.snapshot, restriction: Path.Restriction(requiredInterfaceType: .wired)).status == .unsatisfied)
        #expect(state.routingEpoch != epoch, "an address check's answer moved")
        #expect(state.evaluate(lookup: .route(Fact.defaultV4(via: "192.0.2.1", dev: 2)), for: Fact.ip("198.51.100.7"), target: "x").reason == .gatewayUnreachable)
        // The kernel tries again on the next packet: INCOMPLETE after FAILED is still failing.
        #expect(state.apply([Self.neighbour(.incomplete)]) == nil)
        #expect(state.host.pathFacts.reason == .gatewayUnreachable)
        // An answer at last.
        let backFound = state.apply([Self.neighbour(.reachable)])
        let back = try #require(backFound)
        #expect(back.host.state == .online && back.host.pathFacts.reason == nil && back.host.availableInterfaces == ["eth0"])
    }

    @Test(arguments: [NeighbourState.stale, .delay, .probe, .incomplete, .reachable, .permanent, .noARP, .none])
    func everyOtherState_isALiveGateway(_ nud: NeighbourState) {
        var state = Self.online()
        let epoch = state.routingEpoch
        #expect(state.apply([Self.neighbour(nud)]) == nil)
        #expect(state.host.state == .online)
        #expect(state.routingEpoch == epoch, "no flip, no re-ask of the watches")
    }

    @Test func theEntryGoing_forgetsTheFailure() throws {
        var state = Self.online()
        _ = state.apply(Self.failedForGood())
        let changeFound = state.apply([.neighbourRemoved(Neighbour(interfaceIndex: 2, address: Self.gateway, state: .failed))])
        let change = try #require(changeFound)
        #expect(change.host.state == .online)
    }

    @Test func oneLiveLegOfAMultipathRoute_keepsTheHostOnline() throws {
        var state = NetworkState()
        _ = state.apply([
            .link(Fact.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Fact.v4(2, "192.0.2.10")),
            .route(Route(destination: IPPrefix(.anyV4, length: 0), metric: 100, nextHops: [
                NextHop(gateway: Fact.ip("192.0.2.1"), interfaceIndex: 2), NextHop(gateway: Fact.ip("192.0.2.254"), interfaceIndex: 2),
            ]), replace: false),
        ])
        _ = state.apply(Self.failedForGood())
        #expect(state.host.state == .online)
        _ = state.apply(Self.failedForGood(Fact.ip("192.0.2.254")))
        #expect(state.host.pathFacts.reason == .gatewayUnreachable)
    }

    @Test func onlyGatewaysAreHeld_andTheirNumberIsBounded() {
        var state = Self.online()
        // A host on the link that never answers: not a gateway, nothing kept, nothing changes.
        for last in 2...250 { _ = state.apply([Self.neighbour(.failed, Fact.ip("192.0.2.\(last)"))]) }
        #expect(state.host.state == .online)
        #expect(state.gatewayNeighbours.count == 0)
        // Gateways of a thousand default routes (table after table): at most the bound.
        var routes: [NetworkEvent] = []
        for table in 1...1000 { routes.append(.route(Fact.defaultV4(via: "10.\(table / 250).\(table % 250).1", dev: 2, table: UInt32(table)), replace: false)) }
        _ = state.apply(routes)
        for table in 1...1000 { _ = state.apply([Self.neighbour(.failed, Fact.ip("10.\(table / 250).\(table % 250).1"))]) }
        #expect(state.gatewayNeighbours.count == NetworkState.gatewayNeighboursKept)
        // A gateway whose route goes is forgotten with it.
        _ = state.apply([Self.neighbour(.failed)])
        _ = state.apply([.routeRemoved(Fact.defaultV4(via: "192.0.2.1", dev: 2))])
        #expect(state.gatewayState(Self.gateway, on: 2) == nil)
    }

    // MARK: explanations

    static let internet = Fact.ip("193.0.14.129")

    static func explain(_ state: NetworkState, _ lookup: RouteLookup) -> Explanation {
        state.explain(target: "", lookups: [(internet, lookup)], uid: nil)
    }

    @Test func anOnlineHost_hasNothingBroken() {
        let explanation = Self.explain(Self.online(), .route(Fact.defaultV4(via: "192.0.2.1", dev: 2)))
        #expect(explanation.brokenLayer == nil)
        #expect(explanation.layers.map(\.name) == Explanation.hostLayers)
        #expect(explanation[.link]?.evidence == ["eth0: up, carrier, operstate up"])
    }

    @Test func eachLayer_isNamedFirstWhenItAloneFails() {
        let route = RouteLookup.route(Fact.defaultV4(via: "192.0.2.1", dev: 2))
        var state = Self.online()
        _ = state.apply(Self.failedForGood())
        #expect(Self.explain(state, route).brokenLayer == .gateway)
        #expect(Self.explain(state, route)[.gateway]?.evidence == [
            "192.0.2.1 on eth0: FAILED, never answered",
        ])

        state = Self.online()
        _ = state.apply([.link(Fact.ethernet(2, "eth0", carrier: false), device: nil)])
        #expect(Self.explain(state, route).brokenLayer == .link)
        #expect(Self.explain(state, route)[.link]?.fix.contains("no carrier") == true)

        state = Self.online()
        #expect(Self.explain(state, .failed(errno: 101)).brokenLayer == .route)  // ENETUNREACH
        #expect(Self.explain(state, .failed(errno: 13)).brokenLayer == .route)  // EACCES: prohibit
        #expect(Self.explain(state, .failed(errno: 13))[.route]?.evidence.first?.contains("prohibit") == true)

        state = Self.online()
        _ = state.apply([.addressRemoved(Fact.v4(2, "192.0.2.10")), .address(Fact.v6(2, "2001:db8::10", flags: [.tentative]))])
        let v6 = RouteLookup.route(Fact.defaultV6(via: "fe80::1", dev: 2))
        let tentative = state.explain(target: "", lookups: [(Fact.ip("2001:7fd::1"), v6)], uid: nil)
        #expect(tentative.brokenLayer == .address)
        #expect(tentative[.address]?.evidence == ["2001:db8::10/64 (tentative)"])
        #expect(tentative[.address]?.fix.contains("tentative") == true)
    }
}
