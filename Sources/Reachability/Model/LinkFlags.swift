/// `IFF_*` flags of a link (`ifinfomsg.ifi_flags`), values from <linux/if.h>, spelled out so the
/// Model needs no C module. Bits without a name here are kept as the kernel sent them.
package struct LinkFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let up = LinkFlags(rawValue: 0x1)
    public static let loopback = LinkFlags(rawValue: 0x8)
    public static let pointToPoint = LinkFlags(rawValue: 0x10)
    public static let running = LinkFlags(rawValue: 0x40)
    public static let lowerUp = LinkFlags(rawValue: 0x10000)
    public static let dormant = LinkFlags(rawValue: 0x20000)
}

/// `IFA_F_*` flags of an address (IFA_FLAGS when present, else `ifa_flags`), from <linux/if_addr.h>.
package struct AddressFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// IFA_F_OPTIMISTIC: tentative, yet already a source (RFC 4429).
    public static let optimistic = AddressFlags(rawValue: 0x04)
    public static let dadFailed = AddressFlags(rawValue: 0x08)
    public static let deprecated = AddressFlags(rawValue: 0x20)
    public static let tentative = AddressFlags(rawValue: 0x40)
}
