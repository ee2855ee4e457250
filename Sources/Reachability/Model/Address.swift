/// An address assigned to a link (RTM_NEWADDR).
public struct Address: Hashable, Sendable {
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
    public var isUsable: Bool {
        flags.isDisjoint(with: [.tentative, .dadFailed])
    }

    /// Usable as the source of a packet beyond the link: not host-scoped, and for IPv6 not link-local.
    public var isUsableBeyondLink: Bool {
        guard isUsable, scope != Self.scopeHost else { return false }
        if case .v6 = address { return scope != Self.scopeLink && !address.isLinkLocal }
        return true
    }
}
