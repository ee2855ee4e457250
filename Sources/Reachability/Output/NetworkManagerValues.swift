/// reachd's answer in the values NetworkManager's D-Bus API gives, for the opt-in compatibility
/// surface (`[Compatibility] NetworkManager=yes`). Only what GLib's and Qt's NetworkManager
/// backends read: the manager's `State`, `Connectivity`, `Metered` and `PrimaryConnection`, and
/// behind the latter one device's `DeviceType` and `Metered`. Pure, so every rule is tested
/// without a bus; the numbers are NetworkManager's (nm-dbus-interface.h: NMState,
/// NMConnectivityState, NMMetered, NMDeviceType).
package struct NetworkManagerValues: Hashable, Sendable {
    /// NMState: 70 CONNECTED_GLOBAL only when online (GLib and Qt both call that "online"), 50
    /// CONNECTED_LOCAL when some link is ready but the internet path is not, 20 DISCONNECTED
    /// otherwise; 60 CONNECTED_SITE when the opt-in probe found a portal, an error answer or none.
    package var state: UInt32
    /// NMConnectivityState: 4 FULL when online, else 1 NONE. Without a probe NetworkManager does
    /// the same: full when a default route through a ready link exists. With reachd's probe on,
    /// its verdict: 2 PORTAL, 3 LIMITED, 1 NONE; 2 PORTAL too while the network's captive-portal
    /// API says the host is captive (`PortalSession.captive`).
    package var connectivity: UInt32
    /// NMMetered of the device `PrimaryConnection` leads to; 0 UNKNOWN when there is none.
    package var metered: UInt32
    /// The device behind `PrimaryConnection`; nil for "/" (not online).
    package var primaryDevice: Device?

    /// One link as NetworkManager's Device object shows it.
    package struct Device: Hashable, Sendable {
        package var index: Int32
        package var name: String
        package var deviceType: UInt32
        package var metered: UInt32

        package init(index: Int32, name: String, deviceType: UInt32, metered: UInt32) {
            self.index = index
            self.name = name
            self.deviceType = deviceType
            self.metered = metered
        }
    }

    package static let stateDisconnected: UInt32 = 20
    package static let stateConnectedLocal: UInt32 = 50
    package static let stateConnectedGlobal: UInt32 = 70
    package static let stateConnectedSite: UInt32 = 60
    package static let connectivityNone: UInt32 = 1
    package static let connectivityPortal: UInt32 = 2
    package static let connectivityLimited: UInt32 = 3
    package static let connectivityFull: UInt32 = 4
    package static let meteredUnknown: UInt32 = 0
    package static let meteredYes: UInt32 = 1
    package static let meteredGuessYes: UInt32 = 3
    package static let meteredGuessNo: UInt32 = 4

    package init(host: HostStatus, interfaces: [InterfaceStatus]) {
        switch host.state {
        case .online where host.portalSession.captive:
            // The network's own captive-portal API says so: PORTAL, as NetworkManager's probe would.
            state = Self.stateConnectedSite
            connectivity = Self.connectivityPortal
        case .online where [.portal, .limited, .none].contains(host.connectivity.verdict):
            // The probe ([Connectivity]) says the route does not reach the internet: NetworkManager's
            // CONNECTED_SITE with its PORTAL (2), LIMITED (3) or NONE (1).
            state = Self.stateConnectedSite
            connectivity = switch host.connectivity.verdict {
            case .portal: Self.connectivityPortal
            case .limited: Self.connectivityLimited
            default: Self.connectivityNone
            }
        case .online:
            state = Self.stateConnectedGlobal
            connectivity = Self.connectivityFull
        case .local:
            state = Self.stateConnectedLocal
            connectivity = Self.connectivityNone
        case .offline:
            state = Self.stateDisconnected
            connectivity = Self.connectivityNone
        }
        guard host.state == .online else {
            // NetworkManager deactivates a connection whose link lost carrier, so it has no
            // primary connection then, even though the kernel keeps using that link's route.
            primaryDevice = nil
            metered = Self.meteredUnknown
            return
        }
        // NetworkManager's documented convention: when a VPN holds the default route, the
        // primary connection is the one that carries the VPN (reachd's underlying interface).
        let primary = interfaces.first { $0.name == host.primaryInterface }
        let name = primary?.kind == .vpn && !host.underlyingInterface.isEmpty ? host.underlyingInterface : host.primaryInterface
        primaryDevice = interfaces.first { $0.name == name }.map {
            Device(index: $0.index, name: $0.name, deviceType: Self.deviceType($0.kind), metered: Self.metered($0.flags, kind: $0.kind, reason: $0.expensiveReason))
        }
        // An ignored link (hidden from listings) can still be the kernel's choice: its metered-ness
        // is in the host's flags.
        metered = primaryDevice?.metered ?? Self.metered(host.flags, kind: nil, reason: host.expensiveReason)
    }

    /// NMDeviceType: 1 ETHERNET, 2 WIFI, 8 MODEM (what Qt maps to Ethernet, WiFi, Cellular), 13
    /// BRIDGE, 16 TUN (a VPN's tunnel), 20 VETH, 32 LOOPBACK, 14 GENERIC for the rest.
    package static func deviceType(_ kind: InterfaceKind) -> UInt32 {
        switch kind {
        case .wired: 1
        case .wifi: 2
        case .cellular: 8
        case .bridge: 13
        case .vpn: 16
        case .virtual: 20
        case .loopback: 32
        case .other: 14
        }
    }

    /// NMMetered: a cellular link is metered by guess (3 GUESS_YES, as NetworkManager guesses for
    /// modems), and so are a phone's tether and an iPhone hotspot (reachd's guesses,
    /// `ExpensiveReason`, NetworkManager's own guess among them); a link configured as metered,
    /// in reachd.conf or NetworkManager's connection, is metered (1 YES), any other is not by
    /// guess (4 GUESS_NO: nobody said so). GLib and Qt read 1 and 3 as metered.
    package static func metered(_ flags: ReachabilityFlags, kind: InterfaceKind?, reason: ExpensiveReason? = nil) -> UInt32 {
        guard flags.contains(.isExpensive) else { return meteredGuessNo }
        if reason == .tether || reason == .hotspot || reason == .dhcp || reason == .networkManagerGuess { return meteredGuessYes }
        return kind == .cellular || (kind == nil && flags.contains(.isWWAN)) ? meteredGuessYes : meteredYes
    }
}
