import Testing
@testable import Reachability

/// Radio state (rfkill) as an input of the pure Engine (`NetworkEvent.radio`): the `radioOff`
/// flag of Wi-Fi and cellular links, and `radioOff` as the host's reason, ranked against the
/// others. No root, no sockets.
struct RadioStateTests {
    typealias Fixture = StallStateTests

    /// A link that an rfkill block took down, as cfg80211 leaves it: administratively down.
    static func down(_ index: Int32, _ name: String) -> Link {
        Link(index: index, name: name, flags: [], hardwareType: Link.hardwareEther, operState: .down)
    }

    /// wlan0 (3) alone, online.
    static func wifiOnly() -> NetworkState {
        var state = NetworkState()
        _ = state.apply([
            .link(Fixture.link(3, "wlan0"), device: DeviceFacts()),
            .address(Fixture.address(3, "198.51.100.7")),
            .route(Fixture.defaultRoute(via: "198.51.100.1", dev: 3, metric: 600), replace: false),
        ])
        return state
    }

    @Test func aBlockedRadioTakingItsLinkDownIsOneChangeWithReasonRadioOff() throws {
        var state = Self.wifiOnly()
        #expect(state.host.state == .online && state.host.pathFacts.reason == nil)
        let epoch = state.routingEpoch
        // The block and the link going down arrive in one batch (the mirror reads the switch on
        // the link's own event): one change, the reason at once.
        let change = try Fixture.changed(state.apply([.link(Self.down(3, "wlan0"), device: nil), .radio(index: 3, .soft)]))
        #expect(change.hostChanged && change.host.state == .offline)
        #expect(change.host.pathFacts.reason == .radioOff)
        #expect(change.changedInterfaces.map(\.flags) == [[.isWiFi, .radioOff]])
        #expect(state.routingEpoch == epoch + 1, "the link moved routing; the radio fact did not add to it")
        #expect(state.interface(named: "wlan0")?.json["flags"] == .array([.string("radioOff"), .string("isWiFi")]))

        // Switched back on while the link is still down: the flag goes, the reason falls back.
        let on = try Fixture.changed(state.apply([.radio(index: 3, [])]))
        #expect(on.host.pathFacts.reason == .noRoute)
        #expect(on.changedInterfaces.map(\.flags) == [[.isWiFi]])
        #expect(state.routingEpoch == epoch + 1, "a radio fact moves no route")
        // The same fact again is no change.
        #expect(state.apply([.radio(index: 3, [])]) == nil)
    }

    @Test func aRadioFlipAloneChangesTheInterfaceNotTheHost() throws {
        var state = Self.wifiOnly()
        let change = try Fixture.changed(state.apply([.radio(index: 3, [.soft, .hard])]))
        #expect(!change.hostChanged, "still online through it until the link goes down; the host's flags never carry it")
        #expect(change.changedInterfaces.first?.flags.contains(.radioOff) == true)
        #expect(state.apply([.radio(index: 3, .hard)]) == nil, "soft or hard, the flag is the same")
    }

    @Test func onlyWiFiAndCellularLinksShowARadio() throws {
        var state = NetworkState()
        _ = state.apply([.link(Fixture.link(2, "eth0"), device: DeviceFacts()), .link(Fixture.link(4, "wwan0"), device: DeviceFacts())])
        _ = state.apply([.radio(index: 2, .soft), .radio(index: 4, .soft), .radio(index: 9, .soft)])
        #expect(state.interface(named: "eth0")?.flags.contains(.radioOff) == false)
        #expect(state.interface(named: "wwan0")?.flags == [.connectionRequired, .isWWAN, .isExpensive, .radioOff])
        // A link that goes forgets its radio; one that comes back under the index starts with it on.
        _ = state.apply([.linkRemoved(index: 4)])
        _ = state.apply([.link(Fixture.link(4, "wwan0"), device: DeviceFacts())])
        #expect(state.interface(named: "wwan0")?.flags.contains(.radioOff) == false)
    }

    @Test func aWiredUplinkOnlineMeansNoReason_aWiredLinkDownLeavesRadioOff() throws {
        var state = Fixture.twoUplinks()
        _ = state.apply([.link(Self.down(3, "wlan0"), device: nil), .radio(index: 3, .soft)])
        #expect(state.host.state == .online && state.host.pathFacts.reason == nil, "eth0 still carries the host")
        // eth0 loses its carrier: its route stays (linkdown), so it is no uplink any more, and the
        // radio is what would bring the host back.
        _ = state.apply([.link(Fixture.link(2, "eth0", carrier: false), device: nil)])
        #expect(state.host.state == .offline && state.host.primaryInterface == "eth0")
        #expect(state.host.pathFacts.reason == .radioOff, "ranks above linkDown")
        // eth0 comes back: online, no reason, though the radio is still off.
        _ = state.apply([.link(Fixture.link(2, "eth0"), device: nil)])
        #expect(state.host.state == .online && state.host.pathFacts.reason == nil)
        #expect(state.interface(named: "wlan0")?.flags.contains(.radioOff) == true)
    }

    @Test func aKillSwitchOverALiveUplinkStaysPolicyBlocked_withoutOneTheRadioSaysWhy() throws {
        var state = Fixture.twoUplinks()
        let blocked = Route(destination: IPPrefix(.anyV4, length: 0), type: .unreachable, nextHops: [])
        _ = state.apply([
            .link(Self.down(3, "wlan0"), device: nil), .radio(index: 3, .soft),
            .internetPath(family: .ipv4, route: blocked), .internetPath(family: .ipv6, route: nil),
        ])
        #expect(state.host.pathFacts.reason == .policyBlocked, "eth0 is live: the kill switch is why")
        _ = state.apply([.link(Self.down(2, "eth0"), device: nil), .internetPath(family: .ipv4, route: blocked)])
        #expect(state.host.pathFacts.reason == .radioOff, "no uplink left: the radio is the first thing to switch on")
    }

    @Test func anIgnoredRadioLinkGivesNoReason() throws {
        var state = NetworkState(classifier: Classifier(rules: [InterfaceRule(pattern: "wlan0", ignore: true)]))
        _ = state.apply([.link(Self.down(3, "wlan0"), device: DeviceFacts()), .radio(index: 3, .soft)])
        #expect(state.host.pathFacts.reason == .noRoute)
    }

    @Test func aMonitorRestrictedToWiFiSaysRadioOff_oneForWiredDoesNot() throws {
        var state = Fixture.twoUplinks()
        _ = state.apply([.link(Self.down(3, "wlan0"), device: nil), .radio(index: 3, .soft)])
        let snapshot = state.snapshot
        let interfaces = Dictionary(uniqueKeysWithValues: snapshot.interfaces.map { ($0.index, $0) })
        let wifi = Path(host: snapshot.host, interfaces: interfaces, restriction: .init(requiredInterfaceType: .wifi))
        #expect(wifi.status == .unsatisfied && wifi.unsatisfiedReason == .radioOff)
        let wired = Path(host: snapshot.host, interfaces: interfaces, restriction: .init(requiredInterfaceType: .wired))
        #expect(wired.status == .satisfied)
    }

    @Test func theFlagHasItsBitAndName() {
        #expect(ReachabilityFlags.radioOff.rawValue == 1 << 13)
        #expect(ReachabilityFlags(name: "radioOff") == .radioOff)
        #expect(([.connectionRequired, .radioOff, .isWiFi] as ReachabilityFlags).description == "connectionRequired|radioOff|isWiFi")
        #expect(Reason(rawValue: "radioOff") == .radioOff)
    }
}
