internal import Reachability

/// Apple's `SCNetworkReachabilityFlags`: the same member names and bit values, so code that
/// tests them compiles and means the same. What each bit means on Linux is the `Reachability`
/// module's (`ReachabilityFlags`); its Linux extensions (isWiFi, isWired, isVPN, isExpensive)
/// are not carried here, because no code written for Apple platforms reads them.
///
/// Deliberately no `description` or convenience properties: the clients that port over
/// declare their own in extensions (`readableDescription`, `isReachableFlagSet`), and members of
/// the same names here would make theirs ambiguous.
public struct SCNetworkReachabilityFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The path goes over a PPP link or a tunnel (VPN) device.
    public static let transientConnection = SCNetworkReachabilityFlags(rawValue: 1 << 0)
    /// A packet to the target can leave this host now.
    public static let reachable = SCNetworkReachabilityFlags(rawValue: 1 << 1)
    /// A route exists but its link is not ready (no carrier, no address yet).
    public static let connectionRequired = SCNetworkReachabilityFlags(rawValue: 1 << 2)
    /// Never set on Linux: no link here comes up by itself when traffic is sent.
    public static let connectionOnTraffic = SCNetworkReachabilityFlags(rawValue: 1 << 3)
    /// A captive portal stands in the way (reachd's opt-in connectivity probe); on the host's
    /// own answer (the zero address) only.
    public static let interventionRequired = SCNetworkReachabilityFlags(rawValue: 1 << 4)
    /// Never set on Linux (Apple's VPN On Demand).
    public static let connectionOnDemand = SCNetworkReachabilityFlags(rawValue: 1 << 5)
    /// The target is an address of this host.
    public static let isLocalAddress = SCNetworkReachabilityFlags(rawValue: 1 << 16)
    /// The target is on-link: the route to it has no gateway.
    public static let isDirect = SCNetworkReachabilityFlags(rawValue: 1 << 17)
    /// The path leaves through a cellular link.
    public static let isWWAN = SCNetworkReachabilityFlags(rawValue: 1 << 18)
    /// Apple's older name for `connectionOnTraffic`.
    public static let connectionAutomatic = SCNetworkReachabilityFlags(rawValue: 1 << 3)

    /// The bits Apple defines; everything above is a Linux extension or reserved.
    static let appleBits: UInt32 = 0x3F | 0x7 << 16

    /// The SC bits of the library's flags, bit for bit (the two are defined to agree).
    init(_ flags: ReachabilityFlags) {
        self.init(rawValue: flags.rawValue & Self.appleBits)
    }
}
