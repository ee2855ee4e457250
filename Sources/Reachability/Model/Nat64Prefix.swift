/// A NAT64 prefix a router announced (RFC 8781, PREF64): option 38 of an IPv6 router
/// advertisement, which the kernel forwards to rtnetlink listeners (RTM_NEWNDUSEROPT) as it does
/// RFC 8910's portal option. Zero traffic: reachd only listens. A host (or its CLAT, 464XLAT)
/// synthesizes IPv6 addresses for IPv4-only destinations inside it.
///
/// Unlike option 37 it carries its own lifetime: the Engine holds it per link and router until
/// that lifetime runs out, the router withdraws it (lifetime 0), the kernel removes the default
/// route through that router, or the link goes down or away.
package struct AnnouncedNat64Prefix: Hashable, Sendable {
    public var interfaceIndex: Int32
    /// The advertisement's source (the router's link-local address).
    public var router: IPAddress
    /// An IPv6 prefix of length 32, 40, 48, 56, 64 or 96 (RFC 6052).
    public var prefix: IPPrefix
    /// How long the router says the prefix may be used; zero withdraws it.
    public var lifetime: Duration

    public init(interfaceIndex: Int32, router: IPAddress, prefix: IPPrefix, lifetime: Duration) {
        self.interfaceIndex = interfaceIndex
        self.router = router
        self.prefix = prefix
        self.lifetime = lifetime
    }

    /// RFC 8781 section 4: the Prefix Length Code (PLC) 0...5 stands for these lengths; the
    /// other codes are invalid and the option is ignored.
    package static let prefixLengths: [UInt8] = [96, 64, 56, 48, 40, 32]

    /// Ranges a NAT64 prefix must not overlap, with why: addresses synthesized in them would
    /// mean "this host", an IPv4 address written as IPv6, a group, or a neighbour on the link,
    /// never a NAT64 gateway, and a hostile router announcing one would redirect traffic that
    /// stays on the host or the link (RFC 6052 section 3.1, RFC 8781 section 5).
    package static let forbidden: [(prefix: IPPrefix, what: String)] = [
        (IPPrefix(.v6(0, 0), length: 96), "the unspecified, loopback and IPv4-compatible addresses (::/96)"),
        (IPPrefix(.v6(0, 0xFFFF_0000_0000), length: 96), "the IPv4-mapped addresses (::ffff:0:0/96)"),
        (IPPrefix(.v6(0xFF00_0000_0000_0000, 0), length: 8), "multicast (ff00::/8)"),
        (IPPrefix(.v6(0xFE80_0000_0000_0000, 0), length: 10), "link-local addresses (fe80::/10)"),
    ]

    /// Why `prefix` may not be used as a NAT64 prefix on a link whose own prefixes (its
    /// addresses' and its on-link routes') are `onLink`, or nil. Overlap either way counts: a /32
    /// holding the link's /64 would claim the neighbours' addresses too.
    package static func refusal(of prefix: IPPrefix, onLink: [IPPrefix]) -> String? {
        guard prefix.address.family == .ipv6, prefixLengths.contains(prefix.length) else {
            return "not an IPv6 prefix of length 32, 40, 48, 56, 64 or 96 (RFC 6052)"
        }
        if let range = forbidden.first(where: { overlap($0.prefix, prefix) }) { return "it overlaps \(range.what)" }
        if let own = onLink.first(where: { $0.address.family == .ipv6 && overlap($0, prefix) }) {
            return "it overlaps the link's own prefix \(network(of: own))"
        }
        return nil
    }

    /// An address's prefix as a network (`2001:db8:1::5/64` is `2001:db8:1::/64`), for the journal.
    private static func network(of prefix: IPPrefix) -> IPPrefix {
        var bytes = prefix.address.bytes
        for bit in Int(prefix.length)..<(bytes.count * 8) { bytes[bit / 8] &= ~(0x80 >> UInt8(bit % 8)) }
        return IPPrefix(IPAddress(bytes: bytes) ?? prefix.address, length: prefix.length)
    }

    private static func overlap(_ a: IPPrefix, _ b: IPPrefix) -> Bool {
        a.address.hasPrefix(b.address, length: Int(min(a.length, b.length)))
    }

    /// The option's value (the 14 bytes after type and length): the scaled lifetime (13 bits,
    /// in units of 8 seconds) and the PLC (3 bits) in one big-endian u16, then the highest 96
    /// bits of the prefix. Nil for a value of another size or an invalid PLC. Bits past the
    /// prefix length are cleared: the sender must send them as zero and the receiver ignore them.
    package static func decode(optionValue value: [UInt8], interfaceIndex: Int32, router: IPAddress) -> AnnouncedNat64Prefix? {
        guard value.count == 14 else { return nil }
        let field = UInt16(value[0]) << 8 | UInt16(value[1])
        let code = Int(field & 0x7)
        guard code < prefixLengths.count else { return nil }
        let length = prefixLengths[code]
        var bytes = Array(value[2...]) + [0, 0, 0, 0]
        for index in Int(length / 8)..<bytes.count { bytes[index] = 0 }
        guard let address = IPAddress(bytes: bytes) else { return nil }
        return AnnouncedNat64Prefix(
            interfaceIndex: interfaceIndex, router: router, prefix: IPPrefix(address, length: length),
            lifetime: .seconds(Int(field >> 3) * 8))
    }
}

/// The NAT64 prefix of the host's path (`HostStatus.nat64Prefix`): the prefix, the router that
/// announced it and the link it was announced on.
package struct Nat64Prefix: Hashable, Sendable {
    public var prefix: IPPrefix
    public var router: IPAddress
    public var interfaceName: String

    public init(prefix: IPPrefix, router: IPAddress, interfaceName: String) {
        self.prefix = prefix
        self.router = router
        self.interfaceName = interfaceName
    }
}
