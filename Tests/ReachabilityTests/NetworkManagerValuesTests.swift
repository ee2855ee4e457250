import Testing
@testable import Reachability

/// issue 12: reachd's answer in NetworkManager's numbers, rule by rule, without a bus.
@Suite("NetworkManager values")
struct NetworkManagerValuesTests {
    static func link(_ index: Int32, _ name: String, _ kind: InterfaceKind, expensive: Bool = false) -> InterfaceStatus {
        var flags: ReachabilityFlags = [.reachable]
        flags.formUnion(kind.flags)
        if expensive { flags.insert(.isExpensive) }
        return InterfaceStatus(index: index, name: name, kind: kind, flags: flags, addresses: [])
    }

    static let eth = link(2, "eth0", .wired)
    static let wlan = link(3, "wlan0", .wifi)
    static let wwan = link(4, "wwan0", .cellular)
    static let tun = link(5, "tun0", .vpn)

    static func host(_ state: HostState, _ primary: String, underlying: String = "", flags: ReachabilityFlags = [.reachable]) -> HostStatus {
        HostStatus(flags: flags, state: state, primaryInterface: primary, availableInterfaces: [primary], underlyingInterface: underlying)
    }

    @Test func onlineOverEthernetIsGlobalFullAndNotMetered() {
        let values = NetworkManagerValues(host: Self.host(.online, "eth0", flags: [.reachable, .isWired]), interfaces: [Self.eth, Self.wwan])
        #expect(values.state == 70 && values.connectivity == 4)
        #expect(values.metered == NetworkManagerValues.meteredGuessNo)
        #expect(values.primaryDevice == .init(index: 2, name: "eth0", deviceType: 1, metered: 4))
    }

    /// issue 11 meets 12: the probe's verdict becomes NetworkManager's site state and connectivity.
    @Test func theProbesVerdictIsConnectedSiteWithItsConnectivity() {
        for (verdict, state, connectivity): (ConnectivityVerdict, UInt32, UInt32) in [
            (.portal, 60, 2), (.limited, 60, 3), (.none, 60, 1), (.full, 70, 4), (.unknown, 70, 4),
        ] {
            var host = Self.host(.online, "eth0", flags: [.reachable, .isWired])
            host.connectivity = ConnectivityStatus(verdict: verdict)
            let values = NetworkManagerValues(host: host, interfaces: [Self.eth])
            #expect(values.state == state && values.connectivity == connectivity, "\(verdict): \(values)")
            #expect(values.primaryDevice?.name == "eth0")
        }
    }

    @Test func cellularIsAModemMeteredByGuessAndAConfiguredLinkIsMetered() {
        let cellular = NetworkManagerValues(host: Self.host(.online, "wwan0", flags: [.reachable, .isWWAN, .isExpensive]), interfaces: [Self.wwan])
        #expect(cellular.primaryDevice?.deviceType == 8 && cellular.metered == NetworkManagerValues.meteredGuessYes)
        let tethered = Self.link(3, "wlan0", .wifi, expensive: true)
        let configured = NetworkManagerValues(host: Self.host(.online, "wlan0", flags: [.reachable, .isWiFi, .isExpensive]), interfaces: [tethered])
        #expect(configured.primaryDevice?.deviceType == 2 && configured.metered == NetworkManagerValues.meteredYes)
    }

    /// NetworkManager's convention: with a VPN holding the default route, PrimaryConnection is
    /// the connection that carries the VPN.
    @Test func aVPNLeadsToItsUnderlyingTransport() {
        let values = NetworkManagerValues(
            host: Self.host(.online, "tun0", underlying: "wwan0", flags: [.reachable, .isVPN, .isWWAN, .isExpensive]),
            interfaces: [Self.eth, Self.wwan, Self.tun])
        #expect(values.primaryDevice?.name == "wwan0" && values.primaryDevice?.deviceType == 8)
        #expect(values.metered == NetworkManagerValues.meteredGuessYes)
        // Without a known carrier, the tunnel itself.
        let alone = NetworkManagerValues(host: Self.host(.online, "tun0", flags: [.reachable, .isVPN]), interfaces: [Self.tun])
        #expect(alone.primaryDevice?.name == "tun0" && alone.primaryDevice?.deviceType == 16)
    }

    /// Carrier lost on the primary link: the kernel still routes there, so not online; NetworkManager
    /// would have deactivated that connection, so there is no primary connection and Metered is unknown.
    @Test func notOnlineHasNoPrimaryConnection() {
        let local = NetworkManagerValues(host: Self.host(.local, "eth0", flags: [.connectionRequired, .isWired]), interfaces: [Self.eth, Self.wlan])
        #expect(local.state == 50 && local.connectivity == 1 && local.metered == 0 && local.primaryDevice == nil)
        let offline = NetworkManagerValues(host: HostStatus(), interfaces: [])
        #expect(offline.state == 20 && offline.connectivity == 1 && offline.metered == 0 && offline.primaryDevice == nil)
    }

    /// An ignored link is hidden from listings but may still be the kernel's choice: no device
    /// object, and the host's flags say whether the path is metered.
    @Test func anIgnoredPrimaryLinkHasNoDeviceButItsMeteredness() {
        let values = NetworkManagerValues(host: Self.host(.online, "usb0", flags: [.reachable, .isExpensive]), interfaces: [Self.eth])
        #expect(values.state == 70 && values.primaryDevice == nil && values.metered == NetworkManagerValues.meteredYes)
    }

    @Test(arguments: InterfaceKind.allCases) func everyKindHasADeviceType(_ kind: InterfaceKind) {
        let expected: [InterfaceKind: UInt32] = [.wired: 1, .wifi: 2, .cellular: 8, .bridge: 13, .vpn: 16, .virtual: 20, .loopback: 32, .other: 14]
        #expect(NetworkManagerValues.deviceType(kind) == expected[kind])
    }
}
