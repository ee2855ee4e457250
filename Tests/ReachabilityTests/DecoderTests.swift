import Testing
@testable import Reachability
@testable import ReachabilityNetlink

// NetlinkDecoder against captured-style datagrams (every field commented), then against hostile bytes:
// every truncation, lying lengths, bad attributes, and 20,000 seeded random buffers. Netlink headers and
// attributes are host byte order; these fixtures are little-endian (x86-64, arm64).

// MARK: - Fixtures

private enum Fixture {
    /// RTM_NEWLINK: eth0, a veth port of bridge 5, carrier up.
    static let newLink: [UInt8] = [
        // struct nlmsghdr
        0x54, 0x00, 0x00, 0x00,  // nlmsg_len 84
        0x10, 0x00,  // nlmsg_type RTM_NEWLINK (16)
        0x00, 0x00,  // nlmsg_flags 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_seq 0 (a notification)
        0x00, 0x00, 0x00, 0x00,  // nlmsg_pid 0 (the kernel)
        // struct ifinfomsg
        0x00,  // ifi_family AF_UNSPEC
        0x00,  // __ifi_pad
        0x01, 0x00,  // ifi_type ARPHRD_ETHER (1)
        0x02, 0x00, 0x00, 0x00,  // ifi_index 2
        0x43, 0x10, 0x01, 0x00,  // ifi_flags UP|BROADCAST|RUNNING|MULTICAST|LOWER_UP (0x11043)
        0x00, 0x00, 0x00, 0x00,  // ifi_change 0
        // IFLA_IFNAME
        0x09, 0x00,  // rta_len 9
        0x03, 0x00,  // rta_type IFLA_IFNAME (3)
        0x65, 0x74, 0x68, 0x30, 0x00,  // "eth0\0"
        0x00, 0x00, 0x00,  // padding to 4
        // IFLA_MTU (not decoded: skipped)
        0x08, 0x00,  // rta_len 8
        0x04, 0x00,  // rta_type IFLA_MTU (4)
        0xDC, 0x05, 0x00, 0x00,  // 1500
        // IFLA_OPERSTATE
        0x05, 0x00,  // rta_len 5
        0x10, 0x00,  // rta_type IFLA_OPERSTATE (16)
        0x06,  // IF_OPER_UP (6)
        0x00, 0x00, 0x00,  // padding to 4
        // IFLA_MASTER
        0x08, 0x00,  // rta_len 8
        0x0A, 0x00,  // rta_type IFLA_MASTER (10)
        0x05, 0x00, 0x00, 0x00,  // master ifindex 5
        // IFLA_LINKINFO (nested)
        0x10, 0x00,  // rta_len 16
        0x12, 0x80,  // rta_type IFLA_LINKINFO (18) | NLA_F_NESTED (0x8000)
        0x09, 0x00,  //   rta_len 9
        0x01, 0x00,  //   rta_type IFLA_INFO_KIND (1)
        0x76, 0x65, 0x74, 0x68, 0x00,  //   "veth\0"
        0x00, 0x00, 0x00,  //   padding to 4
    ]

    /// RTM_NEWADDR: 192.0.2.10/32 on a point-to-point link 7, whose peer is 198.51.100.1.
    static let newAddress: [UInt8] = [
        // struct nlmsghdr
        0x3C, 0x00, 0x00, 0x00,  // nlmsg_len 60
        0x14, 0x00,  // nlmsg_type RTM_NEWADDR (20)
        0x00, 0x00,  // nlmsg_flags 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_seq 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_pid 0
        // struct ifaddrmsg
        0x02,  // ifa_family AF_INET (2)
        0x20,  // ifa_prefixlen 32
        0x80,  // ifa_flags IFA_F_PERMANENT (0x80; the 8-bit copy)
        0x00,  // ifa_scope RT_SCOPE_UNIVERSE (0)
        0x07, 0x00, 0x00, 0x00,  // ifa_index 7
        // IFA_ADDRESS: on point-to-point links, the peer
        0x08, 0x00,  // rta_len 8
        0x01, 0x00,  // rta_type IFA_ADDRESS (1)
        0xC6, 0x33, 0x64, 0x01,  // 198.51.100.1
        // IFA_LOCAL: ours
        0x08, 0x00,  // rta_len 8
        0x02, 0x00,  // rta_type IFA_LOCAL (2)
        0xC0, 0x00, 0x02, 0x0A,  // 192.0.2.10
        // IFA_LABEL (not decoded: skipped)
        0x09, 0x00,  // rta_len 9
        0x03, 0x00,  // rta_type IFA_LABEL (3)
        0x70, 0x70, 0x70, 0x30, 0x00,  // "ppp0\0"
        0x00, 0x00, 0x00,  // padding to 4
        // IFA_FLAGS: the full 32 bits, superseding ifa_flags
        0x08, 0x00,  // rta_len 8
        0x08, 0x00,  // rta_type IFA_FLAGS (8)
        0x80, 0x02, 0x00, 0x00,  // IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE (0x280)
    ]

    /// RTM_NEWROUTE from `ip route replace default via 192.0.2.1 dev eth0 metric 100`.
    static let newDefaultRoute: [UInt8] = [
        // struct nlmsghdr
        0x3C, 0x00, 0x00, 0x00,  // nlmsg_len 60
        0x18, 0x00,  // nlmsg_type RTM_NEWROUTE (24)
        0x00, 0x05,  // nlmsg_flags NLM_F_REPLACE (0x100) | NLM_F_CREATE (0x400)
        0x00, 0x00, 0x00, 0x00,  // nlmsg_seq 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_pid 0
        // struct rtmsg
        0x02,  // rtm_family AF_INET
        0x00,  // rtm_dst_len 0 (default)
        0x00,  // rtm_src_len 0
        0x00,  // rtm_tos 0
        0xFE,  // rtm_table RT_TABLE_MAIN (254)
        0x03,  // rtm_protocol RTPROT_BOOT (3)
        0x00,  // rtm_scope RT_SCOPE_UNIVERSE
        0x01,  // rtm_type RTN_UNICAST (1)
        0x00, 0x00, 0x00, 0x00,  // rtm_flags 0
        // RTA_TABLE
        0x08, 0x00,  // rta_len 8
        0x0F, 0x00,  // rta_type RTA_TABLE (15)
        0xFE, 0x00, 0x00, 0x00,  // 254
        // RTA_PRIORITY
        0x08, 0x00,  // rta_len 8
        0x06, 0x00,  // rta_type RTA_PRIORITY (6)
        0x64, 0x00, 0x00, 0x00,  // metric 100
        // RTA_GATEWAY
        0x08, 0x00,  // rta_len 8
        0x05, 0x00,  // rta_type RTA_GATEWAY (5)
        0xC0, 0x00, 0x02, 0x01,  // 192.0.2.1
        // RTA_OIF
        0x08, 0x00,  // rta_len 8
        0x04, 0x00,  // rta_type RTA_OIF (4)
        0x02, 0x00, 0x00, 0x00,  // ifindex 2
    ]

    /// RTM_NEWROUTE: 10.0.0.0/8 dev 3 src 192.0.2.10 in table 1000, which rtm_table cannot hold.
    static let newTableRoute: [UInt8] = [
        // struct nlmsghdr
        0x3C, 0x00, 0x00, 0x00,  // nlmsg_len 60
        0x18, 0x00,  // nlmsg_type RTM_NEWROUTE (24)
        0x00, 0x00,  // nlmsg_flags 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_seq 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_pid 0
        // struct rtmsg
        0x02,  // rtm_family AF_INET
        0x08,  // rtm_dst_len 8
        0x00,  // rtm_src_len 0
        0x00,  // rtm_tos 0
        0xFC,  // rtm_table RT_TABLE_COMPAT (252): the real table is in RTA_TABLE
        0x04,  // rtm_protocol RTPROT_STATIC (4)
        0xFD,  // rtm_scope RT_SCOPE_LINK (253)
        0x01,  // rtm_type RTN_UNICAST
        0x00, 0x00, 0x00, 0x00,  // rtm_flags 0
        // RTA_TABLE
        0x08, 0x00,  // rta_len 8
        0x0F, 0x00,  // rta_type RTA_TABLE (15)
        0xE8, 0x03, 0x00, 0x00,  // 1000
        // RTA_DST
        0x08, 0x00,  // rta_len 8
        0x01, 0x00,  // rta_type RTA_DST (1)
        0x0A, 0x00, 0x00, 0x00,  // 10.0.0.0
        // RTA_PREFSRC
        0x08, 0x00,  // rta_len 8
        0x07, 0x00,  // rta_type RTA_PREFSRC (7)
        0xC0, 0x00, 0x02, 0x0A,  // 192.0.2.10
        // RTA_OIF
        0x08, 0x00,  // rta_len 8
        0x04, 0x00,  // rta_type RTA_OIF (4)
        0x03, 0x00, 0x00, 0x00,  // ifindex 3
    ]

    /// RTM_NEWROUTE: IPv6 default, metric 1024, over two next hops (RTA_MULTIPATH).
    static let newMultipathRoute: [UInt8] = [
        // struct nlmsghdr
        0x68, 0x00, 0x00, 0x00,  // nlmsg_len 104
        0x18, 0x00,  // nlmsg_type RTM_NEWROUTE (24)
        0x00, 0x00,  // nlmsg_flags 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_seq 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_pid 0
        // struct rtmsg
        0x0A,  // rtm_family AF_INET6 (10)
        0x00,  // rtm_dst_len 0
        0x00,  // rtm_src_len 0
        0x00,  // rtm_tos 0
        0xFE,  // rtm_table RT_TABLE_MAIN
        0x09,  // rtm_protocol RTPROT_RA (9)
        0x00,  // rtm_scope RT_SCOPE_UNIVERSE
        0x01,  // rtm_type RTN_UNICAST
        0x00, 0x00, 0x00, 0x00,  // rtm_flags 0
        // RTA_TABLE
        0x08, 0x00,  // rta_len 8
        0x0F, 0x00,  // rta_type RTA_TABLE (15)
        0xFE, 0x00, 0x00, 0x00,  // 254
        // RTA_PRIORITY
        0x08, 0x00,  // rta_len 8
        0x06, 0x00,  // rta_type RTA_PRIORITY (6)
        0x00, 0x04, 0x00, 0x00,  // metric 1024
        // RTA_MULTIPATH
        0x3C, 0x00,  // rta_len 60
        0x09, 0x00,  // rta_type RTA_MULTIPATH (9)
        //   struct rtnexthop #1
        0x1C, 0x00,  //   rtnh_len 28
        0x00,  //   rtnh_flags 0
        0x00,  //   rtnh_hops 0 (weight 1)
        0x02, 0x00, 0x00, 0x00,  //   rtnh_ifindex 2
        0x14, 0x00,  //     rta_len 20
        0x05, 0x00,  //     rta_type RTA_GATEWAY (5)
        0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //     fe80::
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,  //     ...:1
        //   struct rtnexthop #2
        0x1C, 0x00,  //   rtnh_len 28
        0x00,  //   rtnh_flags 0
        0x00,  //   rtnh_hops 0
        0x03, 0x00, 0x00, 0x00,  //   rtnh_ifindex 3
        0x14, 0x00,  //     rta_len 20
        0x05, 0x00,  //     rta_type RTA_GATEWAY (5)
        0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //     fe80::
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,  //     ...:2
    ]

    /// RTM_NEWNDUSEROPT as Linux 6.18 sent it for a router advertisement carrying RFC 8910's
    /// option (captured in a namespace, see AnnouncedPortalTests).
    static let captivePortalOption: [UInt8] = [
        // struct nlmsghdr
        0x54, 0x00, 0x00, 0x00,  // nlmsg_len 84
        0x44, 0x00,  // nlmsg_type RTM_NEWNDUSEROPT (68)
        0x00, 0x00,  // nlmsg_flags 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_seq 0
        0x00, 0x00, 0x00, 0x00,  // nlmsg_pid 0
        // struct nduseroptmsg
        0x0A,  // nduseropt_family AF_INET6
        0x00,  // pad
        0x20, 0x00,  // nduseropt_opts_len 32
        0x06, 0x00, 0x00, 0x00,  // nduseropt_ifindex 6
        0x86,  // nduseropt_icmp_type ND_ROUTER_ADVERT (134)
        0x00,  // nduseropt_icmp_code
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // pads
        // the option: type 37, length 4 (32 bytes), "http://portal.example/api", NUL padding
        0x25, 0x04,
        0x68, 0x74, 0x74, 0x70, 0x3A, 0x2F, 0x2F, 0x70, 0x6F, 0x72, 0x74, 0x61, 0x6C, 0x2E, 0x65, 0x78,
        0x61, 0x6D, 0x70, 0x6C, 0x65, 0x2F, 0x61, 0x70, 0x69, 0x00, 0x00, 0x00, 0x00, 0x00,
        // NDUSEROPT_SRCADDR
        0x14, 0x00,  // rta_len 20
        0x01, 0x00,  // rta_type NDUSEROPT_SRCADDR (1)
        0xFE, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // fe80::
        0x74, 0xB7, 0xC5, 0xFF, 0xFE, 0x39, 0xBB, 0x74,  // ...74b7:c5ff:fe39:bb74
    ]

    static let all = [newLink, newAddress, newDefaultRoute, newTableRoute, newMultipathRoute]
    /// All five in one datagram, as a dump or a busy monitor socket delivers them.
    static let datagram = all.flatMap { $0 }
}

// MARK: - Byte builders for the hostile cases

/// Builds netlink bytes; checked against the hand-written fixtures in `builderMatchesFixtures`.
private enum Wire {
    static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    static func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: netlinkAlign(bytes.count) - bytes.count) }
    static func cString(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    /// A message; `length` overrides nlmsg_len (a lie).
    static func message(type: UInt16, flags: UInt16 = 0, length: UInt32? = nil, _ payload: [UInt8]) -> [UInt8] {
        let body = padded(payload)
        return u32(length ?? UInt32(16 + body.count)) + u16(type) + u16(flags) + u32(0) + u32(0) + body
    }

    /// An attribute; `length` overrides rta_len (a lie).
    static func attribute(_ type: UInt16, _ value: [UInt8], length: UInt16? = nil) -> [UInt8] {
        padded(u16(length ?? UInt16(4 + value.count)) + u16(type) + value)
    }

    static func ifinfomsg(family: UInt8 = 0, type: UInt16 = 1, index: UInt32, flags: UInt32 = 0x11043) -> [UInt8] {
        [family, 0] + u16(type) + u32(index) + u32(flags) + u32(0)
    }

    static func ifaddrmsg(family: UInt8, prefix: UInt8, flags: UInt8 = 0x80, scope: UInt8 = 0, index: UInt32) -> [UInt8] {
        [family, prefix, flags, scope] + u32(index)
    }

    static func rtmsg(family: UInt8, destinationLength: UInt8, table: UInt8 = 254, scope: UInt8 = 0, type: UInt8 = 1, flags: UInt32 = 0) -> [UInt8] {
        [family, destinationLength, 0, 0, table, 3, scope, type] + u32(flags)
    }

    static func link(index: UInt32 = 2, name: String = "eth0", family: UInt8 = 0, extra: [UInt8] = []) -> [UInt8] {
        message(type: RT.newLink, ifinfomsg(family: family, index: index) + attribute(RT.linkName, cString(name)) + extra)
    }

    /// RTM_NEWNEIGH (or `type`): `struct ndmsg` (family, pads, ifindex, state u16, flags, type),
    /// then NDA_DST and a made-up NDA_LLADDR.
    static func neighbour(type: UInt16 = RT.newNeighbour, family: UInt8, index: UInt32, state: UInt16, flags: UInt8 = 0, destination: [UInt8]) -> [UInt8] {
        message(type: type,
            [family, 0, 0, 0] + u32(index) + u16(state) + [flags, 1]
            + attribute(RT.neighbourDestination, destination) + attribute(2, [0x02, 0, 0, 0, 0, 1]))
    }

    static func ipv4Address(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> [UInt8] { [a, b, c, d] }
    static let fe80_1: [UInt8] = [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [0x01]
    static let db8_10: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [0x10]

    /// RTM_NEWNDUSEROPT: `struct nduseroptmsg`, the ND options, then NDUSEROPT_SRCADDR (nil: none).
    static func ndUserOption(
        family: UInt8 = 10, index: UInt32 = 6, icmpType: UInt8 = 134, options: [UInt8], optionsLength: UInt16? = nil,
        source: [UInt8]? = fe80_1
    ) -> [UInt8] {
        message(
            type: RT.newNDUserOption,
            [family, 0] + u16(optionsLength ?? UInt16(options.count)) + u32(index) + [icmpType, 0, 0, 0] + u32(0) + options
                + (source.map { attribute(RT.ndUserOptionSourceAddress, $0) } ?? []))
    }

    /// RFC 8910's option: type 37, length in units of 8 octets, the URI padded with NULs.
    static func captivePortalOption(_ uri: [UInt8]) -> [UInt8] {
        let units = (2 + uri.count + 7) / 8
        return [37, UInt8(units)] + uri + [UInt8](repeating: 0, count: units * 8 - 2 - uri.count)
    }

    /// RFC 8781's option: type 38, length 2, scaled lifetime (13 bits, units of 8 s) and PLC
    /// (3 bits) in one big-endian u16, then the highest 96 bits of the prefix.
    static func pref64Option(scaledLifetime: UInt16, code: UInt8, prefix: [UInt8]) -> [UInt8] {
        let field = scaledLifetime << 3 | UInt16(code)
        return [38, 2, UInt8(field >> 8), UInt8(field & 0xFF)] + prefix
    }
    /// 64:ff9b:: (RFC 6052's well-known prefix), its 96 bits.
    static let wellKnown: [UInt8] = [0x00, 0x64, 0xFF, 0x9B] + [UInt8](repeating: 0, count: 8)
}

private func ip(_ text: String) -> IPAddress {
    guard let address = IPAddress(text) else { preconditionFailure("test literal \(text) is not an address") }
    return address
}

private func decodeOne(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws -> DecodedMessage {
    let batch = NetlinkDecoder.decode(bytes)
    #expect(batch.errors.isEmpty, "\(batch.errors)", sourceLocation: sourceLocation)
    try #require(batch.messages.count == 1, sourceLocation: sourceLocation)
    return batch.messages[0]
}

private func decodeError(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws -> NetlinkDecodingError {
    let batch = NetlinkDecoder.decode(bytes)
    #expect(batch.messages.isEmpty, "\(batch.messages)", sourceLocation: sourceLocation)
    try #require(batch.errors.count == 1, "\(batch.errors)", sourceLocation: sourceLocation)
    return batch.errors[0]
}

// MARK: - Valid messages, field by field

@Suite struct DecoderTests {
    @Test func builderMatchesFixtures() {
        let link = Wire.message(type: RT.newLink,
            Wire.ifinfomsg(index: 2) + Wire.attribute(RT.linkName, Wire.cString("eth0")) + Wire.attribute(4, Wire.u32(1500))
            + Wire.attribute(RT.linkOperState, [6]) + Wire.attribute(RT.linkMaster, Wire.u32(5))
            + Wire.attribute(RT.linkInfo | 0x8000, Wire.attribute(RT.linkInfoKind, Wire.cString("veth"))))
        #expect(link == Fixture.newLink)
        let route = Wire.message(type: RT.newRoute, flags: 0x500,
            Wire.rtmsg(family: 2, destinationLength: 0) + Wire.attribute(RT.routeTable, Wire.u32(254))
            + Wire.attribute(RT.routePriority, Wire.u32(100)) + Wire.attribute(RT.routeGateway, [192, 0, 2, 1])
            + Wire.attribute(RT.routeOutputInterface, Wire.u32(2)))
        #expect(route == Fixture.newDefaultRoute)
    }

    @Test func newLink_decodesNameOperstateMasterAndInfoKind() throws {
        let decoded = try decodeOne(Fixture.newLink)
        #expect(decoded.header == NetlinkHeader(length: 84, type: 16, flags: 0, sequence: 0, portID: 0))
        guard case let .link(link) = decoded.message else {
            Issue.record("expected a link, got \(decoded.message)")
            return
        }
        #expect(link.index == 2)
        #expect(link.name == "eth0")
        #expect(link.flags.rawValue == 0x11043)
        #expect(link.hardwareType == Link.hardwareEther)
        #expect(link.operState == .up)
        #expect(link.master == 5)
        #expect(link.infoKind == "veth")
        #expect(link.isReady)
    }

    @Test func delLink_andMinimalLink_defaultTheOptionalFields() throws {
        // RTM_DELLINK with only a name: no master, no kind, operstate unknown.
        let bytes = Wire.message(type: RT.delLink, Wire.ifinfomsg(index: 9, flags: 0) + Wire.attribute(RT.linkName, Wire.cString("wg0")))
        let decoded = try decodeOne(bytes)
        #expect(decoded.message == .linkRemoved(Link(index: 9, name: "wg0", flags: [], hardwareType: 1, operState: .unknown)))
        // IFLA_MASTER 0 means "no master".
        let noMaster = try decodeOne(Wire.link(extra: Wire.attribute(RT.linkMaster, Wire.u32(0))))
        #expect(noMaster.message == .link(Link(index: 2, name: "eth0", flags: LinkFlags(rawValue: 0x11043), hardwareType: 1)))
    }

    @Test func newAddress_prefersLocalOverPeer_andTakesIFAFlags() throws {
        let decoded = try decodeOne(Fixture.newAddress)
        guard case let .address(address) = decoded.message else {
            Issue.record("expected an address, got \(decoded.message)")
            return
        }
        #expect(address.interfaceIndex == 7)
        #expect(address.prefix == IPPrefix(ip("192.0.2.10"), length: 32))
        #expect(address.scope == 0)
        #expect(address.flags.rawValue == 0x280)

        // Attribute order does not matter: IFA_LOCAL before IFA_ADDRESS.
        let reversed = Wire.message(type: RT.newAddress,
            Wire.ifaddrmsg(family: 2, prefix: 32, index: 7) + Wire.attribute(RT.addressLocal, [192, 0, 2, 10])
            + Wire.attribute(RT.addressAddress, [198, 51, 100, 1]))
        #expect(try decodeOne(reversed).message == .address(
            Address(interfaceIndex: 7, prefix: IPPrefix(ip("192.0.2.10"), length: 32), scope: 0, flags: AddressFlags(rawValue: 0x80))))

        // IPv6 sends only IFA_ADDRESS; without IFA_FLAGS the 8-bit ifa_flags count (0x40 tentative).
        let v6 = Wire.message(type: RT.delAddress,
            Wire.ifaddrmsg(family: 10, prefix: 64, flags: 0x40, scope: 0, index: 3) + Wire.attribute(RT.addressAddress, Wire.db8_10))
        #expect(try decodeOne(v6).message == .addressRemoved(
            Address(interfaceIndex: 3, prefix: IPPrefix(ip("2001:db8::10"), length: 64), scope: 0, flags: .tentative)))
    }

    @Test func newRoute_default_decodesGatewayInterfaceMetricTableAndReplace() throws {
        let decoded = try decodeOne(Fixture.newDefaultRoute)
        #expect(decoded.header.isReplace)
        #expect(!decoded.header.isDumpInterrupted)
        guard case let .route(route) = decoded.message else {
            Issue.record("expected a route, got \(decoded.message)")
            return
        }
        #expect(route.table == Route.mainTable)
        #expect(route.destination == IPPrefix(.anyV4, length: 0))
        #expect(route.destination.isDefault)
        #expect(route.type == .unicast)
        #expect(route.metric == 100)
        #expect(route.tos == 0)
        #expect(route.preferredSource == nil)
        #expect(route.nextHops == [NextHop(gateway: ip("192.0.2.1"), interfaceIndex: 2)])
    }

    @Test func newRoute_tableAbove255_comesFromRTATable() throws {
        let decoded = try decodeOne(Fixture.newTableRoute)
        #expect(!decoded.header.isReplace)
        #expect(decoded.message == .route(Route(
            table: 1000, destination: IPPrefix(ip("10.0.0.0"), length: 8), type: .unicast, metric: 0, tos: 0,
            preferredSource: ip("192.0.2.10"), nextHops: [NextHop(gateway: nil, interfaceIndex: 3)])))
        // Without RTA_TABLE, rtm_table counts.
        let short = Wire.message(type: RT.newRoute,
            Wire.rtmsg(family: 2, destinationLength: 0, table: 253) + Wire.attribute(RT.routeOutputInterface, Wire.u32(4)))
        guard case let .route(route) = try decodeOne(short).message else {
            Issue.record("expected a route")
            return
        }
        #expect(route.table == Route.defaultTable)
        #expect(route.metric == 0)
    }

    @Test func newRoute_multipath_decodesBothNextHops() throws {
        let decoded = try decodeOne(Fixture.newMultipathRoute)
        #expect(decoded.message == .route(Route(
            table: 254, destination: IPPrefix(.anyV6, length: 0), type: .unicast, metric: 1024,
            nextHops: [NextHop(gateway: ip("fe80::1"), interfaceIndex: 2), NextHop(gateway: ip("fe80::2"), interfaceIndex: 3)])))
    }

    @Test func newRoute_viaGatewayOfTheOtherFamily() throws {
        // `ip route add default via inet6 fe80::1 dev eth0`: RTA_VIA, struct rtvia {family u16, address}.
        let bytes = Wire.message(type: RT.newRoute,
            Wire.rtmsg(family: 2, destinationLength: 0) + Wire.attribute(RT.routeVia, Wire.u16(10) + Wire.fe80_1)
            + Wire.attribute(RT.routeOutputInterface, Wire.u32(2)))
        #expect(try decodeOne(bytes).message == .route(Route(
            destination: IPPrefix(.anyV4, length: 0), nextHops: [NextHop(gateway: ip("fe80::1"), interfaceIndex: 2)])))
    }

    @Test func controlMessages_doneErrorAndUnknown() throws {
        #expect(try decodeOne(Wire.message(type: RT.done, Wire.u32(0))).message == .done)
        // NLMSG_ERROR: int error, then the offending header.
        let error = Wire.message(type: RT.error, Wire.u32(UInt32(bitPattern: Int32(-105))) + [UInt8](repeating: 0, count: 16))
        #expect(try decodeOne(error).message == .error(-105))
        #expect(try decodeOne(Wire.message(type: RT.noop, [])).message == .ignored(type: RT.noop))
        #expect(try decodeOne(Wire.message(type: 88, [1, 2, 3, 4])).message == .ignored(type: 88))  // RTM_NEWNSID (88): not ours
        // NLM_F_DUMP_INTR is surfaced for the dump loop.
        #expect(try decodeOne(Wire.message(type: RT.done, flags: 0x12, Wire.u32(0))).header.isDumpInterrupted)
    }

    @Test func bridgeFamilyLink_clonedRoute_andOtherFamilies_areIgnored() throws {
        // AF_BRIDGE (7) RTM_NEWLINK: bridge-port state, not a link.
        let bridge = Wire.link(family: 7)
        #expect(try decodeOne(bridge).message == .ignored(type: RT.newLink))
        // RTM_F_CLONED (0x200): a PMTU or redirect exception, not a FIB route.
        let cloned = Wire.message(type: RT.newRoute,
            Wire.rtmsg(family: 2, destinationLength: 32, flags: 0x200) + Wire.attribute(RT.routeDestination, [192, 0, 2, 99]))
        #expect(try decodeOne(cloned).message == .ignored(type: RT.newRoute))
        // AF_MPLS (28) routes and AF_PACKET (17) addresses.
        #expect(try decodeOne(Wire.message(type: RT.newRoute, Wire.rtmsg(family: 28, destinationLength: 20))).message
            == .ignored(type: RT.newRoute))
        #expect(try decodeOne(Wire.message(type: RT.newAddress, Wire.ifaddrmsg(family: 17, prefix: 0, index: 1))).message
            == .ignored(type: RT.newAddress))
    }

    @Test func unalignedBuffer_decodesTheSame() {
        let expected = NetlinkDecoder.decode(Fixture.datagram)
        let shifted = [0xAA] + Fixture.datagram
        let batch = shifted.withUnsafeBytes { NetlinkDecoder.decode(UnsafeRawBufferPointer(rebasing: $0[1...])) }
        #expect(batch.messages == expected.messages)
        #expect(batch.errors.isEmpty)
    }
}

// MARK: - Split and joined datagrams

extension DecoderTests {
    /// Where each fixture message ends inside `Fixture.datagram`.
    private static let boundaries: [Int] = Fixture.all.reduce(into: [0]) { $0.append($0.last! + $1.count) }

    @Test func multiMessageDatagram_decodesEveryMessageInOrder() {
        let batch = NetlinkDecoder.decode(Fixture.datagram)
        #expect(batch.errors.isEmpty)
        #expect(batch.messages == Fixture.all.flatMap { NetlinkDecoder.decode($0).messages })
        #expect(batch.messages.count == 5)
    }

    @Test func everyPrefixTruncation_yieldsTheWholeMessagesBefore_andOneFramingError() {
        let full = NetlinkDecoder.decode(Fixture.datagram).messages
        for cut in 0...Fixture.datagram.count {
            let batch = NetlinkDecoder.decode(Array(Fixture.datagram[..<cut]))
            let complete = Self.boundaries.lastIndex { $0 <= cut }!
            let start = Self.boundaries[complete]
            #expect(batch.messages == Array(full.prefix(complete)), "cut at \(cut)")
            if cut == start {
                #expect(batch.errors.isEmpty, "cut at \(cut)")
            } else if cut - start < 16 {
                #expect(batch.errors == [.truncatedHeader(offset: start, available: cut - start)], "cut at \(cut)")
            } else {
                let declared = Fixture.all[complete].count
                #expect(batch.errors == [.invalidMessageLength(offset: start, declared: declared, available: cut - start)],
                        "cut at \(cut)")
            }
        }
    }

    @Test func splitAtMessageBoundaries_andJoinedAgain_decodeTheSame() {
        let whole = NetlinkDecoder.decode(Fixture.datagram).messages
        for split in Self.boundaries {
            let first = NetlinkDecoder.decode(Array(Fixture.datagram[..<split]))
            let second = NetlinkDecoder.decode(Array(Fixture.datagram[split...]))
            #expect(first.errors.isEmpty && second.errors.isEmpty, "split at \(split)")
            #expect(first.messages + second.messages == whole, "split at \(split)")
        }
        // Two datagrams concatenated decode to both.
        let joined = NetlinkDecoder.decode(Fixture.newLink + Fixture.newAddress)
        #expect(joined.errors.isEmpty)
        #expect(joined.messages.map(\.header.type) == [RT.newLink, RT.newAddress])
        let twice = NetlinkDecoder.decode(Fixture.datagram + Fixture.datagram)
        #expect(twice.messages == whole + whole)
    }

    @Test func tailOfASplitDatagram_neverTraps_andStaysWellFormed() {
        // Starting mid-message, the bytes are garbage to the decoder; it must say so, not crash.
        for start in 1..<Fixture.datagram.count where !Self.boundaries.contains(start) {
            let batch = NetlinkDecoder.decode(Array(Fixture.datagram[start...]))
            // Netlink cannot resynchronise inside a datagram, so what decodes here may be anything
            // (a 16-byte "message" cut from the middle of an attribute); it must still be well-formed.
            let problems = wellFormednessProblems(batch, count: Fixture.datagram.count - start)
            #expect(problems.isEmpty, "start \(start): \(problems)")
            #expect(!batch.errors.isEmpty || !batch.messages.isEmpty, "start \(start)")
        }
    }
}

// MARK: - Hostile framing

extension DecoderTests {
    @Test func nlmsgLenLargerThanTheBuffer() throws {
        var bytes = Fixture.newAddress
        bytes[0] = 0x3D  // 61 > 60
        #expect(try decodeError(bytes) == .invalidMessageLength(offset: 0, declared: 61, available: 60))
        bytes.replaceSubrange(0..<4, with: Wire.u32(.max))
        #expect(try decodeError(bytes) == .invalidMessageLength(offset: 0, declared: Int(UInt32.max), available: 60))
    }

    @Test func nlmsgLenSmallerThanTheHeader_orZero_endsTheDatagram() throws {
        for lie: UInt32 in [0, 1, 4, 15] {
            var bytes = Fixture.newLink + Fixture.newAddress
            bytes.replaceSubrange(0..<4, with: Wire.u32(lie))
            // Nothing after a lying header can be trusted: the second message is not decoded either.
            #expect(try decodeError(bytes) == .invalidMessageLength(offset: 0, declared: Int(lie), available: bytes.count),
                    "nlmsg_len \(lie)")
        }
    }

    @Test func lyingHeaderAfterAGoodMessage_keepsTheGoodOne() {
        var bytes = Fixture.newLink + Fixture.newAddress
        bytes.replaceSubrange(84..<88, with: Wire.u32(0))
        let batch = NetlinkDecoder.decode(bytes)
        #expect(batch.messages.map(\.header.type) == [RT.newLink])
        #expect(batch.errors == [.invalidMessageLength(offset: 84, declared: 0, available: 60)])
    }

    @Test func shortTrailingBytes_areATruncatedHeader() {
        for extra in 1..<16 {
            let batch = NetlinkDecoder.decode(Fixture.newLink + [UInt8](repeating: 0xFF, count: extra))
            #expect(batch.messages.count == 1)
            #expect(batch.errors == [.truncatedHeader(offset: 84, available: extra)])
        }
    }

    @Test func fixedPartTooShort_isATruncatedPayload() throws {
        #expect(try decodeError(Wire.message(type: RT.newLink, [0, 0, 1, 0, 2, 0, 0, 0]))
            == .truncatedPayload(messageType: RT.newLink, needed: 16, available: 8))
        #expect(try decodeError(Wire.message(type: RT.newAddress, [2, 24, 0, 0]))
            == .truncatedPayload(messageType: RT.newAddress, needed: 8, available: 4))
        #expect(try decodeError(Wire.message(type: RT.newRoute, [2, 0, 0, 0, 254, 3, 0, 1]))
            == .truncatedPayload(messageType: RT.newRoute, needed: 12, available: 8))
        #expect(try decodeError(Wire.message(type: RT.error, []))
            == .truncatedPayload(messageType: RT.error, needed: 4, available: 0))
    }
}

// MARK: - Hostile attributes

extension DecoderTests {
    @Test func attributeLengthZeroTwoOrTooLarge_isAnError_andSkipsOnlyThatMessage() throws {
        for lie: UInt16 in [0, 2, 3, 200] {
            let bad = Wire.message(type: RT.newLink,
                Wire.ifinfomsg(index: 2) + Wire.attribute(RT.linkName, Wire.cString("eth0"), length: lie))
            let batch = NetlinkDecoder.decode(bad + Fixture.newAddress)
            // 12 bytes remain after ifinfomsg: the padded name attribute.
            #expect(batch.errors == [.invalidAttributeLength(messageType: RT.newLink, attribute: RT.linkName, declared: Int(lie), available: 12)],
                    "rta_len \(lie)")
            // Framing was sound, so the next message is still decoded.
            #expect(batch.messages.map(\.header.type) == [RT.newAddress], "rta_len \(lie)")
        }
        // The same inside a nested attribute (IFLA_LINKINFO / IFLA_INFO_KIND).
        let nested = Wire.link(extra: Wire.attribute(RT.linkInfo, Wire.attribute(RT.linkInfoKind, Wire.cString("veth"), length: 1)))
        #expect(try decodeError(nested) == .invalidAttributeLength(
            messageType: RT.newLink, attribute: RT.linkInfoKind, declared: 1, available: 12))
        // And a next hop whose rtnh_len lies.
        for lie: UInt16 in [0, 7, 100] {
            let hop = Wire.u16(lie) + [0, 0] + Wire.u32(2)
            let route = Wire.message(type: RT.newRoute,
                Wire.rtmsg(family: 2, destinationLength: 0) + Wire.attribute(RT.routeMultipath, hop))
            #expect(try decodeError(route) == .invalidAttributeLength(
                messageType: RT.newRoute, attribute: RT.routeMultipath, declared: Int(lie), available: 8), "rtnh_len \(lie)")
        }
    }

    @Test func addressOfFiveBytes_isAnInvalidValue() throws {
        let address = Wire.message(type: RT.newAddress,
            Wire.ifaddrmsg(family: 2, prefix: 24, index: 2) + Wire.attribute(RT.addressLocal, [192, 0, 2, 10, 0]))
        #expect(try decodeError(address) == .invalidAttributeValue(messageType: RT.newAddress, attribute: RT.addressLocal, length: 5))
        // A 4-byte address on an IPv6 message.
        let v6 = Wire.message(type: RT.newAddress,
            Wire.ifaddrmsg(family: 10, prefix: 64, index: 2) + Wire.attribute(RT.addressAddress, [192, 0, 2, 10]))
        #expect(try decodeError(v6) == .invalidAttributeValue(messageType: RT.newAddress, attribute: RT.addressAddress, length: 4))
        let gateway = Wire.message(type: RT.newRoute,
            Wire.rtmsg(family: 2, destinationLength: 0) + Wire.attribute(RT.routeGateway, [192, 0, 2, 1, 9]))
        #expect(try decodeError(gateway) == .invalidAttributeValue(messageType: RT.newRoute, attribute: RT.routeGateway, length: 5))
        let metric = Wire.message(type: RT.newRoute,
            Wire.rtmsg(family: 2, destinationLength: 0) + Wire.attribute(RT.routePriority, [100, 0]))
        #expect(try decodeError(metric) == .invalidAttributeValue(messageType: RT.newRoute, attribute: RT.routePriority, length: 2))
        let master = Wire.link(extra: Wire.attribute(RT.linkMaster, [5]))
        #expect(try decodeError(master) == .invalidAttributeValue(messageType: RT.newLink, attribute: RT.linkMaster, length: 1))
        let operstate = Wire.link(extra: Wire.attribute(RT.linkOperState, []))
        #expect(try decodeError(operstate) == .invalidAttributeValue(messageType: RT.newLink, attribute: RT.linkOperState, length: 0))
        let via = Wire.message(type: RT.newRoute,
            Wire.rtmsg(family: 2, destinationLength: 0) + Wire.attribute(RT.routeVia, Wire.u16(99) + [1, 2, 3, 4]))
        #expect(try decodeError(via) == .invalidAttributeValue(messageType: RT.newRoute, attribute: RT.routeVia, length: 6))
    }

    @Test func prefixLengthBeyondTheAddress_isRejected() throws {
        let v4 = Wire.message(type: RT.newAddress,
            Wire.ifaddrmsg(family: 2, prefix: 200, index: 2) + Wire.attribute(RT.addressLocal, [192, 0, 2, 10]))
        #expect(try decodeError(v4) == .invalidAttributeValue(messageType: RT.newAddress, attribute: RT.addressAddress, length: 200))
        let v4edge = Wire.message(type: RT.newAddress,
            Wire.ifaddrmsg(family: 2, prefix: 33, index: 2) + Wire.attribute(RT.addressLocal, [192, 0, 2, 10]))
        #expect(try decodeError(v4edge) == .invalidAttributeValue(messageType: RT.newAddress, attribute: RT.addressAddress, length: 33))
        let v6 = Wire.message(type: RT.newAddress,
            Wire.ifaddrmsg(family: 10, prefix: 129, index: 2) + Wire.attribute(RT.addressAddress, Wire.db8_10))
        #expect(try decodeError(v6) == .invalidAttributeValue(messageType: RT.newAddress, attribute: RT.addressAddress, length: 129))
        let v6max = Wire.message(type: RT.newAddress,
            Wire.ifaddrmsg(family: 10, prefix: 128, index: 2) + Wire.attribute(RT.addressAddress, Wire.db8_10))
        #expect(try decodeOne(v6max).message == .address(
            Address(interfaceIndex: 2, prefix: IPPrefix(ip("2001:db8::10"), length: 128), flags: AddressFlags(rawValue: 0x80))))
        let route = Wire.message(type: RT.newRoute,
            Wire.rtmsg(family: 2, destinationLength: 33) + Wire.attribute(RT.routeDestination, [10, 0, 0, 0]))
        #expect(try decodeError(route) == .invalidAttributeValue(messageType: RT.newRoute, attribute: RT.routeDestination, length: 33))
    }

    @Test func linkWithoutName_isMissingAnAttribute() throws {
        let unnamed = Wire.message(type: RT.newLink, Wire.ifinfomsg(index: 2) + Wire.attribute(RT.linkOperState, [6]))
        #expect(try decodeError(unnamed) == .missingAttribute(messageType: RT.newLink, attribute: RT.linkName))
        // An empty name (a lone NUL, or no bytes) is no name.
        #expect(try decodeError(Wire.link(name: "")) == .missingAttribute(messageType: RT.newLink, attribute: RT.linkName))
        let bare = Wire.message(type: RT.newLink, Wire.ifinfomsg(index: 2) + Wire.attribute(RT.linkName, []))
        #expect(try decodeError(bare) == .missingAttribute(messageType: RT.newLink, attribute: RT.linkName))
        // An address with neither IFA_LOCAL nor IFA_ADDRESS.
        let addressless = Wire.message(type: RT.newAddress, Wire.ifaddrmsg(family: 2, prefix: 24, index: 2))
        #expect(try decodeError(addressless) == .missingAttribute(messageType: RT.newAddress, attribute: RT.addressAddress))
    }

    @Test func nameWithoutTerminator_orWithEmbeddedNUL_stopsAtTheNUL() throws {
        let unterminated = Wire.message(type: RT.newLink, Wire.ifinfomsg(index: 2) + Wire.attribute(RT.linkName, Array("eth0".utf8)))
        guard case let .link(link) = try decodeOne(unterminated).message else {
            Issue.record("expected a link")
            return
        }
        #expect(link.name == "eth0")
        guard case let .link(cut) = try decodeOne(Wire.link(name: "ab\u{0}cd")).message else {
            Issue.record("expected a link")
            return
        }
        #expect(cut.name == "ab")
    }

    @Test func errorDescriptions_nameTheOffsetOrAttribute() {
        let header = NetlinkDecodingError.truncatedHeader(offset: 84, available: 3).description
        #expect(header.contains("offset 84"))
        #expect(header.contains("3 bytes"))
        let length = NetlinkDecodingError.invalidMessageLength(offset: 144, declared: 0, available: 60).description
        #expect(length.contains("offset 144"))
        #expect(length.contains("length 0"))
        let attribute = NetlinkDecodingError.invalidAttributeLength(messageType: 16, attribute: 3, declared: 200, available: 12).description
        #expect(attribute.contains("attribute 3"))
        #expect(attribute.contains("type 16"))
        #expect(attribute.contains("200"))
        let value = NetlinkDecodingError.invalidAttributeValue(messageType: 20, attribute: 2, length: 5).description
        #expect(value.contains("attribute 2"))
        #expect(value.contains("type 20"))
        #expect(value.contains("5"))
        let missing = NetlinkDecodingError.missingAttribute(messageType: 16, attribute: 3).description
        #expect(missing.contains("attribute 3"))
        let payload = NetlinkDecodingError.truncatedPayload(messageType: 24, needed: 12, available: 8).description
        #expect(payload.contains("type 24"))
        #expect(payload.contains("12"))
        // As the decoder really produces it.
        let produced = NetlinkDecoder.decode(Array(Fixture.datagram.prefix(90))).errors
        #expect(produced.map(\.description) == ["truncated netlink header at offset 84: 6 bytes left, 16 needed"])
    }
}

// MARK: - Random input

/// xorshift64: tiny, fast and the same on every platform and toolchain (unlike the standard library's
/// `random(in:using:)`, whose mapping may change), so a failing case can be replayed from its index.
private struct XorShift64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    /// A value in 0..<bound (bound > 0); the modulo bias is irrelevant here.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
}

/// What a decoded batch of `count` bytes must look like, whatever the bytes were.
private func wellFormednessProblems(_ batch: NetlinkDecoder.Batch, count: Int) -> [String] {
    var problems: [String] = []
    if (batch.messages.count + batch.errors.count) * 16 > count + 16 {
        problems.append("\(batch.messages.count) messages and \(batch.errors.count) errors from \(count) bytes")
    }
    for decoded in batch.messages {
        let length = Int(decoded.header.length)
        if length < 16 || length > count { problems.append("header length \(length) of \(count)") }
        switch decoded.message {
        case .link(let link), .linkRemoved(let link):
            if link.name.isEmpty { problems.append("link \(link.index) without a name") }
            if link.name.utf8.contains(0) { problems.append("link name with NUL: \(link.name)") }
        case .address(let address), .addressRemoved(let address):
            if Int(address.prefix.length) > address.address.bitWidth { problems.append("address \(address.prefix)") }
        case .route(let route), .routeRemoved(let route):
            if Int(route.destination.length) > route.destination.address.bitWidth { problems.append("route \(route.destination)") }
            if let source = route.preferredSource, source.family != route.destination.address.family {
                problems.append("route \(route.destination) with source \(source) of another family")
            }
        case .announcedPortal(let portal):
            if portal.uri.isEmpty || !portal.uri.utf8.allSatisfy({ 0x21...0x7E ~= $0 }) { problems.append("portal URI \(portal.uri.debugDescription)") }
            if case .v4 = portal.router { problems.append("portal announced by IPv4 \(portal.router)") }
        case .nat64Prefix(let announced):
            if !AnnouncedNat64Prefix.prefixLengths.contains(announced.prefix.length) || announced.prefix.address.family != .ipv6 {
                problems.append("NAT64 prefix \(announced.prefix)")
            }
            if announced.lifetime < .zero || announced.lifetime > .seconds(8191 * 8) { problems.append("NAT64 lifetime \(announced.lifetime)") }
        case .neighbour(let neighbour), .neighbourRemoved(let neighbour):
            if neighbour.address.bitWidth != 32 && neighbour.address.bitWidth != 128 { problems.append("neighbour \(neighbour.address)") }
        case .done, .error, .ignored, .ruleChanged, .refusedAnnouncement:
            break
        }
    }
    for (position, error) in batch.errors.enumerated() {
        switch error {
        case let .truncatedHeader(offset, available):
            if position != batch.errors.count - 1 { problems.append("framing error before the end: \(error)") }
            if offset < 0 || offset >= count || available != count - offset || available >= 16 { problems.append("\(error) of \(count)") }
        case let .invalidMessageLength(offset, declared, available):
            if position != batch.errors.count - 1 { problems.append("framing error before the end: \(error)") }
            if offset < 0 || available != count - offset || available < 16 || (16...available).contains(declared) {
                problems.append("\(error) of \(count)")
            }
        case let .truncatedPayload(_, needed, available):
            if available >= needed || available < 0 { problems.append("\(error)") }
        case let .invalidAttributeLength(_, _, declared, available):
            if available <= 0 || available > count { problems.append("\(error)") }
            _ = declared
        case let .invalidOption(_, _, _, available):
            if available <= 0 || available > count { problems.append("\(error)") }
        case .invalidAttributeValue, .missingAttribute:
            break
        }
        if error.description.isEmpty { problems.append("empty description") }
    }
    return problems
}

extension DecoderTests {
    /// Valid messages to mutate, beyond the fixtures: each kind the decoder knows.
    private static let seeds: [[UInt8]] = Fixture.all + [
        Wire.link(index: 3, name: "wlan0", extra: Wire.attribute(RT.linkOperState, [5])),
        Wire.message(type: RT.newAddress,
            Wire.ifaddrmsg(family: 10, prefix: 64, index: 3) + Wire.attribute(RT.addressAddress, Wire.db8_10)
            + Wire.attribute(RT.addressFlags, Wire.u32(0x40))),
        Wire.message(type: RT.newRoute,
            Wire.rtmsg(family: 2, destinationLength: 0) + Wire.attribute(RT.routeVia, Wire.u16(10) + Wire.fe80_1)),
        Wire.message(type: RT.done, Wire.u32(0)),
        Wire.message(type: RT.error, Wire.u32(0) + [UInt8](repeating: 0, count: 16)),
        Fixture.captivePortalOption,
        Wire.ndUserOption(options: Wire.captivePortalOption(Array(AnnouncedPortal.unrestricted.utf8))),
        Wire.neighbour(family: 2, index: 3, state: 0x20, destination: Wire.ipv4Address(192, 0, 2, 1)),
        Wire.neighbour(type: RT.delNeighbour, family: 10, index: 3, state: 0x04, destination: Wire.fe80_1),
    ]

    @Test func twentyThousandRandomBuffers_neverTrap_andYieldOnlyWellFormedMessages() {
        var random = XorShift64(seed: 0x5EED_0F_4EAC_4D)
        var decodedKinds: [String: Int] = [:]
        var errorKinds: [String: Int] = [:]
        var failures = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            switch round % 4 {
            case 0:
                // Pure noise.
                bytes = (0..<random.below(513)).map { _ in random.byte() }
            case 1:
                // A plausible header (true length, a routing type), then noise: reaches the payload decoders.
                let length = 16 + random.below(497)
                let types: [UInt16] = [RT.newLink, RT.delLink, RT.newAddress, RT.delAddress, RT.newRoute, RT.delRoute, RT.error, RT.done, RT.newNDUserOption, RT.newNeighbour, RT.delNeighbour]
                bytes = Wire.u32(UInt32(length)) + Wire.u16(types[random.below(types.count)]) + (0..<length - 6).map { _ in random.byte() }
            default:
                // Valid messages joined, then mutated: byte flips, lying 16-bit lengths, truncation.
                bytes = []
                for _ in 0..<(1 + random.below(4)) { bytes += Self.seeds[random.below(Self.seeds.count)] }
                for _ in 0..<(1 + random.below(4)) {
                    let position = random.below(bytes.count)
                    switch random.below(3) {
                    case 0: bytes[position] = random.byte()
                    case 1: bytes[position] ^= 1 << UInt8(random.below(8))
                    default:
                        let lie = Wire.u16(UInt16(random.below(64)))
                        let at = position & ~3
                        if at + 1 < bytes.count { bytes[at] = lie[0]; bytes[at + 1] = lie[1] }
                    }
                }
                if random.below(3) == 0 { bytes = Array(bytes.prefix(random.below(bytes.count + 1))) }
                if bytes.count > 512 { bytes = Array(bytes.prefix(512)) }
            }
            let batch = NetlinkDecoder.decode(bytes)
            let problems = wellFormednessProblems(batch, count: bytes.count)
            if !problems.isEmpty {
                failures += 1
                if failures <= 5 { Issue.record("round \(round), bytes \(bytes): \(problems)") }
            }
            // Deterministic: the same bytes decode the same way.
            let again = NetlinkDecoder.decode(bytes)
            if again.messages != batch.messages || again.errors != batch.errors {
                Issue.record("round \(round) decoded differently twice")
            }
            for decoded in batch.messages {
                let kind: String
                switch decoded.message {
                case .link, .linkRemoved: kind = "link"
                case .address, .addressRemoved: kind = "address"
                case .route, .routeRemoved: kind = "route"
                case .done, .error: kind = "control"
                case .ruleChanged: kind = "rule"
                case .announcedPortal, .refusedAnnouncement: kind = "portal"
                case .nat64Prefix: kind = "nat64"
                case .neighbour, .neighbourRemoved: kind = "neighbour"
                case .ignored: kind = "ignored"
                }
                decodedKinds[kind, default: 0] += 1
            }
            for error in batch.errors {
                let kind: String
                switch error {
                case .truncatedHeader: kind = "truncatedHeader"
                case .invalidMessageLength: kind = "invalidMessageLength"
                case .truncatedPayload: kind = "truncatedPayload"
                case .invalidAttributeLength: kind = "invalidAttributeLength"
                case .invalidAttributeValue: kind = "invalidAttributeValue"
                case .missingAttribute: kind = "missingAttribute"
                case .invalidOption: kind = "invalidOption"
                }
                errorKinds[kind, default: 0] += 1
            }
        }
        #expect(failures == 0)
        // The generator must reach every decoder and every error path, or the run proves little.
        for kind in ["link", "address", "route", "control", "ignored", "portal", "neighbour"] {
            #expect(decodedKinds[kind, default: 0] > 50, "decoded \(kind): \(decodedKinds)")
        }
        for kind in ["truncatedHeader", "invalidMessageLength", "truncatedPayload", "invalidAttributeLength",
                     "invalidAttributeValue", "missingAttribute", "invalidOption"] {
            #expect(errorKinds[kind, default: 0] > 10, "error \(kind): \(errorKinds)")
        }
    }
}

// MARK: - Neighbour discovery options (RFC 8910's captive-portal URI)

extension DecoderTests {
    @Test func captivePortalOption_asTheKernelSendsIt_isAnAnnouncedPortal_whenHTTPS() throws {
        // The capture carries an http URI: refused (RFC 8908's API is https only).
        #expect(Self.refusedPortal(try decodeOne(Fixture.captivePortalOption).message)?.reason.hasPrefix("not an https URI") == true)
        var https = Fixture.captivePortalOption
        // The same message with the URI rewritten in place, at its length: "https://portal.example/ap".
        let uri = Array("https://portal.example/ap".utf8)
        https.replaceSubrange(34..<(34 + uri.count), with: uri)
        let decoded = try decodeOne(https)
        #expect(decoded.message == .announcedPortal(AnnouncedPortal(
            interfaceIndex: 6, router: ip("fe80::74b7:c5ff:fe39:bb74"), uri: "https://portal.example/ap")))
        let unrestricted = try decodeOne(Wire.ndUserOption(options: Wire.captivePortalOption(Array(AnnouncedPortal.unrestricted.utf8))))
        #expect(unrestricted.message == .announcedPortal(AnnouncedPortal(interfaceIndex: 6, router: ip("fe80::1"), uri: AnnouncedPortal.unrestricted)))
    }

    @Test func otherOptions_otherMessages_andURIsNoClientShouldGet_areIgnored() throws {
        // RDNSS (25), as the kernel passes it on too.
        let rdnss: [UInt8] = [25, 3, 0, 0] + Wire.u32(600) + Wire.db8_10
        for bytes in [
            Wire.ndUserOption(options: rdnss),
            Wire.ndUserOption(family: 2, options: Wire.captivePortalOption(Array("https://a.example/".utf8))),
            Wire.ndUserOption(icmpType: 137, options: Wire.captivePortalOption(Array("https://a.example/".utf8))),
        ] {
            #expect(try decodeOne(bytes).message == .ignored(type: RT.newNDUserOption), "\(bytes)")
        }
        // A URI no client should get is refused, to be said once per link (issue 24).
        for bytes in [
            Wire.ndUserOption(options: Wire.captivePortalOption([])),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("http://a.example/\nX-Evil: 1".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("http://a b/".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("http://a.example/\0tail".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("http://caf\u{E9}.example/".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("portal.example/no-scheme".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array(":nothing-before".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("javascript:alert(1)".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("http://plain.example/".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("file:///etc/passwd".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("https:///no-host".utf8))),
            Wire.ndUserOption(options: Wire.captivePortalOption(Array("https:relative".utf8))),
        ] {
            #expect(Self.refusedPortal(try decodeOne(bytes).message)?.interfaceIndex == 6, "\(bytes)")
        }
    }

    /// The refusal of a captive-portal option, or nil.
    static func refusedPortal(_ message: RoutingMessage) -> RefusedAnnouncement? {
        guard case let .refusedAnnouncement(refusal) = message, refusal.option == .captivePortal else { return nil }
        return refusal
    }

    @Test func lyingOptionLengths_andAMissingRouter_areErrors() throws {
        let option = Wire.captivePortalOption(Array("https://a.example/".utf8))
        var zero = option
        zero[1] = 0
        #expect(try decodeError(Wire.ndUserOption(options: zero)) == .invalidOption(messageType: 68, option: 37, declared: 0, available: 24))
        var long = option
        long[1] = 9
        #expect(try decodeError(Wire.ndUserOption(options: long)) == .invalidOption(messageType: 68, option: 37, declared: 72, available: 24))
        #expect(try decodeError(Wire.ndUserOption(options: option, optionsLength: 200)) == .truncatedPayload(messageType: 68, needed: 216, available: 60))
        #expect(try decodeError(Wire.ndUserOption(options: option, source: nil)) == .missingAttribute(messageType: 68, attribute: 1))
        #expect(try decodeError(Wire.ndUserOption(options: option, source: [1, 2, 3, 4])) == .invalidAttributeValue(messageType: 68, attribute: 1, length: 4))
        #expect(try decodeError(Wire.message(type: RT.newNDUserOption, [10, 0, 0, 0, 6, 0, 0, 0])) == .truncatedPayload(messageType: 68, needed: 16, available: 8))
    }

    @Test func everyTruncationAndEveryByteFlipOfTheCapturedOption_neverTraps() {
        expectEveryCutAndFlipWellFormed(Fixture.captivePortalOption)
    }
}

/// Decodes every prefix of `bytes` and every single-bit flip of it: nothing traps, and what is
/// decoded is well formed.
private func expectEveryCutAndFlipWellFormed(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
    for cut in 0...bytes.count {
        let batch = NetlinkDecoder.decode(Array(bytes.prefix(cut)))
        #expect(wellFormednessProblems(batch, count: cut).isEmpty, "cut at \(cut)", sourceLocation: sourceLocation)
    }
    for position in bytes.indices {
        for bit in 0..<8 {
            var flipped = bytes
            flipped[position] ^= 1 << UInt8(bit)
            let batch = NetlinkDecoder.decode(flipped)
            #expect(wellFormednessProblems(batch, count: flipped.count).isEmpty, "byte \(position) bit \(bit)", sourceLocation: sourceLocation)
        }
    }
}

// MARK: - Neighbour discovery options (RFC 8781's NAT64 prefix, PREF64)

extension DecoderTests {
    @Test func pref64Option_isANat64Prefix_withItsLifetimeInUnitsOf8Seconds() throws {
        let decoded = try decodeOne(Wire.ndUserOption(options: Wire.pref64Option(scaledLifetime: 225, code: 0, prefix: Wire.wellKnown)))
        #expect(decoded.message == .nat64Prefix(AnnouncedNat64Prefix(
            interfaceIndex: 6, router: ip("fe80::1"), prefix: IPPrefix(ip("64:ff9b::"), length: 96), lifetime: .seconds(1800))))
        // The longest lifetime the 13 bits hold, and zero (a withdrawal).
        for (scaled, seconds) in [(UInt16(8191), 65_528), (0, 0)] {
            let message = try decodeOne(Wire.ndUserOption(options: Wire.pref64Option(scaledLifetime: scaled, code: 0, prefix: Wire.wellKnown))).message
            guard case let .nat64Prefix(announced) = message else { Issue.record("\(message)"); continue }
            #expect(announced.lifetime == .seconds(seconds))
        }
    }

    @Test func pref64Option_eachPrefixLengthCode_clearsTheBitsPastItsLength() throws {
        // Every bit set: what the prefix keeps shows which bits each code keeps.
        let ones = [UInt8](repeating: 0xFF, count: 12)
        let expected = [(0, "ffff:ffff:ffff:ffff:ffff:ffff::/96"), (1, "ffff:ffff:ffff:ffff::/64"), (2, "ffff:ffff:ffff:ff00::/56"),
                        (3, "ffff:ffff:ffff::/48"), (4, "ffff:ffff:ff00::/40"), (5, "ffff:ffff::/32")]
        for (code, prefix) in expected {
            let message = try decodeOne(Wire.ndUserOption(options: Wire.pref64Option(scaledLifetime: 1, code: UInt8(code), prefix: ones))).message
            guard case let .nat64Prefix(announced) = message else { Issue.record("code \(code): \(message)"); continue }
            #expect(announced.prefix.description == prefix, "code \(code)")
        }
    }

    @Test func pref64Option_withAnInvalidCode_orAnotherLength_isIgnored() throws {
        var longer = Wire.pref64Option(scaledLifetime: 225, code: 0, prefix: Wire.wellKnown) + [UInt8](repeating: 0, count: 8)
        longer[1] = 3
        var shorter = Array(Wire.pref64Option(scaledLifetime: 225, code: 0, prefix: Wire.wellKnown).prefix(8))
        shorter[1] = 1
        for options in [
            Wire.pref64Option(scaledLifetime: 225, code: 6, prefix: Wire.wellKnown),
            Wire.pref64Option(scaledLifetime: 225, code: 7, prefix: Wire.wellKnown),
            longer, shorter,
        ] {
            #expect(try decodeOne(Wire.ndUserOption(options: options)).message == .ignored(type: RT.newNDUserOption), "\(options)")
        }
        // Not a router advertisement, or not IPv6: ignored as the portal's option is.
        let option = Wire.pref64Option(scaledLifetime: 225, code: 0, prefix: Wire.wellKnown)
        #expect(try decodeOne(Wire.ndUserOption(icmpType: 137, options: option)).message == .ignored(type: RT.newNDUserOption))
        #expect(try decodeOne(Wire.ndUserOption(family: 2, options: option)).message == .ignored(type: RT.newNDUserOption))
    }

    @Test func pref64Option_truncated_orWithoutItsRouter_isAnError_andNoCutOrFlipTraps() throws {
        let option = Wire.pref64Option(scaledLifetime: 225, code: 0, prefix: Wire.wellKnown)
        // The option says 16 bytes; the message holds 8 of them.
        #expect(try decodeError(Wire.ndUserOption(options: Array(option.prefix(8)))) == .invalidOption(messageType: 68, option: 38, declared: 16, available: 8))
        #expect(try decodeError(Wire.ndUserOption(options: option, source: nil)) == .missingAttribute(messageType: 68, attribute: 1))
        #expect(try decodeError(Wire.ndUserOption(options: option, optionsLength: 40)) == .truncatedPayload(messageType: 68, needed: 56, available: 52))
        expectEveryCutAndFlipWellFormed(Wire.ndUserOption(options: option))
    }
}

// MARK: - Neighbours (the gateways' ARP/ND state)

extension DecoderTests {
    @Test func neighbourMessages_giveTheLinkTheAddressAndTheNUDState() throws {
        let failed = try decodeOne(Wire.neighbour(family: 2, index: 3, state: 0x20, destination: Wire.ipv4Address(192, 0, 2, 1)))
        // NDA_LLADDR (the gateway's MAC) is taken, as the network's name is made of it.
        let mac: [UInt8] = [0x02, 0, 0, 0, 0, 1]
        #expect(failed.message == .neighbour(Neighbour(interfaceIndex: 3, address: IPAddress("192.0.2.1")!, state: .failed, linkLayerAddress: mac)))
        let gone = try decodeOne(Wire.neighbour(type: RT.delNeighbour, family: 10, index: 4, state: 0x04, destination: Wire.fe80_1))
        #expect(gone.message == .neighbourRemoved(Neighbour(interfaceIndex: 4, address: IPAddress("fe80::1")!, state: .stale, linkLayerAddress: mac)))
        for (nud, state) in [(0x01, NeighbourState.incomplete), (0x02, .reachable), (0x08, .delay), (0x10, .probe), (0x40, .noARP), (0x80, .permanent), (0x00, .none), (0x03, .none)] {
            let decoded = try decodeOne(Wire.neighbour(family: 2, index: 3, state: UInt16(nud), destination: Wire.ipv4Address(10, 0, 0, 1)))
            #expect(decoded.message == .neighbour(Neighbour(interfaceIndex: 3, address: IPAddress("10.0.0.1")!, state: state, linkLayerAddress: mac)), "NUD \(nud)")
        }
    }

    @Test func neighbourMessages_carryTheAgeOfTheLastAnswer_fromTheCacheInfo() throws {
        // NDA_CACHEINFO: ndm_confirmed 250 ticks (USER_HZ 100: 2.5 s), ndm_used, ndm_updated, ndm_refcnt.
        let info = Wire.attribute(RT.neighbourCacheInfo, Wire.u32(250) + Wire.u32(7) + Wire.u32(9) + Wire.u32(1))
        let wire = Wire.message(type: RT.newNeighbour,
            [2, 0, 0, 0] + Wire.u32(3) + Wire.u16(0x02) + [0, 1] + Wire.attribute(RT.neighbourDestination, Wire.ipv4Address(192, 0, 2, 1)) + info)
        guard case let .neighbour(neighbour) = try decodeOne(wire).message else { Issue.record("no neighbour"); return }
        #expect(neighbour.confirmedAge == .milliseconds(2500) && neighbour.received == nil)
        // A cache info cut short is no age, and no fault.
        let short = Wire.message(type: RT.newNeighbour,
            [2, 0, 0, 0] + Wire.u32(3) + Wire.u16(0x02) + [0, 1] + Wire.attribute(RT.neighbourDestination, Wire.ipv4Address(192, 0, 2, 1))
            + Wire.attribute(RT.neighbourCacheInfo, [1, 2]))
        guard case let .neighbour(cut) = try decodeOne(short).message else { Issue.record("no neighbour"); return }
        #expect(cut.confirmedAge == nil)
    }

    @Test func neighbourMessages_ofBridgesAndProxies_orWithoutADestination_areIgnored() throws {
        // AF_BRIDGE (7): a forwarding database entry, no IP neighbour.
        #expect(try decodeOne(Wire.neighbour(family: 7, index: 3, state: 0x80, destination: Wire.ipv4Address(1, 2, 3, 4))).message == .ignored(type: RT.newNeighbour))
        // NTF_PROXY: an address this host answers for, not a next hop.
        #expect(try decodeOne(Wire.neighbour(family: 2, index: 3, state: 0x80, flags: 0x08, destination: Wire.ipv4Address(1, 2, 3, 4))).message == .ignored(type: RT.newNeighbour))
        let bare = Wire.message(type: RT.newNeighbour, [2, 0, 0, 0] + Wire.u32(3) + Wire.u16(0x20) + [0, 1])
        #expect(try decodeOne(bare).message == .ignored(type: RT.newNeighbour))
    }

    @Test func neighbourGarbage_isAnErrorNamingTheFault_neverATrap() {
        // A header cut short (6 bytes, padded to 8 as the kernel aligns).
        let short = NetlinkDecoder.decode(Wire.message(type: RT.newNeighbour, [2, 0, 0, 0, 3, 0]))
        #expect(short.messages.isEmpty)
        #expect(short.errors == [.truncatedPayload(messageType: RT.newNeighbour, needed: 12, available: 8)])
        // NDA_DST of 5 bytes for IPv4.
        let odd = NetlinkDecoder.decode(Wire.message(type: RT.newNeighbour,
            [2, 0, 0, 0] + Wire.u32(3) + Wire.u16(0x20) + [0, 1] + Wire.attribute(RT.neighbourDestination, [1, 2, 3, 4, 5])))
        #expect(odd.errors == [.invalidAttributeValue(messageType: RT.newNeighbour, attribute: RT.neighbourDestination, length: 5)])
        // An attribute that claims more than the message holds.
        let lying = NetlinkDecoder.decode(Wire.message(type: RT.newNeighbour,
            [10, 0, 0, 0] + Wire.u32(3) + Wire.u16(0x20) + [0, 1] + Wire.u16(200) + Wire.u16(RT.neighbourDestination) + Wire.fe80_1))
        #expect(lying.errors.count == 1)
        if case .invalidAttributeLength(RT.newNeighbour, RT.neighbourDestination, 200, _)? = lying.errors.first {} else {
            Issue.record("\(lying.errors)")
        }
        // Every prefix of a valid message: an error or a message, never a trap.
        let whole = Wire.neighbour(family: 10, index: 3, state: 0x20, destination: Wire.fe80_1)
        for length in 0..<whole.count {
            let batch = NetlinkDecoder.decode(Array(whole.prefix(length)))
            #expect(batch.messages.isEmpty || length >= 16, "length \(length)")
        }
    }
}
