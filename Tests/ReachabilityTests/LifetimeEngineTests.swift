import Testing
@testable import Reachability

// The pure Engine with lifetimes (issue 30): routes and addresses that lapse at the time the
// adapter brings in, IPv4 link-local and optimistic addresses, and every live leg of a multipath
// route. No root, no sockets: the time is an input.

private enum Lifetime {
    static let carrier: LinkFlags = [.up, .running, .lowerUp]

    static func ethernet(_ index: Int32, _ name: String, carrier: Bool = true) -> Link {
        Link(
            index: index, name: name, flags: carrier ? Self.carrier : [.up], hardwareType: Link.hardwareEther,
            operState: carrier ? .up : .lowerLayerDown)
    }

    static func ip(_ text: String) -> IPAddress {
        guard let address = IPAddress(text) else { preconditionFailure("test literal \(text) is not an address") }
        return address
    }

    static func address(
        _ index: Int32, _ text: String, _ length: UInt8 = 64, scope: UInt8 = 0, flags: AddressFlags = [],
        validUntil: ContinuousClock.Instant? = nil
    ) -> Address {
        Address(interfaceIndex: index, prefix: IPPrefix(ip(text), length: length), scope: scope, flags: flags, validUntil: validUntil)
    }

    static func defaultRoute(_ hops: [(String?, Int32)], family: AddressFamily = .ipv6, expiry: ContinuousClock.Instant? = nil) -> Route {
        Route(
            destination: IPPrefix(family.any, length: 0), metric: family == .ipv6 ? 1024 : 0,
            nextHops: hops.map { NextHop(gateway: $0.0.map(ip), interfaceIndex: $0.1) }, expiry: expiry)
    }

    /// An IPv6-only host: eth0 (2) with a global address, and a router's default route that
    /// expires at `expiry` (an RA's router lifetime).
    static func ipv6Only(expiry: ContinuousClock.Instant?) throws -> NetworkState {
        var state = NetworkState()
        let change = state.apply([
            .link(ethernet(2, "eth0"), device: DeviceFacts()),
            .address(address(2, "2001:db8:1::2")),
            .route(defaultRoute([("fe80::1", 2)], expiry: expiry), replace: false),
        ])
        try #require(change?.host.state == .online)
        return state
    }
}

/// The change a batch must have produced (the `#require` macro cannot wrap a mutating call).
private func changed(_ change: ReachabilityChange?, sourceLocation: SourceLocation = #_sourceLocation) throws -> ReachabilityChange {
    try #require(change, sourceLocation: sourceLocation)
}

@Suite struct LifetimeEngineTests {
    @Test func aRoutersDefaultRoute_isUsedUntilItsExpiry_thenNot_atTheOneDeadlineTheTimerIsArmedFor() throws {
        let start = ContinuousClock.now
        var state = try Lifetime.ipv6Only(expiry: start + .seconds(8))
        #expect(state.nextExpiry == start + .seconds(8))
        #expect(state.nextLapse == start + .seconds(8))
        #expect(state.apply([.clock(start + .seconds(7))]) == nil, "before the deadline nothing moves")
        let epoch = state.routingEpoch
        let change = try changed(state.apply([.clock(start + .seconds(8))]))
        #expect(change.hostChanged && change.host.state == .local && change.host.pathFacts.reason == .noRoute)
        #expect(change.host.pathFacts.gateways.isEmpty)
        #expect(state.routingEpoch != epoch, "a lapse moves the routing")
        #expect(state.nextExpiry == nil, "nothing left to time: the timer is disarmed")
        // The kernel's garbage collection deletes it later: nothing more to say.
        #expect(state.apply([.routeRemoved(Lifetime.defaultRoute([("fe80::1", 2)]))]) == nil)
    }

    @Test func aRouteRenewed_movesItsDeadline_andARouteThatArrivesLapsed_goesWithTheNextClock() throws {
        let start = ContinuousClock.now
        var state = try Lifetime.ipv6Only(expiry: start + .seconds(8))
        // A dump taken at the deadline shows the lifetime an RA renewed: the route stays.
        let renewed = Lifetime.defaultRoute([("fe80::1", 2)], expiry: start + .seconds(14))
        #expect(state.apply([.route(renewed, replace: false), .clock(start + .seconds(8))]) == nil)
        #expect(state.nextExpiry == start + .seconds(14))
        // A dump after the router went silent: the kernel still lists it, two seconds past; it lapses in the same batch.
        let past = Lifetime.defaultRoute([("fe80::1", 2)], expiry: start + .seconds(14))
        let change = try changed(state.apply([.route(past, replace: false), .clock(start + .seconds(16))]))
        #expect(change.host.state == .local)
        // Made permanent (`ip route change ... ` without expiry): no deadline held.
        _ = state.apply([.route(Lifetime.defaultRoute([("fe80::1", 2)]), replace: false)])
        #expect(state.host.state == .online && state.nextExpiry == nil)
    }

    @Test func anAddressPastItsValidLifetime_isGone_andTheEarliestOfRouteAndAddressIsTheDeadline() throws {
        let start = ContinuousClock.now
        var state = try Lifetime.ipv6Only(expiry: start + .seconds(1800))
        let slaac = Lifetime.address(2, "2001:db8:1::2", validUntil: start + .seconds(20))
        _ = state.apply([.address(slaac)])
        #expect(state.nextExpiry == start + .seconds(20))
        let change = try changed(state.apply([.clock(start + .seconds(20))]))
        #expect(change.host.state != .online && change.host.pathFacts.reason == .noAddress)
        #expect(change.changedInterfaces.first?.addresses.isEmpty == true)
        #expect(state.nextExpiry == start + .seconds(1800))
        #expect(state.apply([.addressRemoved(slaac)]) == nil, "the kernel's deletion, later, is no news")
        // Renewed (the kernel says so for addresses), then made forever: no deadline.
        _ = state.apply([.address(Lifetime.address(2, "2001:db8:1::2", validUntil: start + .seconds(40)))])
        #expect(state.host.state == .online && state.nextLapse == start + .seconds(40))
        _ = state.apply([.address(Lifetime.address(2, "2001:db8:1::2"))])
        #expect(state.nextLapse == start + .seconds(1800))
        _ = state.apply([.linkRemoved(index: 2)])
        #expect(state.nextExpiry == nil, "a link's routes and addresses leave the deadlines with it")
    }

    @Test func aDumpAfterHeldFacts_keepsWhatOnlyTheyCarry_andSettlesTheRest_asOneChange() throws {
        let start = ContinuousClock.now
        var state = try Lifetime.ipv6Only(expiry: start + .seconds(8))
        _ = state.apply([.clock(start + .seconds(9))])
        #expect(state.host.state == .local)
        // The router is back: its PREF64 option was read, then the dump shows the route renewed.
        let prefix = AnnouncedNat64Prefix(
            interfaceIndex: 2, router: Lifetime.ip("fe80::1"), prefix: IPPrefix(Lifetime.ip("64:ff9b::"), length: 96), lifetime: .seconds(600))
        let dump = NetworkDump(
            links: [(Lifetime.ethernet(2, "eth0"), nil)], addresses: [Lifetime.address(2, "2001:db8:1::2")],
            routes: [Lifetime.defaultRoute([("fe80::1", 2)], expiry: start + .seconds(39))])
        let held: [NetworkEvent] = [.nat64Prefix(prefix, received: start + .seconds(9)), .address(Lifetime.address(2, "2001:db8:9::2"))]
        let change = try changed(state.replace(with: dump, after: held, then: [.clock(start + .seconds(9))]))
        #expect(change.host.state == .online && change.host.nat64Prefix?.prefix == prefix.prefix)
        #expect(change.changedInterfaces.isEmpty, "the held address the dump lacks never showed")
        #expect(state.snapshot.interfaces.first?.addresses.count == 1)
        #expect(state.nextLapse == start + .seconds(39))
    }

    @Test func ipv4LinkLocalOnly_isLocal_noAddress_withoutIPv4Support() throws {
        var state = NetworkState()
        // avahi-autoipd: 169.254.x.x/16 scope link, `default dev eth0 scope link`.
        let change = try changed(state.apply([
            .link(Lifetime.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Lifetime.address(2, "169.254.12.34", 16, scope: Address.scopeLink)),
            .route(Lifetime.defaultRoute([(nil, 2)], family: .ipv4), replace: false),
        ]))
        #expect(change.host.state == .local)
        #expect(change.host.pathFacts.reason == .noAddress)
        #expect(!change.host.pathFacts.supportsIPv4)
        // The same address with universe scope (added by hand) is no more routable (RFC 3927).
        var unscoped = NetworkState()
        let other = try changed(unscoped.apply([
            .link(Lifetime.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Lifetime.address(2, "169.254.12.34", 16)),
            .route(Lifetime.defaultRoute([(nil, 2)], family: .ipv4), replace: false),
        ]))
        #expect(other.host.state == .local && other.host.pathFacts.reason == .noAddress)
    }

    @Test func anOptimisticAddress_isUsable_whileATentativeOneIsNot() throws {
        let tentative = AddressFlags(rawValue: 0x40)
        #expect(!Lifetime.address(2, "2001:db8:1::2", flags: tentative).isUsable)
        #expect(Lifetime.address(2, "2001:db8:1::2", flags: [tentative, .optimistic]).isUsableBeyondLink)
        #expect(!Lifetime.address(2, "2001:db8:1::2", flags: [tentative, .optimistic, .dadFailed]).isUsable)
        var state = NetworkState()
        let change = try changed(state.apply([
            .link(Lifetime.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Lifetime.address(2, "2001:db8:1::2", flags: [tentative, .optimistic])),
            .route(Lifetime.defaultRoute([("fe80::1", 2)]), replace: false),
        ]))
        #expect(change.host.state == .online && change.host.pathFacts.supportsIPv6)
    }

    @Test func aMultipathDefault_namesEveryLiveLeg_theKernelsPickFirst() throws {
        var state = NetworkState()
        let multipath = Lifetime.defaultRoute([("192.0.2.1", 2), ("198.51.100.1", 3)], family: .ipv4)
        _ = state.apply([
            .link(Lifetime.ethernet(2, "eth0"), device: DeviceFacts()), .link(Lifetime.ethernet(3, "eth1"), device: DeviceFacts()),
            .address(Lifetime.address(2, "192.0.2.2", 24)), .address(Lifetime.address(3, "198.51.100.2", 24)),
            .route(multipath, replace: false),
        ])
        let both = [Lifetime.ip("192.0.2.1"), Lifetime.ip("198.51.100.1")]
        #expect(state.host.pathFacts.gateways == both, "the main table's route, without the kernel's answers")
        // The kernel's answer names the leg its hash picked (here the second), as a host route.
        let answer = Route(destination: IPPrefix(Lifetime.ip("193.0.14.129"), length: 32), nextHops: [NextHop(gateway: both[1], interfaceIndex: 3)])
        _ = state.apply([.internetPath(family: .ipv4, route: answer), .internetPath(family: .ipv6, route: nil)])
        #expect(state.host.pathFacts.gateways == [both[1], both[0]])
        #expect(state.host.primaryInterface == "eth1")
        // The picked leg loses carrier; the kernel keeps answering with it: the other carries on.
        let change = try changed(state.apply([.link(Lifetime.ethernet(3, "eth1", carrier: false), device: nil)]))
        #expect(change.host.state == .online && change.host.primaryInterface == "eth0")
        #expect(change.host.pathFacts.gateways == [both[0]])
    }
}
