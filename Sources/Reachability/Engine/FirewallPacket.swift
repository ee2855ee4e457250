/// A packet the host would send, as the ruleset's expressions see it: the bytes of its network
/// and transport headers and what the meta and ct expressions read, each byte known or not
/// (`nil`: the source port the kernel picks, a mark, a length). The first packet of a new
/// connection: a TCP SYN, or a UDP datagram; conntrack's state is new.
package struct FirewallPacket: Sendable {
    package var destination: IPAddress
    /// 6 (TCP) or 17 (UDP).
    package var transport: UInt8
    package var port: UInt16?
    package var source: IPAddress?
    package var outputInterface: (index: Int32, name: String)?
    package var uid: UInt32?

    package init(
        destination: IPAddress, transport: UInt8 = 6, port: UInt16? = nil, source: IPAddress? = nil,
        outputInterface: (index: Int32, name: String)? = nil, uid: UInt32? = nil
    ) {
        self.destination = destination
        self.transport = transport
        self.port = port
        self.source = source
        self.outputInterface = outputInterface
        self.uid = uid
    }

    package var isIPv4: Bool { destination.family == .ipv4 }
    /// NFPROTO_IPV4 or NFPROTO_IPV6.
    package var family: UInt8 { isIPv4 ? 2 : 10 }

    /// The network header: IPv4's 20 bytes or IPv6's 40.
    package var networkHeader: [UInt8?] {
        let source = self.source.map { $0.bytes.map(Optional.some) } ?? Array(repeating: nil, count: isIPv4 ? 4 : 16)
        let destination = self.destination.bytes.map(Optional.some)
        if isIPv4 {
            // version/IHL, DSCP, total length, id, flags/fragment, TTL, protocol, checksum.
            let fixed: [UInt8?] = [0x45, 0, nil, nil, nil, nil, 0x40, 0, 64, transport, nil, nil]
            return fixed + source + destination
        }
        let fixed: [UInt8?] = [0x60, nil, nil, nil, nil, nil, transport, 64]
        return fixed + source + destination
    }

    /// The transport header's first bytes: ports, then for TCP a SYN's sequence, flags and window.
    package var transportHeader: [UInt8?] {
        let port = self.port.map { [UInt8($0 >> 8), UInt8($0 & 0xff)].map(Optional.some) } ?? [nil, nil]
        let ports: [UInt8?] = [nil, nil] + port
        guard transport == 6 else { return ports + [nil, nil, nil, nil] }
        // Sequence (unknown), acknowledgement 0, data offset, flags SYN, window...
        return ports + [nil, nil, nil, nil] + [0, 0, 0, 0] + [nil, 0x02] + [nil, nil, nil, nil, nil, nil]
    }

    /// What `meta` reads for `key` (enum nft_meta_keys), as the kernel writes it to a register.
    package func meta(_ key: UInt32) -> [UInt8?]? {
        func native(_ value: UInt32) -> [UInt8?] { withUnsafeBytes(of: value) { $0.map(Optional.some) } }
        switch key {
        case 1: return isIPv4 ? [0x08, 0x00] : [0x86, 0xdd]  // PROTOCOL: the ethertype, big-endian
        case 5: return outputInterface.map { native(UInt32(bitPattern: $0.index)) }  // OIF
        case 7:  // OIFNAME: IFNAMSIZ bytes, zero-padded
            return outputInterface.map { Array(($0.name.utf8.map(Optional.some) + Array(repeating: 0, count: 16)).prefix(16)) }
        case 10: return uid.map(native)  // SKUID
        case 15: return [family]  // NFPROTO
        case 16: return [transport]  // L4PROTO
        default: return nil
        }
    }

    /// What `ct` reads for `key`: the state of a new connection (NF_CT_STATE_BIT(IP_CT_NEW)).
    package func connectionTracking(_ key: UInt32) -> [UInt8?]? {
        key == 0 ? withUnsafeBytes(of: UInt32(8)) { $0.map(Optional.some) } : nil
    }
}
