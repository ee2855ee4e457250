/// Why a link (and a path through it) is expensive: the first fact that says so, from the most
/// authoritative down. A user who sees `isExpensive` can tell a configured link from a guess,
/// and a wrong guess from a missing rule.
package enum ExpensiveReason: String, Sendable, Hashable, CaseIterable {
    /// `Metered=yes` in reachd.conf.
    case configuration
    /// A cellular link: a modem's data path.
    case cellular
    /// A phone's USB tethering: the link's driver is one only phones drive (`Classifier.tetherDrivers`).
    case tether
    /// An iPhone's Wi-Fi hotspot, by the address layout every iPhone hands out: an IPv4 address
    /// in 172.20.10.0/28 with the default route through 172.20.10.1.
    case hotspot
    /// The network's DHCP server said so: option 43 (vendor-specific information) carrying
    /// `ANDROID_METERED`, which Android's hotspots send (and NetworkManager honours), in the lease
    /// systemd-networkd records.
    case dhcp
    /// NetworkManager runs and the user set the link's connection as metered
    /// (`connection.metered yes`: its device's `Metered` is 1, YES). Below reachd.conf, above
    /// reachd's own guesses; its "no" silences those guesses as `Metered=no` does.
    case networkManager
    /// NetworkManager runs and guesses the link is metered (its device's `Metered` is 3,
    /// GUESS_YES: a modem, or `ANDROID_METERED` from a DHCP server or a Wi-Fi access point's
    /// beacon, which reachd cannot see). The weakest reason: reachd's own facts come first.
    case networkManagerGuess

    /// The words of the status line: `Metered: yes (cellular kind)`.
    public var text: String {
        switch self {
        case .configuration: "configuration"
        case .cellular: "cellular kind"
        case .tether: "USB tether"
        case .hotspot: "iPhone hotspot address layout"
        case .dhcp: "the DHCP server says metered"
        case .networkManager: "NetworkManager's connection setting"
        case .networkManagerGuess: "NetworkManager's guess"
        }
    }
}
