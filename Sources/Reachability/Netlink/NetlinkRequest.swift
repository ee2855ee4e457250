/// Encodes the requests reachd sends to the kernel.
package enum NetlinkRequest {
    /// A dump of every link, address, route or neighbour: `nlmsghdr` followed by the zeroed family header the
    /// kernel expects for `type` (strict checking rejects a bare `rtgenmsg`).
    package static func dump(type: UInt16, sequence: UInt32) -> [UInt8] {
        let body: Int
        switch type {
        case RT.getLink: body = NetlinkDecoder.linkHeaderSize
        case RT.getAddress: body = NetlinkDecoder.addressHeaderSize
        case RT.getNeighbour: body = NetlinkDecoder.neighbourHeaderSize
        default: body = NetlinkDecoder.routeHeaderSize
        }
        var message = header(type: type, flags: RT.flagRequest | RT.flagDump, sequence: sequence, bodyLength: body)
        message += [UInt8](repeating: 0, count: body)
        return message
    }

    /// RTM_GETROUTE for one destination (what `ip route get` sends): the kernel answers from its
    /// FIB with policy rules applied, without ARP and without blocking. `outputInterface` pins a
    /// scoped (link-local) destination to its link. `uid` asks as that user's traffic would be
    /// routed (`ip rule ... uidrange`); without it the kernel takes the asking process's uid.
    package static func routeLookup(destination: IPAddress, outputInterface: Int32?, uid: UInt32? = nil, sequence: UInt32) -> [UInt8] {
        let addressBytes = destination.bytes
        var attributes: [UInt8] = []
        appendAttribute(RT.routeDestination, addressBytes, to: &attributes)
        if let outputInterface {
            appendAttribute(RT.routeOutputInterface, withUnsafeBytes(of: outputInterface) { Array($0) }, to: &attributes)
        }
        if let uid {
            appendAttribute(RT.routeUID, withUnsafeBytes(of: uid) { Array($0) }, to: &attributes)
        }
        let body = NetlinkDecoder.routeHeaderSize + attributes.count
        var message = header(type: RT.getRoute, flags: RT.flagRequest, sequence: sequence, bodyLength: body)
        // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type; flags u32.
        message += [destination.family.rawValue, UInt8(destination.bitWidth), 0, 0, 0, 0, 0, 0]
        append(UInt32(0), to: &message)
        message += attributes
        return message
    }

    package static func appendAttribute(_ type: UInt16, _ value: [UInt8], to bytes: inout [UInt8]) {
        let length = 4 + value.count
        append(UInt16(length), to: &bytes)
        append(type, to: &bytes)
        bytes += value
        bytes += [UInt8](repeating: 0, count: netlinkAlign(length) - length)
    }

    package static func header(type: UInt16, flags: UInt16, sequence: UInt32, bodyLength: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(NetlinkHeader.size + bodyLength)
        append(UInt32(NetlinkHeader.size + bodyLength), to: &bytes)
        append(type, to: &bytes)
        append(flags, to: &bytes)
        append(sequence, to: &bytes)
        append(UInt32(0), to: &bytes)  // port id 0: the kernel fills in ours
        return bytes
    }

    package static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
    }
}
