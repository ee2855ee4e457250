/// An address assigned to a link (RTM_NEWADDR).
package struct Address: Hashable, Sendable {
    public var interfaceIndex: Int32
    /// The local address with the subnet's prefix length.
    public var prefix: IPPrefix
    /// `RT_SCOPE_*`: 0 universe, 200 site, 253 link, 254 host.
    public var scope: UInt8
    public var flags: AddressFlags
    /// When the valid lifetime ends (IFA_CACHEINFO's `ifa_valid`, SLAAC or DHCP); nil for
    /// forever. The kernel deletes the address a little after (its lifetime check runs on a
    /// rounded timer); the Engine counts it gone at the deadline (NetworkState+Lifetimes).
    public var validUntil: ContinuousClock.Instant?

    public init(
        interfaceIndex: Int32, prefix: IPPrefix, scope: UInt8 = 0, flags: AddressFlags = [],
        validUntil: ContinuousClock.Instant? = nil
    ) {
        self.interfaceIndex = interfaceIndex
        self.prefix = prefix
        self.scope = scope
        self.flags = flags
        self.validUntil = validUntil
    }

    public var address: IPAddress { prefix.address }

    /// What identifies an address to the kernel: link, local address and prefix length.
    public struct Key: Hashable, Sendable {
        public var interfaceIndex: Int32
        public var prefix: IPPrefix
    }
    public var key: Key { Key(interfaceIndex: interfaceIndex, prefix: prefix) }

    public static let scopeHost: UInt8 = 254
    public static let scopeLink: UInt8 = 253

    /// Usable as a source address now: not still in duplicate address detection, not failed it.
    /// An optimistic address (RFC 4429, `optimistic_dad` with `use_optimistic`) is one the kernel
    /// already sends from while its detection runs.
    public var isUsable: Bool {
        !flags.contains(.dadFailed) && (!flags.contains(.tentative) || flags.contains(.optimistic))
    }

    /// Usable as the source of a packet beyond the link: not host- or link-scoped, and not
    /// link-local, IPv6's fe80::/10 nor IPv4's 169.254/16 (RFC 3927: never forwarded, whatever
    /// scope an autoconfiguration daemon gave it).
    public var isUsableBeyondLink: Bool {
        guard isUsable, scope != Self.scopeHost, scope != Self.scopeLink else { return false }
        return !address.isLinkLocal
    }
}
