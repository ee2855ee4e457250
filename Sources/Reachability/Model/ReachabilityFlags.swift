/// SCNetworkReachability-style flags, bit-compatible with Apple's `SCNetworkReachabilityFlags`
/// for the bits both share, with Linux extensions in bits 19-23 and, taken from bit 15 down, in
/// the bits SC leaves free between 6 and 15.
///
/// Several flags hold at once (`[.reachable, .isDirect, .isWiFi]`), hence a bitmask.
/// Bits 24-31 belong to applications and are never set by reachd.
public struct ReachabilityFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The path goes over a transient link: PPP, or a tunnel/VPN device.
    public static let transientConnection = ReachabilityFlags(rawValue: 1 << 0)
    /// A packet to the target can leave this host now.
    public static let reachable = ReachabilityFlags(rawValue: 1 << 1)
    /// A route exists, but its egress link is not ready (no carrier, dormant, no address yet).
    public static let connectionRequired = ReachabilityFlags(rawValue: 1 << 2)
    /// Reserved for SC compatibility; never produced on Linux.
    public static let connectionOnTraffic = ReachabilityFlags(rawValue: 1 << 3)
    /// The connectivity probe (`[Connectivity] URL=`) met a captive portal: a login page stands
    /// between this host and the internet. Only on the host's flags.
    public static let interventionRequired = ReachabilityFlags(rawValue: 1 << 4)
    /// Reserved for SC compatibility; never produced on Linux.
    public static let connectionOnDemand = ReachabilityFlags(rawValue: 1 << 5)
    /// Linux extension: the link is Wi-Fi or cellular and its radio is switched off (rfkill,
    /// soft or hard blocked: airplane mode, a hardware switch). Interface flags only.
    public static let radioOff = ReachabilityFlags(rawValue: 1 << 13)
    /// Linux extension: the egress link is configured as constrained (`Constrained=yes` in
    /// reachd.conf, Apple's Low Data Mode): programs should spare it (defer prefetches, lower
    /// quality). Taken from bit 15 down, after `stalled` and `radioOff`.
    public static let isConstrained = ReachabilityFlags(rawValue: 1 << 14)
    /// Linux extension: the host's own TCP traffic through this path stopped flowing: segments
    /// leave, are retransmitted and nothing comes back (or DNS keeps timing out). Passive stall
    /// detection's verdict (`StallEvaluator`); `reachable` still holds: a packet can leave.
    /// The first of the Linux extensions taken from bit 15 down: bits 6 to 15 are free in
    /// SCNetworkReachabilityFlags (docs/dbus.md names it bit 15).
    public static let stalled = ReachabilityFlags(rawValue: 1 << 15)
    /// The target is an address of this host.
    public static let isLocalAddress = ReachabilityFlags(rawValue: 1 << 16)
    /// The target is on-link: the chosen route has no gateway.
    public static let isDirect = ReachabilityFlags(rawValue: 1 << 17)
    /// The egress link is cellular.
    public static let isWWAN = ReachabilityFlags(rawValue: 1 << 18)
    /// Linux extension: the egress link is Wi-Fi.
    public static let isWiFi = ReachabilityFlags(rawValue: 1 << 19)
    /// Linux extension: the egress link is wired Ethernet.
    public static let isWired = ReachabilityFlags(rawValue: 1 << 20)
    /// Linux extension: the egress link is a VPN or tunnel.
    public static let isVPN = ReachabilityFlags(rawValue: 1 << 21)
    /// Linux extension: the egress is cellular, or configured as metered.
    public static let isExpensive = ReachabilityFlags(rawValue: 1 << 22)
    /// Linux extension: the connectivity probe got its expected answer through the host's path
    /// (the internet works, not only a route). Only on the host's flags, only with the probe on.
    public static let validated = ReachabilityFlags(rawValue: 1 << 23)

    /// Reserved for applications (like `UIControl.State.application`); reachd never sets these.
    public static let application = ReachabilityFlags(rawValue: 0xFF00_0000)

    /// Every named flag with its name, in the documented printing order.
    public static let named: [(flag: ReachabilityFlags, name: String)] = [
        (.transientConnection, "transientConnection"),
        (.reachable, "reachable"),
        (.connectionRequired, "connectionRequired"),
        (.connectionOnTraffic, "connectionOnTraffic"),
        (.interventionRequired, "interventionRequired"),
        (.connectionOnDemand, "connectionOnDemand"),
        (.radioOff, "radioOff"),
        (.stalled, "stalled"),
        (.isLocalAddress, "isLocalAddress"),
        (.isDirect, "isDirect"),
        (.isWWAN, "isWWAN"),
        (.isWiFi, "isWiFi"),
        (.isWired, "isWired"),
        (.isVPN, "isVPN"),
        (.isExpensive, "isExpensive"),
        (.isConstrained, "isConstrained"),
        (.validated, "validated"),
    ]

    /// The names of the flags that are set, in documented order; unnamed bits print as hex.
    public var names: [String] {
        var result = Self.named.filter { contains($0.flag) }.map(\.name)
        let known = Self.named.reduce(into: ReachabilityFlags()) { $0.insert($1.flag) }
        let rest = subtracting(known).rawValue
        if rest != 0 { result.append("0x" + String(rest, radix: 16)) }
        return result
    }

    /// Parses one flag name as printed by `names`.
    public init?(name: String) {
        guard let entry = Self.named.first(where: { $0.name == name }) else { return nil }
        self = entry.flag
    }
}

extension ReachabilityFlags: CustomStringConvertible {
    /// Names in documented order joined by `|`, or `[]` when empty.
    public var description: String {
        let names = self.names
        return names.isEmpty ? "[]" : names.joined(separator: "|")
    }
}
