#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Testing
@testable import Reachability
@testable import ReachabilityEngine

// The pure Engine (`NetworkState`) fed synthetic kernel facts: no root, no sockets, no clock.
// Every test builds its own state, so the suite runs in parallel.

// MARK: - Facts

/// Builders for the facts the kernel would send, with the values `ip` shows on a real host.
enum Fact {
    static let broadcast = LinkFlags(rawValue: 0x2)
    static let multicast = LinkFlags(rawValue: 0x1000)
    static let permanent = AddressFlags(rawValue: 0x80)
    /// UP | BROADCAST | RUNNING | MULTICAST | LOWER_UP: an Ethernet NIC with carrier.
    static let carrierFlags: LinkFlags = [.up, broadcast, .running, multicast, .lowerUp]
    /// UP | BROADCAST | MULTICAST: admin up, NO-CARRIER (no RUNNING, no LOWER_UP).
    static let noCarrierFlags: LinkFlags = [.up, broadcast, multicast]
    /// BROADCAST | MULTICAST: `ip link set X down`.
    static let adminDownFlags: LinkFlags = [broadcast, multicast]
    /// IFF_PROMISC: tcpdump started; nothing reachability cares about.
    static let promiscuous = LinkFlags(rawValue: 0x100)

    static func ethernet(
        _ index: Int32, _ name: String, carrier: Bool = true, infoKind: String? = nil, master: Int32? = nil
    ) -> Link {
        Link(
            index: index, name: name, flags: carrier ? carrierFlags : noCarrierFlags,
            hardwareType: Link.hardwareEther, operState: carrier ? .up : .lowerLayerDown,
            infoKind: infoKind, master: master)
    }

    static func adminDown(_ index: Int32, _ name: String) -> Link {
        Link(index: index, name: name, flags: adminDownFlags, hardwareType: Link.hardwareEther, operState: .down)
    }

    static func ip(_ text: String) -> IPAddress {
        guard let address = IPAddress(text) else { preconditionFailure("test literal \(text) is not an address") }
        return address
    }

    /// A global IPv4 address (IFA_F_PERMANENT, scope universe).
    static func v4(_ index: Int32, _ text: String, _ length: UInt8 = 24) -> Address {
        Address(interfaceIndex: index, prefix: IPPrefix(ip(text), length: length), scope: 0, flags: permanent)
    }

    /// An IPv6 address; fe80::/10 gets link scope as the kernel gives it.
    static func v6(_ index: Int32, _ text: String, _ length: UInt8 = 64, flags: AddressFlags = permanent) -> Address {
        let address = ip(text)
        return Address(
            interfaceIndex: index, prefix: IPPrefix(address, length: length),
            scope: address.isLinkLocal ? Address.scopeLink : 0, flags: flags)
    }

    static func defaultV4(
        via gateway: String?, dev index: Int32?, metric: UInt32 = 100, table: UInt32 = Route.mainTable,
        type: RouteType = .unicast
    ) -> Route {
        Route(
            table: table, destination: IPPrefix(.anyV4, length: 0), type: type, metric: metric,
            nextHops: [NextHop(gateway: gateway.map(ip), interfaceIndex: index)])
    }

    static func defaultV6(via gateway: String?, dev index: Int32, metric: UInt32 = 1024) -> Route {
        Route(
            destination: IPPrefix(.anyV6, length: 0), metric: metric,
            nextHops: [NextHop(gateway: gateway.map(ip), interfaceIndex: index)])
    }

    static func subnet(_ text: String, _ length: UInt8, dev index: Int32, via gateway: String? = nil, source: String? = nil) -> Route {
        Route(
            destination: IPPrefix(ip(text), length: length), metric: 0, preferredSource: source.map(ip),
            nextHops: [NextHop(gateway: gateway.map(ip), interfaceIndex: index)])
    }
}

/// The change a batch must have produced (the `#require` macro cannot wrap a mutating call).
private func changed(
    _ change: ReachabilityChange?, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation
) throws -> ReachabilityChange {
    try #require(change, comment, sourceLocation: sourceLocation)
}

/// A state holding one wired uplink eth0 (index 2) online: 192.0.2.10/24, default via 192.0.2.1 metric 100.
private func onlineWired(classifier: Classifier = Classifier()) throws -> NetworkState {
    var state = NetworkState(classifier: classifier)
    let change = state.apply([
        .link(Fact.ethernet(2, "eth0"), device: DeviceFacts()),
        .address(Fact.v4(2, "192.0.2.10")),
        .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false),
    ])
    try #require(change?.host.state == .online)
    return state
}

// MARK: - Basic derivation

@Suite struct EngineTests {
    @Test func wiredUplink_withAddressAndDefaultRoute_isOnlineAndPrimary() throws {
        var state = NetworkState()
        let change = try changed(state.apply([
            .link(Fact.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Fact.v4(2, "192.0.2.10")),
            .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false),
        ]))
        #expect(change.generation == 1)
        #expect(change.hostChanged)
        #expect(change.host == HostStatus(
            flags: [.reachable, .isWired], state: .online, primaryInterface: "eth0", availableInterfaces: ["eth0"],
            pathFacts: PathFacts(supportsIPv4: true, gateways: [IPAddress("192.0.2.1")!])))
        #expect(change.changedInterfaces == [InterfaceStatus(
            index: 2, name: "eth0", kind: .wired, flags: [.reachable, .isWired],
            addresses: [IPPrefix(Fact.ip("192.0.2.10"), length: 24)])])
        #expect(change.removedInterfaces.isEmpty)
        #expect(state.snapshot == ReachabilitySnapshot(generation: 1, host: change.host, interfaces: change.changedInterfaces))
        #expect(state.kernelDefaultRoute(family: .ipv4)?.nextHops.first?.interfaceIndex == 2)
        #expect(state.kernelDefaultRoute(family: .ipv6) == nil)
    }

    @Test func emptyState_isOffline_andFirstLinkWithoutRoute_isLocal() throws {
        var state = NetworkState()
        #expect(state.host == HostStatus())
        #expect(state.apply([NetworkEvent]()) == nil)
        let change = try changed(state.apply([
            .link(Fact.ethernet(2, "eth0"), device: DeviceFacts()), .address(Fact.v4(2, "192.0.2.10")),
        ]))
        #expect(change.host.state == .local)
        #expect(change.host.flags == [])
        #expect(change.host.primaryInterface == "")
        #expect(change.host.availableInterfaces == [])
        // Loopback with its address never makes the host local.
        var loopbackOnly = NetworkState()
        let lo = Link(index: 1, name: "lo", flags: [.up, .loopback, .running, .lowerUp],
                      hardwareType: Link.hardwareLoopback, operState: .unknown)
        let loChange = try changed(loopbackOnly.apply([
            .link(lo, device: DeviceFacts()),
            .address(Address(interfaceIndex: 1, prefix: IPPrefix(Fact.ip("127.0.0.1"), length: 8), scope: Address.scopeHost)),
        ]))
        #expect(loChange.host.state == .offline)
        #expect(loChange.changedInterfaces.map(\.kind) == [.loopback])
    }

    @Test func carrierLoss_onOnlyUplink_requiresConnection_isOffline_andKeepsPrimary() throws {
        var state = try onlineWired()
        let change = try changed(state.apply([.link(Fact.ethernet(2, "eth0", carrier: false), device: nil)]))
        #expect(change.generation == 2)
        #expect(change.hostChanged)
        #expect(change.host.flags == [.connectionRequired, .isWired])
        #expect(!change.host.flags.contains(.reachable))
        #expect(change.host.state == .offline)
        #expect(change.host.primaryInterface == "eth0")
        #expect(change.host.availableInterfaces == [])
        #expect(change.changedInterfaces.map(\.flags) == [[.connectionRequired, .isWired]])
        // The kernel keeps the route (only marked linkdown); the evaluation names why.
        let route = try #require(state.kernelDefaultRoute(family: .ipv4))
        let path = state.evaluate(route: route, family: .ipv4)
        #expect(path == PathEvaluation(
            flags: [.connectionRequired, .isWired], interfaceIndex: 2, interfaceName: "eth0",
            gateway: Fact.ip("192.0.2.1"), reason: .linkDown))

        // Carrier back: online again, one more change.
        let back = try changed(state.apply([.link(Fact.ethernet(2, "eth0"), device: nil)]))
        #expect(back.generation == 3)
        #expect(back.host.state == .online)
        #expect(back.host.flags == [.reachable, .isWired])
    }

    @Test func carrierLoss_onPreferredUplink_withWorseGoodUplink_isLocal_andListsTheGoodOne() throws {
        var state = try onlineWired()
        _ = try changed(state.apply([
            .link(Fact.ethernet(4, "wlan0"), device: DeviceFacts(deviceType: "wlan")),
            .address(Fact.v4(4, "198.51.100.7")),
            .route(Fact.defaultV4(via: "198.51.100.1", dev: 4, metric: 600), replace: false),
        ]))
        #expect(state.host.primaryInterface == "eth0")
        #expect(state.host.availableInterfaces == ["eth0", "wlan0"])

        let change = try changed(state.apply([.link(Fact.ethernet(2, "eth0", carrier: false), device: nil)]))
        // By design: the kernel keeps using the dead link's route; the truth is "not online,
        // connectionRequired via eth0", and the good link is still listed.
        #expect(change.host == HostStatus(
            flags: [.connectionRequired, .isWired], state: .local, primaryInterface: "eth0",
            availableInterfaces: ["wlan0"], pathFacts: PathFacts(reason: .linkDown)))
    }

    @Test func ipv6OnlyHost_isOnline() throws {
        var state = NetworkState()
        let change = try changed(state.apply([
            .link(Fact.ethernet(3, "eth0"), device: DeviceFacts()),
            .address(Fact.v6(3, "fe80::5054:ff:fe12:3456")),
            .address(Fact.v6(3, "2001:db8::10")),
            .route(Fact.defaultV6(via: "fe80::1", dev: 3), replace: false),
        ]))
        // The path facts: IPv6 only, through its link-local router.
        #expect(change.host == HostStatus(
            flags: [.reachable, .isWired], state: .online, primaryInterface: "eth0", availableInterfaces: ["eth0"],
            pathFacts: PathFacts(supportsIPv6: true, gateways: [IPAddress("fe80::1")!])))
        #expect(state.kernelDefaultRoute(family: .ipv4) == nil)
        // IPv4 first, then address order.
        #expect(change.changedInterfaces.first?.addresses == [
            IPPrefix(Fact.ip("2001:db8::10"), length: 64), IPPrefix(Fact.ip("fe80::5054:ff:fe12:3456"), length: 64),
        ])
    }

    @Test func ipv6WithOnlyLinkLocalAddress_cannotSourceBeyondTheLink() throws {
        var state = NetworkState()
        let change = try changed(state.apply([
            .link(Fact.ethernet(3, "eth0"), device: DeviceFacts()),
            .address(Fact.v6(3, "fe80::5054:ff:fe12:3456")),
            .route(Fact.defaultV6(via: "fe80::1", dev: 3), replace: false),
        ]))
        #expect(change.host.flags == [.connectionRequired, .isWired])
        #expect(change.host.state == .local)  // the link itself is ready with a usable address
        #expect(change.host.availableInterfaces == [])
        let route = try #require(state.kernelDefaultRoute(family: .ipv6))
        #expect(state.evaluate(route: route, family: .ipv6).reason == .noAddress)
    }

    @Test func tentativeIPv6Address_isNotUsable_untilDADCompletes() throws {
        var state = NetworkState()
        let tentative = Fact.v6(3, "2001:db8::10", flags: .tentative)
        let change = try changed(state.apply([
            .link(Fact.ethernet(3, "eth0"), device: DeviceFacts()),
            .address(tentative),
            .route(Fact.defaultV6(via: "fe80::1", dev: 3), replace: false),
        ]))
        let route = try #require(state.kernelDefaultRoute(family: .ipv6))
        let path = state.evaluate(route: route, family: .ipv6)
        #expect(path.flags.contains(.connectionRequired))
        #expect(!path.isReachable)
        #expect(path.reason == .noAddress)
        #expect(path.interfaceName == "eth0")
        #expect(change.host.state == .offline)
        #expect(change.changedInterfaces.first?.flags == [.connectionRequired, .isWired])

        // DAD done: the same address re-sent without the tentative flag.
        let done = try changed(state.apply([.address(Fact.v6(3, "2001:db8::10"))]))
        #expect(done.host.state == .online)
        #expect(state.evaluate(route: route, family: .ipv6).reason == nil)
        // A failed DAD is not usable either.
        let failed = try changed(state.apply([.address(Fact.v6(3, "2001:db8::10", flags: .dadFailed))]))
        #expect(failed.host.state == .offline)
    }
}

// MARK: - Noise and batching

extension EngineTests {
    @Test func netlinkNoise_changesNothing_andKeepsGeneration() throws {
        var state = try onlineWired()
        let generation = state.generation
        let snapshot = state.snapshot
        var promiscuous = Fact.ethernet(2, "eth0")
        promiscuous.flags.insert(Fact.promiscuous)
        var deprecated = Fact.v4(2, "192.0.2.10")
        deprecated.flags.insert(.deprecated)
        let noise: [(String, NetworkEvent)] = [
            ("same link again", .link(Fact.ethernet(2, "eth0"), device: nil)),
            ("same link with same sysfs facts", .link(Fact.ethernet(2, "eth0"), device: DeviceFacts())),
            ("same address (lifetime update)", .address(Fact.v4(2, "192.0.2.10"))),
            ("same route", .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false)),
            ("same route, NLM_F_REPLACE", .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: true)),
            ("IFF_PROMISC on", .link(promiscuous, device: nil)),
            ("IFF_PROMISC off", .link(Fact.ethernet(2, "eth0"), device: nil)),
            ("removal of an unknown address", .addressRemoved(Fact.v4(2, "203.0.113.1"))),
            ("removal of an unknown route", .routeRemoved(Fact.defaultV4(via: "192.0.2.99", dev: 2))),
            ("removal of an unknown link", .linkRemoved(index: 99)),
            ("address on an unknown link", .address(Fact.v4(99, "203.0.113.1"))),
        ]
        for (what, event) in noise {
            #expect(state.apply([event]) == nil, "\(what)")
            #expect(state.generation == generation, "\(what)")
        }
        #expect(state.apply(noise.map(\.1)) == nil, "all the noise in one batch")
        #expect(state.generation == generation)
        #expect(state.snapshot.interfaces == snapshot.interfaces)
        #expect(state.snapshot.host == snapshot.host)
        // A deprecated address of the primary is a host change (new connections avoid it), that
        // only says so: the sole address stays the source, nothing to rebind.
        let deprecation = try changed(state.apply([.address(deprecated)]), "address deprecated (preferred lifetime over)")
        #expect(deprecation.hostChange == HostChange(
            changed: [.deprecated], rebind: false, sourceAddress: Fact.ip("192.0.2.10"), previousSourceAddress: Fact.ip("192.0.2.10")))
        #expect(deprecation.host == snapshot.host)
        #expect(deprecation.changedInterfaces.isEmpty)
    }

    @Test func batchOfManyEvents_yieldsExactlyOneChange() throws {
        var state = try onlineWired()
        let before = state.generation
        var events: [NetworkEvent] = []
        for i in 0..<20 {
            let index = Int32(10 + i)
            events.append(.link(Fact.ethernet(index, "eth\(index)"), device: DeviceFacts()))
            events.append(.address(Fact.v4(index, "10.0.\(i).2")))
            events.append(.route(Fact.defaultV4(via: "10.0.\(i).1", dev: index, metric: UInt32(200 + i)), replace: false))
        }
        events.append(.link(Fact.ethernet(2, "eth0", carrier: false), device: nil))
        let change = try changed(state.apply(events))
        #expect(change.generation == before + 1)
        #expect(state.generation == before + 1)
        #expect(change.changedInterfaces.count == 21)
        let expected: [Int32] = [2] + (10..<30).map { Int32($0) }
        #expect(change.changedInterfaces.map(\.index) == expected)
        #expect(change.host.availableInterfaces == (10..<30).map { "eth\($0)" })
        #expect(change.host.state == .local)  // eth0 (metric 100) is still the kernel's pick, dead

        // A flap that ends where it started, within one batch, is not a change at all.
        let flap: [NetworkEvent] = [
            .link(Fact.ethernet(15, "eth15", carrier: false), device: nil),
            .link(Fact.ethernet(15, "eth15"), device: nil),
            .addressRemoved(Fact.v4(16, "10.0.6.2")),
            .address(Fact.v4(16, "10.0.6.2")),
            .routeRemoved(Fact.defaultV4(via: "10.0.6.1", dev: 16, metric: 206)),
            .route(Fact.defaultV4(via: "10.0.6.1", dev: 16, metric: 206), replace: false),
        ]
        #expect(state.apply(flap) == nil)
        #expect(state.generation == before + 1)
    }
}

// MARK: - Route choice

extension EngineTests {
    @Test func blackholeOrUnreachableDefault_withLowerMetric_wins_andIsNotReachable() throws {
        for type in [RouteType.blackhole, .unreachable, .prohibit] {
            var state = try onlineWired()
            let blocking = Fact.defaultV4(via: nil, dev: nil, metric: 50, type: type)
            let change = try changed(state.apply([.route(blocking, replace: false)]), "\(type)")
            #expect(state.kernelDefaultRoute(family: .ipv4) == blocking, "\(type)")
            #expect(state.evaluate(route: blocking, family: .ipv4).reason == .policyBlocked, "\(type)")
            #expect(!change.host.flags.contains(.reachable), "\(type)")
            #expect(change.host.state == .local, "\(type)")
            #expect(change.host.primaryInterface == "", "\(type)")
            // eth0 could still carry traffic if the blackhole went away.
            #expect(change.host.availableInterfaces == ["eth0"], "\(type)")

            let cleared = try changed(state.apply([.routeRemoved(blocking)]), "\(type)")
            #expect(cleared.host.state == .online, "\(type)")
        }
        // With a worse metric it changes nothing.
        var state = try onlineWired()
        #expect(state.apply([.route(Fact.defaultV4(via: nil, dev: nil, metric: 500, type: .unreachable), replace: false)]) == nil)
    }

    @Test func mainTable_beatsDefaultTable253_evenWithWorseMetric() throws {
        var state = NetworkState()
        let inDefaultTable = Fact.defaultV4(via: "192.0.2.1", dev: 2, metric: 0, table: Route.defaultTable)
        let inMainTable = Fact.defaultV4(via: "198.51.100.1", dev: 3, metric: 900)
        let inOtherTable = Fact.defaultV4(via: "203.0.113.1", dev: 4, metric: 0, table: 100)
        let change = try changed(state.apply([
            .link(Fact.ethernet(2, "eth0"), device: nil), .address(Fact.v4(2, "192.0.2.10")),
            .link(Fact.ethernet(3, "eth1"), device: nil), .address(Fact.v4(3, "198.51.100.10")),
            .link(Fact.ethernet(4, "eth2"), device: nil), .address(Fact.v4(4, "203.0.113.10")),
            .route(inDefaultTable, replace: false), .route(inMainTable, replace: false), .route(inOtherTable, replace: false),
        ]))
        #expect(state.kernelDefaultRoute(family: .ipv4) == inMainTable)
        #expect(change.host.primaryInterface == "eth1")
        // Table 100 is only reached through policy rules: not a default route of the host.
        #expect(change.host.availableInterfaces == ["eth0", "eth1"])

        // Without the main table's route, the default table's is used.
        let fallback = try changed(state.apply([.routeRemoved(inMainTable)]))
        #expect(fallback.host.primaryInterface == "eth0")
        #expect(state.kernelDefaultRoute(family: .ipv4) == inDefaultTable)
    }

    @Test func routeReplace_takesTheSlotFromTheOtherNextHop() throws {
        var state = try onlineWired()
        _ = state.apply([.link(Fact.ethernet(3, "eth1"), device: nil), .address(Fact.v4(3, "198.51.100.10"))])
        let old = Fact.defaultV4(via: "192.0.2.1", dev: 2)
        let new = Fact.defaultV4(via: "198.51.100.1", dev: 3)
        // `ip route replace default via 198.51.100.1 dev eth1` (same table, metric, tos).
        let change = try changed(state.apply([.route(new, replace: true)]))
        #expect(change.host.primaryInterface == "eth1")
        #expect(change.host.availableInterfaces == ["eth1"])
        #expect(state.kernelDefaultRoute(family: .ipv4) == new)
        #expect(state.routes[old.key] == nil)
        #expect(state.defaultRoutes == [new.key])

        // Without NLM_F_REPLACE (`ip route append`, IPv6 ECMP siblings) both stay.
        var appended = try onlineWired()
        _ = appended.apply([.link(Fact.ethernet(3, "eth1"), device: nil), .address(Fact.v4(3, "198.51.100.10"))])
        _ = try changed(appended.apply([.route(new, replace: false)]))
        #expect(appended.defaultRoutes == [old.key, new.key])
        #expect(appended.host.availableInterfaces == ["eth0", "eth1"])
    }

    @Test func routeReplace_ofNonDefaultRoute_onAnotherLink_dropsTheOldRoute() throws {
        var state = try onlineWired()
        _ = state.apply([.link(Fact.ethernet(3, "eth1"), device: nil), .address(Fact.v4(3, "198.51.100.10"))])
        let old = Fact.subnet("10.0.0.0", 8, dev: 2, via: "192.0.2.1")
        let new = Fact.subnet("10.0.0.0", 8, dev: 3, via: "198.51.100.1")
        _ = state.apply([.route(old, replace: false)])
        // `ip route replace 10.0.0.0/8 via 198.51.100.1 dev eth1`: the kernel keeps one route in the slot
        // and announces only RTM_NEWROUTE with NLM_F_REPLACE, no RTM_DELROUTE for the old one (seen on 6.18,
        // IPv4 and IPv6 alike).
        _ = state.apply([.route(new, replace: true)])
        #expect(state.routes[new.key] != nil)
        #expect(state.routes[old.key] == nil)

        // `ip route replace blackhole 10.0.0.0/8`: a route without a link takes the slot.
        let blackhole = Route(destination: new.destination, type: .blackhole, metric: 0, nextHops: [NextHop(interfaceIndex: nil)])
        _ = state.apply([.route(blackhole, replace: true)])
        #expect(state.routes[blackhole.key] != nil)
        #expect(state.routes[new.key] == nil)
    }

    @Test func localAddressOwner_survivesRemovalOfTheSameAddressFromAnotherLink() throws {
        var state = try onlineWired()
        // The kernel lets two links hold the same address; eth1 gets a copy, then loses it again.
        _ = state.apply([.link(Fact.ethernet(3, "eth1"), device: nil), .address(Fact.v4(3, "192.0.2.10"))])
        _ = state.apply([.addressRemoved(Fact.v4(3, "192.0.2.10"))])
        let local = Route(
            table: Route.localTable, destination: IPPrefix(Fact.ip("192.0.2.10"), length: 32), type: .local,
            preferredSource: Fact.ip("192.0.2.10"), nextHops: [NextHop(interfaceIndex: 1)])
        let result = state.evaluate(lookup: .route(local), for: Fact.ip("192.0.2.10"), target: "192.0.2.10")
        #expect(result.flags.contains(.isLocalAddress))
        #expect(result.interface == "eth0")
    }

    @Test func multipathDefault_usesAReadyNextHop() throws {
        var state = NetworkState()
        let route = Route(
            destination: IPPrefix(.anyV4, length: 0), metric: 100,
            nextHops: [NextHop(gateway: Fact.ip("192.0.2.1"), interfaceIndex: 2),
                       NextHop(gateway: Fact.ip("198.51.100.1"), interfaceIndex: 3)])
        let change = try changed(state.apply([
            .link(Fact.ethernet(2, "eth0", carrier: false), device: nil), .address(Fact.v4(2, "192.0.2.10")),
            .link(Fact.ethernet(3, "eth1"), device: nil), .address(Fact.v4(3, "198.51.100.10")),
            .route(route, replace: false),
        ]))
        #expect(change.host.state == .online)
        #expect(change.host.primaryInterface == "eth1")
        #expect(state.evaluate(route: route, family: .ipv4).gateway == Fact.ip("198.51.100.1"))
    }

    @Test func vpnTun_withBestMetric_isPrimary_withVPNFlags() throws {
        var state = try onlineWired()
        // OpenVPN's tun0: ARPHRD_NONE, operstate unknown, UP|POINTOPOINT|RUNNING|NOARP|MULTICAST|LOWER_UP.
        let tun = Link(index: 9, name: "tun0", flags: LinkFlags(rawValue: 0x1_10D1), hardwareType: Link.hardwareNone,
                       operState: .unknown, infoKind: "tun")
        let change = try changed(state.apply([
            .link(tun, device: DeviceFacts()), .address(Fact.v4(9, "10.8.0.6")),
            .route(Fact.defaultV4(via: nil, dev: 9, metric: 50), replace: false),
        ]))
        #expect(change.host.flags == [.transientConnection, .reachable, .isVPN])
        #expect(change.host.primaryInterface == "tun0")
        #expect(change.host.availableInterfaces == ["tun0", "eth0"])
    }
}

// MARK: - Silent kernel flushes

extension EngineTests {
    @Test func ipv4AddressRemoval_dropsRoutesWithThatSource_thenAllIPv4RoutesWithTheLast() throws {
        var state = NetworkState()
        let connected10 = Fact.subnet("192.0.2.0", 24, dev: 2, source: "192.0.2.10")
        let via20 = Fact.subnet("198.51.100.0", 24, dev: 2, via: "192.0.2.1", source: "192.0.2.20")
        let defaultV4 = Fact.defaultV4(via: "192.0.2.1", dev: 2, metric: 100)
        let defaultV6 = Fact.defaultV6(via: "fe80::1", dev: 2)
        let otherLink = Fact.defaultV4(via: "203.0.113.1", dev: 3, metric: 200)
        _ = try changed(state.apply([
            .link(Fact.ethernet(2, "eth0"), device: nil),
            .address(Fact.v4(2, "192.0.2.10")), .address(Fact.v4(2, "192.0.2.20")), .address(Fact.v6(2, "2001:db8::10")),
            .link(Fact.ethernet(3, "eth1"), device: nil), .address(Fact.v4(3, "203.0.113.10")),
            .route(connected10, replace: false), .route(via20, replace: false), .route(defaultV4, replace: false),
            .route(defaultV6, replace: false), .route(otherLink, replace: false),
        ]))
        #expect(state.host.primaryInterface == "eth0")

        _ = state.apply([.addressRemoved(Fact.v4(2, "192.0.2.10"))])
        #expect(Set(state.routes.keys) == [via20.key, defaultV4.key, defaultV6.key, otherLink.key])

        let change = try changed(state.apply([.addressRemoved(Fact.v4(2, "192.0.2.20"))]))
        #expect(Set(state.routes.keys) == [defaultV6.key, otherLink.key])
        #expect(state.kernelDefaultRoute(family: .ipv4) == otherLink)
        #expect(change.host.primaryInterface == "eth1")
        // eth0 still carries IPv6 (metric 1024, after eth1's 200).
        #expect(change.host.availableInterfaces == ["eth1", "eth0"])

        // Removing an IPv6 address flushes nothing of IPv4's.
        _ = state.apply([.addressRemoved(Fact.v6(2, "2001:db8::10"))])
        #expect(Set(state.routes.keys) == [defaultV6.key, otherLink.key])
    }

    @Test func linkAdminDown_dropsItsRoutes() throws {
        var state = try onlineWired()
        let down = try changed(state.apply([.link(Fact.adminDown(2, "eth0"), device: nil)]))
        #expect(down.host == HostStatus(flags: [], state: .offline, primaryInterface: "", availableInterfaces: []))
        #expect(down.changedInterfaces.map(\.flags) == [[.isWired]])  // neither reachable nor connectionRequired
        #expect(state.kernelDefaultRoute(family: .ipv4) == nil)
        #expect(state.routes.isEmpty)

        // Up again: the routes do not come back by themselves (the kernel sends them anew).
        let up = try changed(state.apply([.link(Fact.ethernet(2, "eth0"), device: nil)]))
        #expect(up.host.state == .local)
        #expect(state.kernelDefaultRoute(family: .ipv4) == nil)
    }

    @Test func linkRemoval_dropsAddressesAndRoutes_andReportsTheInterface() throws {
        var state = try onlineWired()
        _ = try changed(state.apply([
            .link(Fact.ethernet(3, "eth1"), device: nil), .address(Fact.v4(3, "198.51.100.10")),
            .route(Fact.defaultV4(via: "198.51.100.1", dev: 3, metric: 200), replace: false),
        ]))
        let last = try #require(state.interface(index: 2))
        let change = try changed(state.apply([.linkRemoved(index: 2)]))
        #expect(change.removedInterfaces == [last])
        #expect(change.changedInterfaces.isEmpty)
        #expect(change.host.primaryInterface == "eth1")
        #expect(change.host.availableInterfaces == ["eth1"])
        #expect(state.snapshot.interfaces.map(\.name) == ["eth1"])
        #expect(state.linkCount == 1)
        #expect(state.routes.values.allSatisfy { $0.nextHops.allSatisfy { $0.interfaceIndex != 2 } })

        // The same index comes back (a USB NIC replugged): nothing of the old link survives.
        let again = try changed(state.apply([.link(Fact.ethernet(2, "eth0"), device: nil)]))
        #expect(again.changedInterfaces.map(\.addresses) == [[]])
        #expect(again.changedInterfaces.map(\.flags) == [[.connectionRequired, .isWired]])
        #expect(state.host.primaryInterface == "eth1")
    }
}

// MARK: - Classification in the Engine

extension EngineTests {
    @Test func ignoredLink_isHidden_butStillCountsForTheKernelsChoice() throws {
        let classifier = Classifier(rules: [InterfaceRule(pattern: "lab*", ignore: true)])
        var state = try onlineWired(classifier: classifier)
        // An ignored link alone, ready with an address: nothing visible happens.
        #expect(state.apply([.link(Fact.ethernet(5, "lab0"), device: nil), .address(Fact.v4(5, "203.0.113.10"))]) == nil)
        let change = try changed(state.apply([
            .route(Fact.defaultV4(via: "203.0.113.1", dev: 5, metric: 10), replace: false),
        ]))
        #expect(state.snapshot.interfaces.map(\.name) == ["eth0"])
        #expect(state.interface(named: "lab0") == nil)
        #expect(change.changedInterfaces.isEmpty)
        #expect(change.host.availableInterfaces == ["eth0"])
        // The kernel sends through lab0: that stays the truth.
        #expect(state.kernelDefaultRoute(family: .ipv4)?.nextHops.first?.interfaceIndex == 5)
        #expect(change.host.primaryInterface == "lab0")
        #expect(change.host.state == .online)
        // Its carrier loss makes the host need a connection, without ever listing it.
        let lost = try changed(state.apply([.link(Fact.ethernet(5, "lab0", carrier: false), device: nil)]))
        #expect(lost.host.flags.contains(.connectionRequired))
        #expect(lost.changedInterfaces.isEmpty)
    }

    @Test func bridge_takesWiredKindFromPort_butStaysBridgeWithOnlyVethPorts() throws {
        var state = NetworkState()
        // Ports arrive before their bridge, as in a dump ordered by index.
        let change = try changed(state.apply([
            .link(Fact.ethernet(3, "eth1", master: 10), device: nil),
            .link(Fact.ethernet(4, "vethA", infoKind: "veth", master: 10), device: nil),
            .link(Fact.ethernet(10, "br0", infoKind: "bridge"), device: nil),
            .address(Fact.v4(10, "192.0.2.10")),
            .route(Fact.defaultV4(via: "192.0.2.1", dev: 10), replace: false),
            .link(Fact.ethernet(21, "vethB", infoKind: "veth", master: 20), device: nil),
            .link(Fact.ethernet(20, "docker0", infoKind: "bridge"), device: nil),
            .link(Fact.ethernet(22, "vethC", infoKind: "veth", master: 20), device: nil),
            .address(Fact.v4(20, "172.17.0.1", 16)),
            .route(Fact.subnet("172.17.0.0", 16, dev: 20, source: "172.17.0.1"), replace: false),
        ]))
        #expect(state.interface(named: "br0")?.kind == .wired)
        #expect(state.interface(named: "br0")?.flags == [.reachable, .isWired])
        #expect(state.interface(named: "docker0")?.kind == .bridge)
        #expect(state.interface(named: "docker0")?.flags == [.reachable])
        #expect(change.host.flags == [.reachable, .isWired])
        #expect(change.host.availableInterfaces == ["br0"])

        // The wired port leaves: br0 is a plain bridge now, and says so in the same change.
        let left = try changed(state.apply([.link(Fact.ethernet(3, "eth1"), device: nil)]))
        #expect(left.changedInterfaces.first { $0.name == "br0" }?.kind == .bridge)
        #expect(left.host.flags == [.reachable])
        // And joins again.
        let joined = try changed(state.apply([.link(Fact.ethernet(3, "eth1", master: 10), device: nil)]))
        #expect(joined.changedInterfaces.first { $0.name == "br0" }?.kind == .wired)
    }

    @Test func availableInterfaces_areOrderedByPriority_thenMetric_thenIndex() throws {
        var state = NetworkState()
        let change = try changed(state.apply([
            .link(Fact.ethernet(2, "eth0"), device: nil), .address(Fact.v4(2, "192.0.2.2")),
            .route(Fact.defaultV4(via: "192.0.2.1", dev: 2, metric: 600), replace: false),
            .link(Fact.ethernet(3, "eth1"), device: nil), .address(Fact.v4(3, "192.0.3.2")),
            .route(Fact.defaultV4(via: "192.0.3.1", dev: 3, metric: 100), replace: false),
            .link(Fact.ethernet(4, "wlan0"), device: DeviceFacts(deviceType: "wlan")), .address(Fact.v4(4, "192.0.4.2")),
            .route(Fact.defaultV4(via: "192.0.4.1", dev: 4, metric: 50), replace: false),
            .link(Fact.ethernet(5, "wwan0"), device: DeviceFacts(deviceType: "wwan")), .address(Fact.v4(5, "192.0.5.2")),
            .route(Fact.defaultV4(via: "192.0.5.1", dev: 5, metric: 10), replace: false),
            .link(Fact.ethernet(6, "eth2"), device: nil), .address(Fact.v4(6, "192.0.6.2")),
            .route(Fact.defaultV4(via: "192.0.6.1", dev: 6, metric: 100), replace: false),
            .link(Fact.ethernet(7, "eth3", carrier: false), device: nil), .address(Fact.v4(7, "192.0.7.2")),
            .route(Fact.defaultV4(via: "192.0.7.1", dev: 7, metric: 20), replace: false),
        ]))
        #expect(change.host.availableInterfaces == ["eth1", "eth2", "eth0", "wlan0", "wwan0"])
        // The kernel's choice is the lowest metric that is there: wwan0, whatever the policy says.
        #expect(change.host.primaryInterface == "wwan0")
        #expect(change.host.flags == [.reachable, .isWWAN, .isExpensive])

        // Configured priorities reorder the list (a reload).
        let reordered = try changed(state.reclassify(with: Classifier(priorities: [.wifi: 10])))
        #expect(reordered.host.availableInterfaces == ["wlan0", "eth1", "eth2", "eth0", "wwan0"])
        #expect(reordered.changedInterfaces.isEmpty)
    }

    @Test func reclassify_changesKind_andIsNilWhenNothingChanges() throws {
        var state = try onlineWired()
        let toWiFi = Classifier(rules: [InterfaceRule(pattern: "eth0", kind: .wifi)])
        let change = try changed(state.reclassify(with: toWiFi))
        #expect(change.changedInterfaces.map(\.kind) == [.wifi])
        #expect(change.host.flags == [.reachable, .isWiFi])
        #expect(state.reclassify(with: toWiFi) == nil)

        let metered = try changed(state.reclassify(with: Classifier(rules: [InterfaceRule(pattern: "eth*", metered: true)])))
        #expect(metered.host.flags == [.reachable, .isWired, .isExpensive])

        let ignored = try changed(state.reclassify(with: Classifier(rules: [InterfaceRule(pattern: "eth0", ignore: true)])))
        #expect(ignored.removedInterfaces.map(\.name) == ["eth0"])
        #expect(ignored.host.availableInterfaces == [])
        #expect(state.snapshot.interfaces.isEmpty)

        let restored = try changed(state.reclassify(with: Classifier()))
        #expect(restored.changedInterfaces.map(\.kind) == [.wired])
        #expect(restored.host.flags == [.reachable, .isWired])
    }
}

// MARK: - Resync

extension EngineTests {
    private static let eth0 = Fact.ethernet(2, "eth0")
    private static let eth1 = Fact.ethernet(3, "eth1")
    private static let route0 = Fact.defaultV4(via: "192.0.2.1", dev: 2, metric: 100)
    private static let route1 = Fact.defaultV4(via: "198.51.100.1", dev: 3, metric: 200)
    private static let full = NetworkDump(
        links: [(eth0, DeviceFacts()), (eth1, DeviceFacts())],
        addresses: [Fact.v4(2, "192.0.2.10"), Fact.v4(3, "198.51.100.10")],
        routes: [route0, route1])

    @Test func replaceWithSameFacts_isNil_andWithFewerFacts_reportsRemovals() throws {
        var state = NetworkState()
        let first = try changed(state.replace(with: Self.full))
        #expect(first.generation == 1)
        #expect(first.changedInterfaces.map(\.name) == ["eth0", "eth1"])
        #expect(first.host.availableInterfaces == ["eth0", "eth1"])

        #expect(state.replace(with: Self.full) == nil)
        // The same facts in another order are the same facts.
        let shuffled = NetworkDump(
            links: Self.full.links.reversed(), addresses: Self.full.addresses.reversed(), routes: Self.full.routes.reversed())
        #expect(state.replace(with: shuffled) == nil)
        #expect(state.generation == 1)

        // eth1 vanished while we were not listening (ENOBUFS): the resync reports it.
        let fewer = NetworkDump(links: [(Self.eth0, nil)], addresses: [Fact.v4(2, "192.0.2.10")], routes: [Self.route0])
        let change = try changed(state.replace(with: fewer))
        #expect(change.generation == 2)
        #expect(change.removedInterfaces.map(\.name) == ["eth1"])
        #expect(change.host.availableInterfaces == ["eth0"])
        #expect(state.linkCount == 1)

        // Only the default route went: host changes, interfaces do not.
        let noRoute = NetworkDump(links: [(Self.eth0, nil)], addresses: [Fact.v4(2, "192.0.2.10")], routes: [])
        let routeGone = try changed(state.replace(with: noRoute))
        #expect(routeGone.hostChanged)
        #expect(routeGone.host.state == .local)
        #expect(routeGone.changedInterfaces.isEmpty)
        #expect(routeGone.removedInterfaces.isEmpty)
        #expect(state.routes.isEmpty)

        // Only an address went.
        let noAddress = NetworkDump(links: [(Self.eth0, nil)])
        let addressGone = try changed(state.replace(with: noAddress))
        #expect(addressGone.changedInterfaces.map(\.addresses) == [[]])
        #expect(addressGone.host.state == .offline)
    }
}

// MARK: - Wi-Fi and cellular through a fake sysfs

/// A throwaway directory tree standing in for /sys, removed on every exit path.
private struct FakeSysfsTree {
    let root: String

    struct Failure: Error, CustomStringConvertible {
        let call: String
        let path: String
        let code: Int32
        var description: String { "\(call)(\(path)): errno \(code)" }
    }

    static func with(_ body: (FakeSysfsTree) throws -> Void) throws {
        var template = Array("/tmp/reachd-enginetests-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure(call: "mkdtemp", path: "/tmp", code: errno) }
        let tree = FakeSysfsTree(root: String(cString: made))
        defer { tree.remove(tree.root) }
        try body(tree)
    }

    func directory(_ relative: String) throws {
        var path = root
        for component in relative.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) != 0, errno != EEXIST { throw Failure(call: "mkdir", path: path, code: errno) }
        }
    }

    func file(_ relative: String, _ contents: String) throws {
        try directory(relative.split(separator: "/").dropLast().joined(separator: "/"))
        let path = root + "/" + relative
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure(call: "open", path: path, code: errno) }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw Failure(call: "write", path: path, code: errno)
        }
    }

    /// rm -rf that never follows symlinks.
    private func remove(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR, let handle = opendir(path) else {
            unlink(path)
            return
        }
        var children: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != ".", name != ".." { children.append(name) }
        }
        closedir(handle)
        for child in children { remove(path + "/" + child) }
        rmdir(path)
    }
}

extension EngineTests {
    @Test func wifiAndCellularFromSysfs_setKindFlags_andHostFlagsFollowThePrimary() throws {
        try FakeSysfsTree.with { tree in
            try tree.file("class/net/wlan0/uevent", "DEVTYPE=wlan\nINTERFACE=wlan0\nIFINDEX=3\n")
            try tree.directory("class/net/wlan0/phy80211")
            try tree.file("class/net/wwan0/uevent", "INTERFACE=wwan0\nIFINDEX=4\nDEVTYPE=wwan\n")
            let reader = SysfsReader(root: tree.root)
            let wifiFacts = reader.deviceFacts(forInterface: "wlan0")
            let modemFacts = reader.deviceFacts(forInterface: "wwan0")
            #expect(wifiFacts == DeviceFacts(deviceType: "wlan", hasPhy80211: true))
            #expect(modemFacts == DeviceFacts(deviceType: "wwan"))

            // Both show as plain Ethernet-framed or raw-IP links to netlink: no info kind.
            let wlan = Link(index: 3, name: "wlan0", flags: Fact.carrierFlags, hardwareType: Link.hardwareEther,
                            operState: .up, infoKind: nil)
            let wwan = Link(index: 4, name: "wwan0", flags: Fact.carrierFlags, hardwareType: Link.hardwareRawIP,
                            operState: .unknown, infoKind: nil)
            let wifiRoute = Fact.defaultV4(via: "192.168.1.1", dev: 3, metric: 600)
            var state = NetworkState()
            let change = try changed(state.apply([
                .link(wlan, device: wifiFacts), .address(Fact.v4(3, "192.168.1.20")),
                .route(wifiRoute, replace: false),
                .link(wwan, device: modemFacts), .address(Fact.v4(4, "10.64.1.2", 30)),
                .route(Fact.defaultV4(via: "10.64.1.1", dev: 4, metric: 700), replace: false),
            ]))
            let wifi = try #require(state.interface(named: "wlan0"))
            let cellular = try #require(state.interface(named: "wwan0"))
            #expect(wifi.kind == .wifi)
            #expect(wifi.flags == [.reachable, .isWiFi])
            #expect(cellular.kind == .cellular)
            #expect(cellular.flags == [.reachable, .isWWAN, .isExpensive])
            #expect(change.host.flags == [.reachable, .isWiFi])
            #expect(change.host.primaryInterface == "wlan0")
            #expect(change.host.availableInterfaces == ["wlan0", "wwan0"])

            // Wi-Fi goes away (its route removed): the host rides on the modem, and says it costs.
            let moved = try changed(state.apply([.routeRemoved(wifiRoute)]))
            #expect(moved.host.flags == [.reachable, .isWWAN, .isExpensive])
            #expect(moved.host.primaryInterface == "wwan0")
            #expect(moved.changedInterfaces.isEmpty)
        }
    }
}

// MARK: - Scale

extension EngineTests {
    @Test func fiveThousandLinks_oneCarrierChange_touchesOneInterface() throws {
        var state = NetworkState()
        var events: [NetworkEvent] = []
        events.reserveCapacity(10_001)
        for i in 0..<5_000 {
            let index = Int32(i + 2)
            events.append(.link(Fact.ethernet(index, "veth\(i)", infoKind: "veth"), device: DeviceFacts()))
            events.append(.address(Address(
                interfaceIndex: index, prefix: IPPrefix(.v4(0x0A00_0000 | UInt32(i) << 2 | 1), length: 30))))
        }
        events.append(.route(Fact.defaultV4(via: "10.0.0.2", dev: 2), replace: false))
        let first = try changed(state.apply(events))
        #expect(first.changedInterfaces.count == 5_000)
        #expect(first.host.state == .online)
        #expect(state.linkCount == 5_000)

        let generation = state.generation
        let change = try changed(state.apply([.link(Fact.ethernet(2_502, "veth2500", carrier: false, infoKind: "veth"), device: nil)]))
        #expect(change.generation == generation + 1)
        #expect(change.changedInterfaces.count == 1)
        #expect(change.changedInterfaces.first?.name == "veth2500")
        #expect(change.changedInterfaces.first?.flags == [.connectionRequired])
        #expect(!change.hostChanged)
        #expect(change.removedInterfaces.isEmpty)
        // Re-sending it is noise, even among 5,000.
        #expect(state.apply([.link(Fact.ethernet(2_502, "veth2500", carrier: false, infoKind: "veth"), device: nil)]) == nil)
    }
}

// MARK: - Captive-portal URIs from router advertisements (RFC 8910)

extension EngineTests {
    private static let router = Fact.ip("fe80::1")
    private static func announced(
        _ uri: String, on index: Int32 = 2, by router: IPAddress = router, at received: ContinuousClock.Instant = .now
    ) -> NetworkEvent {
        .announcedPortal(AnnouncedPortal(interfaceIndex: index, router: router, uri: uri), received: received)
    }

    @Test func announcedPortal_onThePrimary_isTheHostsAnswer_untilTheLinkLosesCarrier() throws {
        var state = try onlineWired()
        let epoch = state.routingEpoch
        let start = ContinuousClock.now
        let change = try changed(state.apply([Self.announced("https://portal.example/api", at: start)]))
        #expect(change.hostChanged && change.host.announcedPortal == "https://portal.example/api")
        #expect(state.routingEpoch == epoch, "an announcement moves no route")
        // The same announcement again (every RA repeats it) changes nothing.
        #expect(state.apply([Self.announced("https://portal.example/api", at: start + .milliseconds(100))]) == nil)
        // A new one replaces it (past the hold window: see the coalescing tests).
        let next = start + LinkAnnouncements.hold
        #expect(try changed(state.apply([Self.announced("https://other.example/", at: next)])).host.announcedPortal == "https://other.example/")
        // Carrier lost: gone, and it does not come back with the carrier (another network, perhaps).
        #expect(try changed(state.apply([.link(Fact.ethernet(2, "eth0", carrier: false), device: nil)])).host.announcedPortal == "")
        #expect(state.apply([.link(Fact.ethernet(2, "eth0"), device: nil)])?.host.announcedPortal ?? "" == "")
        #expect(state.host.announcedPortal == "")
    }

    @Test func announcedPortal_endsWithTheRoutersDefaultRoute_orTheLink() throws {
        var state = try onlineWired()
        let viaRouter = Fact.defaultV6(via: "fe80::1", dev: 2)
        let viaOther = Fact.defaultV6(via: "fe80::2", dev: 2, metric: 2048)
        let start = ContinuousClock.now
        _ = state.apply([.route(viaRouter, replace: false), .route(viaOther, replace: false), Self.announced("http://a.example/", at: start)])
        #expect(state.host.announcedPortal == "http://a.example/")
        // Another router's route going away says nothing about this one's announcement.
        _ = state.apply([.routeRemoved(viaOther)])
        #expect(state.host.announcedPortal == "http://a.example/")
        // The announcing router's lifetime ran out: the kernel removed its default route.
        #expect(try changed(state.apply([.routeRemoved(viaRouter)])).host.announcedPortal == "")

        _ = state.apply([Self.announced("http://b.example/", at: start + LinkAnnouncements.hold)])
        #expect(state.host.announcedPortal == "http://b.example/")
        _ = state.apply([.linkRemoved(index: 2)])
        #expect(state.host.announcedPortal == "")
    }

    @Test func announcedPortal_underATunnel_isTheCarryingLinks() throws {
        var state = try onlineWired()
        let tun = Link(
            index: 9, name: "tun0", flags: [.up, .pointToPoint, .running, .lowerUp],
            hardwareType: Link.hardwareNone, operState: .unknown, infoKind: "tun")
        let split = Route(destination: IPPrefix(.anyV4, length: 1), metric: 0, nextHops: [NextHop(gateway: nil, interfaceIndex: 9)])
        _ = state.apply([
            .link(tun, device: DeviceFacts()), .address(Fact.v4(9, "10.8.0.2", 32)), .route(split, replace: false),
            .internetPath(family: .ipv4, route: split), Self.announced("http://hotel.example/"),
        ])
        #expect(state.host.primaryInterface == "tun0" && state.host.underlyingInterface == "eth0")
        #expect(state.host.announcedPortal == "http://hotel.example/")
    }

    @Test func announcedPortal_onAnotherLink_orADownOne_isNotTheHosts() throws {
        var state = try onlineWired()
        _ = state.apply([
            .link(Fact.ethernet(3, "eth1"), device: DeviceFacts()),
            .link(Fact.ethernet(4, "eth2", carrier: false), device: DeviceFacts()),
        ])
        let change = state.apply([Self.announced("http://eth1.example/", on: 3)])
        #expect(change?.hostChanged == false, "eth1 carries no path of the host")
        #expect(change?.changedInterfaces.map(\.portal) == ["http://eth1.example/"], "the interface shows its own")
        #expect(state.host.announcedPortal == "")
        // A stale message for a link without carrier, or one never seen, is dropped.
        _ = state.apply([Self.announced("http://eth2.example/", on: 4), Self.announced("http://gone.example/", on: 99)])
        #expect(state.announcements.routers.keys.sorted() == [3])
        // The resync after an overrun cannot dump announcements: they survive it.
        let dump = NetworkDump(
            links: [(Fact.ethernet(2, "eth0"), nil), (Fact.ethernet(3, "eth1"), nil), (Fact.ethernet(4, "eth2", carrier: false), nil)],
            addresses: [Fact.v4(2, "192.0.2.10")], routes: [Fact.defaultV4(via: "192.0.2.1", dev: 2)])
        _ = state.replace(with: dump)
        #expect(state.announcements.routers[3]?.portal?.uri == "http://eth1.example/")
    }
}

// MARK: - Uplinks, each judged by the probe through itself

extension EngineTests {
    @Test func uplinks_areReadyLinksOfUplinkKinds_withADefaultRouteAndAnAddress() throws {
        var state = try onlineWired()
        _ = state.apply([
            .link(Fact.ethernet(3, "wlan0"), device: DeviceFacts(hasPhy80211: true)),
            .address(Fact.v4(3, "198.51.100.7")),
            .route(Fact.defaultV4(via: "198.51.100.1", dev: 3, metric: 600), replace: false),
            // A container's veth with a default route (a network namespace's view), and a wired
            // link with a default route but no address: neither is an uplink.
            .link(Fact.ethernet(4, "veth0", infoKind: "veth"), device: DeviceFacts()),
            .address(Fact.v4(4, "10.0.0.2")),
            .route(Fact.defaultV4(via: "10.0.0.1", dev: 4, metric: 900), replace: false),
            .link(Fact.ethernet(5, "eth1"), device: DeviceFacts()),
            .route(Fact.defaultV4(via: "203.0.113.1", dev: 5, metric: 700), replace: false),
        ])
        let uplinks = state.uplinks()
        #expect(uplinks.map(\.name) == ["eth0", "wlan0"])
        #expect(uplinks.last?.sources == [.ipv4: Fact.ip("198.51.100.7")])
        #expect(uplinks.last?.routes == [Fact.defaultV4(via: "198.51.100.1", dev: 3, metric: 600)])
    }

    @Test func probeNo_keepsALinkOutOfTheUplinks_andNamesTheHostPathsLink() throws {
        let rules = [InterfaceRule(pattern: "wlan*", probe: false), InterfaceRule(pattern: "eth*", probe: true)]
        var state = try onlineWired(classifier: Classifier(rules: rules))
        #expect(state.unprobedHostInterface() == nil, "eth0 is probed")
        _ = state.apply([
            .link(Fact.ethernet(3, "wlan0"), device: DeviceFacts(hasPhy80211: true)),
            .address(Fact.v4(3, "198.51.100.7")),
            .route(Fact.defaultV4(via: "198.51.100.1", dev: 3, metric: 600), replace: false),
        ])
        #expect(state.uplinks().map(\.name) == ["eth0"])
        // A host whose path leaves through wlan0: that is the link kept off.
        var wireless = NetworkState(classifier: Classifier(rules: rules))
        _ = wireless.apply([
            .link(Fact.ethernet(3, "wlan0"), device: DeviceFacts(hasPhy80211: true)),
            .address(Fact.v4(3, "198.51.100.7")),
            .route(Fact.defaultV4(via: "198.51.100.1", dev: 3, metric: 600), replace: false),
        ])
        #expect(wireless.host.primaryInterface == "wlan0")
        #expect(wireless.unprobedHostInterface() == "wlan0")
        #expect(wireless.uplinks().isEmpty)
    }

    @Test func validatedInterfaces_theHostsProbeForThePrimary_eachUplinksOwnForTheRest() throws {
        var state = try onlineWired()
        _ = state.apply([
            .link(Fact.ethernet(3, "wlan0"), device: DeviceFacts(hasPhy80211: true)),
            .address(Fact.v4(3, "198.51.100.7")),
            .route(Fact.defaultV4(via: "198.51.100.1", dev: 3, metric: 600), replace: false),
        ])
        #expect(state.host.availableInterfaces == ["eth0", "wlan0"])
        #expect(state.host.validatedInterfaces == [])
        let epoch = state.routingEpoch
        let change = try changed(state.apply([.uplinkConnectivity(index: 3, .full)]))
        #expect(change.hostChanged && change.host.validatedInterfaces == ["wlan0"])
        #expect(state.routingEpoch == epoch, "a verdict moves no route")
        _ = state.apply([.connectivity(ConnectivityStatus(verdict: .full))])
        #expect(state.host.validatedInterfaces == ["eth0", "wlan0"])
        #expect(try changed(state.apply([.uplinkConnectivity(index: 3, .portal)])).host.validatedInterfaces == ["eth0"])
        _ = state.apply([.uplinkConnectivity(index: 3, .full)])
        // Carrier lost: the verdict goes with it, and does not come back with the carrier.
        _ = state.apply([.link(Fact.ethernet(3, "wlan0", carrier: false), device: nil)])
        _ = state.apply([.link(Fact.ethernet(3, "wlan0"), device: nil)])
        #expect(state.host.validatedInterfaces == ["eth0"])
        // unknown forgets (the probe retired), and a verdict for a link not ready is dropped.
        _ = state.apply([.uplinkConnectivity(index: 3, .full), .uplinkConnectivity(index: 3, .unknown)])
        #expect(state.verdicts.uplinks.isEmpty)
        _ = state.apply([.link(Fact.ethernet(3, "wlan0", carrier: false), device: nil), .uplinkConnectivity(index: 3, .full)])
        #expect(state.verdicts.uplinks.isEmpty)
    }
}

// MARK: - NAT64 prefixes from router advertisements (RFC 8781, PREF64)

extension EngineTests {
    private static let wellKnown = IPPrefix(Fact.ip("64:ff9b::"), length: 96)
    private static func pref64(
        _ prefix: IPPrefix = wellKnown, lifetime: Duration = .seconds(1800), on index: Int32 = 2, by router: String = "fe80::1",
        at received: ContinuousClock.Instant
    ) -> NetworkEvent {
        .nat64Prefix(AnnouncedNat64Prefix(interfaceIndex: index, router: Fact.ip(router), prefix: prefix, lifetime: lifetime), received: received)
    }

    @Test func nat64Prefix_onThePrimary_isTheHosts_untilItsLifetimeEnds_atTheOneExpiryTheTimerIsArmedFor() throws {
        var state = try onlineWired()
        let epoch = state.routingEpoch
        let start = ContinuousClock.now
        #expect(state.announcements.nextDeadline == nil)
        let change = try changed(state.apply([Self.pref64(at: start)]))
        #expect(change.hostChanged)
        #expect(change.host.nat64Prefix == Nat64Prefix(prefix: Self.wellKnown, router: Fact.ip("fe80::1"), interfaceName: "eth0"))
        #expect(state.routingEpoch == epoch, "an announcement moves no route")
        #expect(state.announcements.nextDeadline == start + .seconds(1800))
        // Routers repeat theirs: no change, the lifetime runs from the latest.
        #expect(state.apply([Self.pref64(at: start + .seconds(600))]) == nil)
        #expect(state.announcements.nextDeadline == start + .seconds(2400))
        // The timer firing early (or for another reason) drops nothing.
        #expect(state.apply([.clock(start + .seconds(2399))]) == nil)
        #expect(state.host.nat64Prefix != nil)
        let expired = try changed(state.apply([.clock(start + .seconds(2400))]))
        #expect(expired.hostChanged && expired.host.nat64Prefix == nil)
        #expect(state.announcements.nextDeadline == nil, "nothing held: the timer is disarmed")
    }

    @Test func nat64Prefix_isWithdrawnByLifetimeZero_replaced_andEndsWithTheRoutersRouteOrTheLink() throws {
        var state = try onlineWired()
        let start = ContinuousClock.now
        let other = IPPrefix(Fact.ip("2001:db8:64::"), length: 64)
        // Each step past the hold window of the one before (see the coalescing tests).
        let step = { (n: Int) in start + LinkAnnouncements.hold * n }
        _ = state.apply([Self.pref64(at: start)])
        // Lifetime 0 for another prefix than the one held withdraws nothing.
        #expect(state.apply([Self.pref64(other, lifetime: .zero, at: step(1))]) == nil)
        #expect(try changed(state.apply([Self.pref64(other, at: step(1))])).host.nat64Prefix?.prefix == other)
        #expect(try changed(state.apply([Self.pref64(other, lifetime: .zero, at: step(2))])).host.nat64Prefix == nil)
        #expect(state.announcements.nextDeadline == nil)

        let viaRouter = Fact.defaultV6(via: "fe80::1", dev: 2)
        let viaOther = Fact.defaultV6(via: "fe80::2", dev: 2, metric: 2048)
        _ = state.apply([.route(viaRouter, replace: false), .route(viaOther, replace: false), Self.pref64(at: step(3))])
        _ = state.apply([.routeRemoved(viaOther)])
        #expect(state.host.nat64Prefix?.prefix == Self.wellKnown, "another router's route says nothing of this one")
        #expect(try changed(state.apply([.routeRemoved(viaRouter)])).host.nat64Prefix == nil)

        _ = state.apply([Self.pref64(at: step(4))])
        #expect(try changed(state.apply([.link(Fact.ethernet(2, "eth0", carrier: false), device: nil)])).host.nat64Prefix == nil)
        _ = state.apply([.link(Fact.ethernet(2, "eth0"), device: nil)])
        #expect(state.host.nat64Prefix == nil, "not back with the carrier")
        #expect(state.announcements.nextDeadline == nil)
        // A stale message for a link without carrier, or one never seen, is dropped.
        _ = state.apply([.link(Fact.ethernet(4, "eth2", carrier: false), device: DeviceFacts()), Self.pref64(on: 4, at: start), Self.pref64(on: 99, at: start)])
        #expect(state.announcements.routers.isEmpty)
    }

    @Test func nat64Prefix_ofTheRouterThePathUses_winsOnItsLink_andEachExpiresOnItsOwn() throws {
        var state = try onlineWired()
        let start = ContinuousClock.now
        let first = IPPrefix(Fact.ip("2001:db8:1::"), length: 96)
        let second = IPPrefix(Fact.ip("2001:db8:2::"), length: 96)
        _ = state.apply([
            .address(Fact.v6(2, "2001:db8::10")), .route(Fact.defaultV6(via: "fe80::2", dev: 2), replace: false),
            .internetPath(family: .ipv4, route: nil), .internetPath(family: .ipv6, route: Fact.defaultV6(via: "fe80::2", dev: 2)),
            Self.pref64(first, lifetime: .seconds(60), by: "fe80::1", at: start),
            Self.pref64(second, lifetime: .seconds(120), by: "fe80::2", at: start),
        ])
        #expect(state.host.nat64Prefix?.prefix == second, "the IPv6 path leaves through fe80::2")
        #expect(state.announcements.nextDeadline == start + .seconds(60), "the earliest of both")
        #expect(state.apply([.clock(start + .seconds(60))]) == nil, "fe80::1's prefix was not the host's")
        #expect(state.announcements.nextDeadline == start + .seconds(120))
        #expect(try changed(state.apply([.clock(start + .seconds(121))])).host.nat64Prefix == nil)
    }
}
