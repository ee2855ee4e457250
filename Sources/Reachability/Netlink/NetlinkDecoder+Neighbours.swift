/// RTM_NEWNEIGH and RTM_DELNEIGH: the kernel's ARP/ND entries, of which the mirror keeps the gateways'.
extension NetlinkDecoder {
    /// `struct ndmsg`: family u8, pad u8, pad u16, ifindex i32, state u16, flags u8, type u8.
    package static let neighbourHeaderSize = 12
    /// MAX_ADDR_LEN: the longest link-layer address the kernel holds.
    package static let maximumLinkLayerAddress = 32
    /// NTF_PROXY in `ndm_flags`: a proxy-ARP entry, an address answered for, not a next hop.
    package static let neighbourProxy: UInt8 = 0x08

    /// An IPv4 or IPv6 neighbour; nil for other families (AF_BRIDGE forwarding entries), proxy
    /// entries, and an entry without NDA_DST (the kernel always sends it for these families).
    package static func decodeNeighbour(type: UInt16, payload: ByteReader) throws(NetlinkDecodingError) -> Neighbour? {
        guard payload.count >= neighbourHeaderSize,
            let rawFamily = payload.integer(at: 0, as: UInt8.self),
            let index = payload.integer(at: 4, as: Int32.self),
            let state = payload.integer(at: 8, as: UInt16.self),
            let flags = payload.integer(at: 10, as: UInt8.self)
        else { throw .truncatedPayload(messageType: type, needed: neighbourHeaderSize, available: payload.count) }
        guard let family = AddressFamily(rawValue: rawFamily), flags & neighbourProxy == 0 else { return nil }
        var destination: IPAddress?
        var linkLayer: [UInt8] = []
        var confirmedAge: Duration?
        try forEachAttribute(in: payload, from: neighbourHeaderSize, messageType: type) { (attribute, value) throws(NetlinkDecodingError) in
            if attribute == RT.neighbourDestination {
                destination = try ipAddress(value, family: family, messageType: type, attribute: attribute)
            } else if attribute == RT.neighbourLinkLayerAddress, value.count <= maximumLinkLayerAddress {
                // MAX_ADDR_LEN is 32; anything longer is no address the kernel would send.
                linkLayer = value.bytes(at: 0, length: value.count) ?? []
            } else if attribute == RT.neighbourCacheInfo, let ticks = value.integer(at: 0, as: UInt32.self) {
                confirmedAge = .milliseconds(Int64(ticks) * 10)  // ndm_confirmed, in USER_HZ (100) ticks
            }
        }
        return destination.map {
            Neighbour(interfaceIndex: index, address: $0, state: NeighbourState(nud: state), linkLayerAddress: linkLayer, confirmedAge: confirmedAge)
        }
    }
}
