/// What NetworkManager says of a device's cost: its `Metered` property (NMMetered), the user's
/// per-connection `connection.metered` setting when one was made (`yes`, `no`), else
/// NetworkManager's own guess (`guessYes`: a modem, a DHCP server's or Wi-Fi access point's
/// `ANDROID_METERED`; `guessNo`: nothing says so). Read from NetworkManager over the system bus
/// while it runs; reachd's own rules and facts rank around it (`ExpensiveReason`).
package enum NetworkManagerMetered: UInt32, Sendable, Hashable, CaseIterable {
    case unknown = 0
    case yes = 1
    case no = 2
    case guessYes = 3
    case guessNo = 4
}
