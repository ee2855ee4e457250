/// Encodes the requests reachd sends to the kernel.
enum NetlinkRequest {
    /// A dump of every link, address or route: `nlmsghdr` followed by the zeroed family header the
    /// kernel expects for `type` (strict checking rejects a bare `rtgenmsg`).
    static func dump(type: UInt16, sequence: UInt32) -> [UInt8] {
        let body: Int
        switch type {
        case RT.getLink: body = NetlinkDecoder.linkHeaderSize
        case RT.getAddress: body = NetlinkDecoder.addressHeaderSize
        default: body = NetlinkDecoder.routeHeaderSize
        }
        var message = header(type: type, flags: RT.flagRequest | RT.flagDump, sequence: sequence, bodyLength: body)
        message += [UInt8](repeating: 0, count: body)
        return message
    }

    static func header(type: UInt16, flags: UInt16, sequence: UInt32, bodyLength: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(NetlinkHeader.size + bodyLength)
        append(UInt32(NetlinkHeader.size + bodyLength), to: &bytes)
        append(type, to: &bytes)
        append(flags, to: &bytes)
        append(sequence, to: &bytes)
        append(UInt32(0), to: &bytes)  // port id 0: the kernel fills in ours
        return bytes
    }

    static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
    }
}
