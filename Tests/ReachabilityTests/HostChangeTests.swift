import Testing
@testable import Reachability

// The pure Engine's description of each host change (`ReachabilityChange.hostChange`): what moved,
// and `rebind` exactly when a source address the host's internet traffic left from went away or
// was replaced. Synthetic facts (`Fact`), the kernel's route answers given as it gives them.

@Suite struct HostChangeTests {
    /// The kernel's answer for the internet, as `ip route get 192.0.2.255`... would give it: the
    /// link, the gateway and the source it picked (RTA_PREFSRC).
    static func answer(via gateway: String, dev index: Int32, source: String) -> NetworkEvent {
        var route = Fact.defaultV4(via: gateway, dev: index)
        route.preferredSource = Fact.ip(source)
        return .internetPath(family: .ipv4, route: route)
    }

    static func described(
        _ change: ReachabilityChange?, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> HostChange {
        let change = try #require(change, sourceLocation: sourceLocation)
        #expect(change.hostChanged, sourceLocation: sourceLocation)
        return try #require(change.hostChange, sourceLocation: sourceLocation)
    }

    /// eth0 (index 2) online with 192.0.2.10, the kernel's source for the internet.
    static func online() throws -> NetworkState {
        var state = NetworkState()
        let first = try described(state.apply([
            .link(Fact.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Fact.v4(2, "192.0.2.10")),
            .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false),
            answer(via: "192.0.2.1", dev: 2, source: "192.0.2.10"),
            .internetPath(family: .ipv6, route: nil),
        ]))
        // Coming online from nothing: everything moved, but nothing was bound to rebind.
        #expect(first.changed == [.state, .primary, .sourceAddress, .addresses, .gateway, .families, .interfaces, .reason, .flags])
        #expect(!first.rebind)
        #expect(first.sourceAddress == Fact.ip("192.0.2.10"))
        #expect(first.previousSourceAddress == nil)
        #expect(state.addressing == HostAddressing(sources: [Fact.ip("192.0.2.10")], addresses: [IPPrefix(Fact.ip("192.0.2.10"), length: 24)]))
        return state
    }

    @Test func secondAddress_thatIsNotTheSource_isAHostChange_withoutRebind() throws {
        var state = try Self.online()
        let change = try Self.described(state.apply([
            .address(Fact.v4(2, "192.0.2.20")), Self.answer(via: "192.0.2.1", dev: 2, source: "192.0.2.10"),
        ]))
        #expect(change.changed == [.addresses])
        #expect(!change.rebind)
        #expect(change.sourceAddress == Fact.ip("192.0.2.10"))
        #expect(change.previousSourceAddress == Fact.ip("192.0.2.10"))
    }

    @Test func replacedSourceAddress_rebinds() throws {
        var state = try Self.online()
        // A DHCP renewal with a new lease: the new address first, then the old one goes.
        let change = try Self.described(state.apply([
            .address(Fact.v4(2, "192.0.2.11")), .addressRemoved(Fact.v4(2, "192.0.2.10")),
            .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false),
            Self.answer(via: "192.0.2.1", dev: 2, source: "192.0.2.11"),
        ]))
        #expect(change.changed == [.sourceAddress, .addresses])
        #expect(change.rebind)
        #expect(change.sourceAddress == Fact.ip("192.0.2.11"))
        #expect(change.previousSourceAddress == Fact.ip("192.0.2.10"))
    }

    @Test func sourceAddressRemoved_goingOffline_rebinds_andComingBackDoesNot() throws {
        var state = try Self.online()
        let gone = try Self.described(state.apply([
            .addressRemoved(Fact.v4(2, "192.0.2.10")), .internetPath(family: .ipv4, route: nil),
        ]))
        #expect(gone.rebind)
        #expect(gone.changed.contains(.sourceAddress) && gone.changed.contains(.state) && gone.changed.contains(.addresses))
        #expect(gone.sourceAddress == nil)
        #expect(gone.previousSourceAddress == Fact.ip("192.0.2.10"))

        let back = try Self.described(state.apply([
            .address(Fact.v4(2, "192.0.2.10")), .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false),
            Self.answer(via: "192.0.2.1", dev: 2, source: "192.0.2.10"),
        ]))
        #expect(!back.rebind)
        #expect(back.sourceAddress == Fact.ip("192.0.2.10"))
    }

    @Test func carrierLoss_keepsTheAddress_butNoTrafficLeavesFromIt_rebinds() throws {
        var state = try Self.online()
        let change = try Self.described(state.apply([.link(Fact.ethernet(2, "eth0", carrier: false), device: nil)]))
        #expect(change.rebind)
        #expect(change.changed.contains(.state))
        #expect(change.sourceAddress == nil)
    }

    @Test func primaryMovesToAnotherUplink_withAnotherSource_rebinds() throws {
        var state = try Self.online()
        _ = try Self.described(state.apply([
            .link(Fact.ethernet(4, "wlan0"), device: DeviceFacts(deviceType: "wlan")),
            .address(Fact.v4(4, "198.51.100.7")),
            .route(Fact.defaultV4(via: "198.51.100.1", dev: 4, metric: 600), replace: false),
            Self.answer(via: "192.0.2.1", dev: 2, source: "192.0.2.10"),
        ]))
        #expect(state.host.primaryInterface == "eth0")
        let change = try Self.described(state.apply([
            .routeRemoved(Fact.defaultV4(via: "192.0.2.1", dev: 2)),
            Self.answer(via: "198.51.100.1", dev: 4, source: "198.51.100.7"),
        ]))
        #expect(change.rebind)
        #expect(change.changed.contains(.primary) && change.changed.contains(.sourceAddress) && change.changed.contains(.gateway))
        #expect(change.sourceAddress == Fact.ip("198.51.100.7"))
        #expect(change.previousSourceAddress == Fact.ip("192.0.2.10"))
    }

    @Test func meteredOnly_namesExpensive_withoutRebind() throws {
        var state = try Self.online()
        let change = try Self.described(state.reclassify(with: Classifier(rules: [InterfaceRule(pattern: "eth0", metered: true)])))
        #expect(change.changed == [.expensive])
        #expect(!change.rebind)
        let constrained = try Self.described(state.reclassify(with: Classifier(rules: [InterfaceRule(pattern: "eth0", metered: true, constrained: true)])))
        #expect(constrained.changed == [.constrained])
        #expect(!constrained.rebind)
    }

    @Test func probeVerdict_stall_andNameservers_areNamed_withoutRebind() throws {
        var state = try Self.online()
        let full = try Self.described(state.apply([.connectivity(ConnectivityStatus(verdict: .full, detail: "HTTP 204"))]))
        // The primary is validated now: the validated interfaces moved with the verdict.
        #expect(full.changed == [.connectivity, .interfaces])
        #expect(!full.rebind)
        let portal = try Self.described(state.apply([
            .connectivity(ConnectivityStatus(verdict: .portal, portal: "http://login.example/", detail: "HTTP 302")),
        ]))
        #expect(portal.changed == [.connectivity, .portal, .interfaces])

        let stalled = try Self.described(state.apply([.stalls([StallStateTests.verdict(2, .stalled)])]))
        #expect(stalled.changed == [.stall])
        #expect(!stalled.rebind)

        // A nameserver routable through eth0: servers and `supportsDNS` both move, under one word.
        let dns = try Self.described(state.apply([
            .nameservers([NameserverRoute(address: Fact.ip("192.0.2.53"), route: Fact.subnet("192.0.2.0", 24, dev: 2))]),
        ]))
        #expect(dns.changed == [.dns])
        #expect(!dns.rebind)
        // Another server, equally routable: only the list moved, and that is a host change too.
        let other = try Self.described(state.apply([
            .nameservers([NameserverRoute(address: Fact.ip("192.0.2.54"), route: Fact.subnet("192.0.2.0", 24, dev: 2))]),
        ]))
        #expect(other.changed == [.dns])
    }

    @Test func deprecatedSource_isReplacedForNewConnections_andThatRebinds() throws {
        // Without the kernel's answers (pure), the source is picked as the kernel would: one
        // not deprecated first.
        var state = NetworkState()
        _ = try Self.described(state.apply([
            .link(Fact.ethernet(3, "eth0"), device: DeviceFacts()),
            .address(Fact.v6(3, "2001:db8::10")), .address(Fact.v6(3, "2001:db8::20")),
            .route(Fact.defaultV6(via: "fe80::1", dev: 3), replace: false),
        ]))
        #expect(state.addressing.sources == [Fact.ip("2001:db8::10")])
        var old = Fact.v6(3, "2001:db8::10")
        old.flags.insert(.deprecated)
        let change = try Self.described(state.apply([.address(old)]))
        #expect(change.changed == [.sourceAddress, .deprecated])
        #expect(change.rebind)
        #expect(change.sourceAddress == Fact.ip("2001:db8::20"))
        #expect(state.addressing.deprecated == [old.prefix])
    }

    @Test func secondFamily_arriving_doesNotRebind_andLeaving_does() throws {
        var state = try Self.online()
        var v6 = Fact.defaultV6(via: "fe80::1", dev: 2)
        v6.preferredSource = Fact.ip("2001:db8::10")
        let arrived = try Self.described(state.apply([
            .address(Fact.v6(2, "2001:db8::10")), .route(Fact.defaultV6(via: "fe80::1", dev: 2), replace: false),
            .internetPath(family: .ipv6, route: v6),
        ]))
        #expect(!arrived.rebind)
        #expect(arrived.changed.contains(.sourceAddress) && arrived.changed.contains(.families))
        // The primary path's source is still IPv4's.
        #expect(arrived.sourceAddress == Fact.ip("192.0.2.10"))
        let left = try Self.described(state.apply([
            .addressRemoved(Fact.v6(2, "2001:db8::10")), .internetPath(family: .ipv6, route: nil),
        ]))
        #expect(left.rebind)
        #expect(left.sourceAddress == Fact.ip("192.0.2.10"))
    }

    @Test func interfaceNoise_isNoHostChange_andHasNoDescription() throws {
        var state = try Self.online()
        let applied = state.apply([
            .link(Fact.ethernet(7, "docker0", infoKind: "bridge"), device: DeviceFacts()),
            .address(Fact.v4(7, "172.17.0.1", 16)),
            Self.answer(via: "192.0.2.1", dev: 2, source: "192.0.2.10"),
        ])
        let change = try #require(applied)
        #expect(!change.hostChanged)
        #expect(change.hostChange == nil)
    }

    @Test func descriptions_followedByOneAnother_readAsOne() {
        let first = HostChange(changed: [.addresses], rebind: false, sourceAddress: Fact.ip("192.0.2.10"), previousSourceAddress: Fact.ip("192.0.2.10"))
        let second = HostChange(
            changed: [.primary, .sourceAddress], rebind: true, sourceAddress: Fact.ip("198.51.100.7"), previousSourceAddress: Fact.ip("192.0.2.10"))
        let both = first.followed(by: second)
        #expect(both.changed == [.primary, .sourceAddress, .addresses])
        #expect(both.rebind)
        #expect(both.sourceAddress == Fact.ip("198.51.100.7"))
        #expect(both.previousSourceAddress == Fact.ip("192.0.2.10"))
        #expect(both.changedNames == ["primary", "sourceAddress", "addresses"])
    }
}
