/// The sock_diag protocol's numbers (linux/sock_diag.h, linux/inet_diag.h, linux/tcp.h). Sizes
/// and offsets are pinned against the C headers in the tests (`SocketDiagDecoderTests`).
package enum SockDiag {
    /// NETLINK_SOCK_DIAG (also called NETLINK_INET_DIAG).
    package static let netlinkProtocol: Int32 = 4
    /// SOCK_DIAG_BY_FAMILY: the request and each socket of the answer.
    package static let byFamily: UInt16 = 20
    /// TCPDIAG_GETSOCK: inet_diag's original request (`struct inet_diag_req`), still served by
    /// every kernel, whose dump covers both families in one walk of the TCP hash tables (the
    /// kernel takes its family as AF_UNSPEC). Its answers carry this type, same layout.
    package static let tcpGetSocket: UInt16 = 18
    /// `struct inet_diag_req`: family, src_len, dst_len, ext (u8 each), sockid (48), states u32, dbs u32.
    package static let compatRequestSize = 60
    /// `struct inet_diag_req_v2`: family u8, protocol u8, ext u8, pad u8, states u32, then a
    /// 48-byte `inet_diag_sockid`.
    package static let requestSize = 56
    /// `struct inet_diag_msg`: family u8, state u8, timer u8, retrans u8, sockid (48 bytes:
    /// sport be16, dport be16, src be32[4], dst be32[4], if u32, cookie u32[2]), expires,
    /// rqueue, wqueue, uid, inode (u32 each).
    package static let messageSize = 72
    package static let sourcePortOffset = 4
    package static let destinationPortOffset = 6
    package static let sourceOffset = 8
    package static let destinationOffset = 24
    package static let interfaceOffset = 40
    package static let cookieOffset = 44
    /// `idiag_rqueue`, after expires.
    package static let unreadOffset = 56
    /// `idiag_uid`, after expires, rqueue and wqueue.
    package static let uidOffset = 64
    /// INET_DIAG_INFO: the attribute carrying `struct tcp_info`; asked for with bit
    /// 1 << (INET_DIAG_INFO - 1) in `idiag_ext`.
    package static let attributeInfo: UInt16 = 2
    /// INET_DIAG_CGROUP_ID (u64, Linux 5.7): the socket's cgroup v2 id, sent with every socket
    /// unasked (its request bit would not fit `idiag_ext`).
    package static let attributeControlGroup: UInt16 = 21
    /// The sockets stall detection reads: those that carry traffic or try to (ESTABLISHED,
    /// SYN_SENT), those closed with data or a FIN still unacknowledged (FIN_WAIT1, CLOSE_WAIT,
    /// LAST_ACK, CLOSING: an application that gave up on a dead path leaves these behind,
    /// retransmitting), and listeners, which tell connections a peer opened to a local service
    /// from those the host started. SYN_RECV is a peer's doing and is not asked for.
    package static let stallStates: UInt32 = 1 << 1 | 1 << 2 | 1 << 4 | 1 << 8 | 1 << 9 | 1 << 10 | 1 << 11
    package static let protocolTCP: UInt8 = 6

    // `struct tcp_info` offsets (linux/tcp.h; stable: the struct only ever grows at its end).
    package static let infoRetransmits = 2
    package static let infoBackoff = 4
    package static let infoRTO = 8
    package static let infoUnacknowledged = 24
    package static let infoLastDataSent = 44
    package static let infoLastDataReceived = 52
    package static let infoLastAckReceived = 56
    package static let infoTotalRetransmits = 100
    /// Linux 4.1 and 4.2 (`TCPCounters.progress`).
    package static let infoBytesAcked = 120
    package static let infoBytesReceived = 128
    package static let infoSegmentsOut = 136
    package static let infoSegmentsIn = 140
    /// Linux 4.6.
    package static let infoNotSentBytes = 144
    package static let infoDataSegmentsIn = 152
    /// Linux 5.4: the peer's window, told apart from a zero window's probes.
    package static let infoSendWindow = 228
    /// The shortest tcp_info that has every field read here (Linux 4.2 added tcpi_segs_in).
    package static let infoMinimumSize = 144
}

/// One message of a sock_diag dump.
package enum SocketDiagMessage: Hashable, Sendable {
    /// A socket (SOCK_DIAG_BY_FAMILY) of an IPv4 or IPv6 dump.
    case socket(TCPSocketSample)
    /// NLMSG_DONE: the end of the dump.
    case done
    /// NLMSG_ERROR: an errno (negative, as the kernel sends it), 0 for an acknowledgement.
    case error(Int32)
    /// A message of no interest (NLMSG_NOOP, unknown types).
    case ignored(type: UInt16)
}

package struct SocketDiagDecoded: Hashable, Sendable {
    package var header: NetlinkHeader
    package var message: SocketDiagMessage
}

/// What was wrong with bytes that claimed to be a sock_diag answer. Each names where and what.
package enum SocketDiagDecodingError: NetlinkFramingError, Hashable, Sendable, CustomStringConvertible {
    /// Fewer bytes than a `nlmsghdr` at `offset`.
    case truncatedHeader(offset: Int, available: Int)
    /// `nlmsg_len` smaller than the header or larger than what is left.
    case invalidMessageLength(offset: Int, declared: Int, available: Int)
    /// The fixed part (`inet_diag_msg`, or the errno of NLMSG_ERROR) does not fit.
    case truncatedPayload(messageType: UInt16, needed: Int, available: Int)
    /// `idiag_family` is neither AF_INET nor AF_INET6.
    case unknownFamily(UInt8)
    /// An attribute's `nla_len` is below its header size or runs past its message.
    case invalidAttributeLength(attribute: UInt16, declared: Int, available: Int)
    /// INET_DIAG_INFO shorter than the fields read from `struct tcp_info`.
    case truncatedTCPInfo(length: Int, needed: Int)

    package var description: String {
        switch self {
        case let .truncatedHeader(offset, available):
            "sock_diag: truncated netlink header at offset \(offset): \(available) bytes left, 16 needed"
        case let .invalidMessageLength(offset, declared, available):
            "sock_diag: message at offset \(offset) declares length \(declared) with \(available) bytes left"
        case let .truncatedPayload(type, needed, available):
            "sock_diag: message type \(type) has \(available) payload bytes, \(needed) needed"
        case let .unknownFamily(family):
            "sock_diag: socket of address family \(family), neither AF_INET nor AF_INET6"
        case let .invalidAttributeLength(attribute, declared, available):
            "sock_diag: attribute \(attribute) declares length \(declared) with \(available) bytes left"
        case let .truncatedTCPInfo(length, needed):
            "sock_diag: tcp_info of \(length) bytes, \(needed) needed"
        }
    }
}

/// Decodes datagrams read from a NETLINK_SOCK_DIAG socket. Pure and bounds-checked: a truncated
/// or lying length yields a `SocketDiagDecodingError`, never a trap or a read out of bounds.
package enum SocketDiagDecoder {
    /// The messages of one datagram and the errors met on the way. A message whose own content
    /// is bad is skipped and reported; bad framing ends the datagram.
    package struct Batch: Sendable {
        package var messages: [SocketDiagDecoded] = []
        package var errors: [SocketDiagDecodingError] = []
    }

    package static func decode(_ datagram: UnsafeRawBufferPointer) -> Batch {
        var batch = Batch()
        decode(datagram) { header, result in
            switch result {
            case .success(let message): batch.messages.append(SocketDiagDecoded(header: header, message: message))
            case .failure(let error): batch.errors.append(error)
            }
        }
        return batch
    }

    package static func decode(_ datagram: [UInt8]) -> Batch {
        datagram.withUnsafeBytes { decode($0) }
    }

    /// Calls `body` with each message (or the error that stood in its place), in order, without
    /// collecting them: the dumper's path, which keeps only the sockets of its own dump.
    /// A framing error is passed with the header it was found at zeroed, and ends the datagram.
    package static func decode(
        _ datagram: UnsafeRawBufferPointer,
        _ body: (NetlinkHeader, Result<SocketDiagMessage, SocketDiagDecodingError>) -> Void
    ) {
        let broken = NetlinkHeader.forEachMessage(in: ByteReader(datagram), failing: SocketDiagDecodingError.self) { header, payload in
            do throws(SocketDiagDecodingError) {
                body(header, .success(try decodeMessage(type: header.type, payload: payload)))
            } catch {
                body(header, .failure(error))
            }
        }
        if let broken { body(NetlinkHeader(length: 0, type: 0, flags: 0, sequence: 0, portID: 0), .failure(broken)) }
    }

    package static func decodeMessage(type: UInt16, payload: ByteReader) throws(SocketDiagDecodingError) -> SocketDiagMessage {
        switch type {
        case RT.done: return .done
        case RT.error: return .error(try NetlinkHeader.errorCode(payload, failing: SocketDiagDecodingError.self))
        case SockDiag.byFamily, SockDiag.tcpGetSocket: return .socket(try decodeSocket(payload))
        default: return .ignored(type: type)
        }
    }

    package static func decodeSocket(_ payload: ByteReader) throws(SocketDiagDecodingError) -> TCPSocketSample {
        guard payload.count >= SockDiag.messageSize,
            let family = payload.integer(at: 0, as: UInt8.self),
            let state = payload.integer(at: 1, as: UInt8.self),
            let sourcePort = payload.integer(at: SockDiag.sourcePortOffset, as: UInt16.self),
            let destinationPort = payload.integer(at: SockDiag.destinationPortOffset, as: UInt16.self),
            let interface = payload.integer(at: SockDiag.interfaceOffset, as: UInt32.self),
            let cookieLow = payload.integer(at: SockDiag.cookieOffset, as: UInt32.self),
            let cookieHigh = payload.integer(at: SockDiag.cookieOffset + 4, as: UInt32.self),
            let unread = payload.integer(at: SockDiag.unreadOffset, as: UInt32.self),
            let uid = payload.integer(at: SockDiag.uidOffset, as: UInt32.self)
        else { throw .truncatedPayload(messageType: SockDiag.byFamily, needed: SockDiag.messageSize, available: payload.count) }
        guard let source = address(payload, at: SockDiag.sourceOffset, family: family),
            let destination = address(payload, at: SockDiag.destinationOffset, family: family)
        else { throw .unknownFamily(family) }

        var counters: TCPCounters?
        var controlGroup: UInt64 = 0
        try NetlinkHeader.forEachAttribute(in: payload, from: SockDiag.messageSize) { (attribute, value) throws(SocketDiagDecodingError) in
            if attribute == SockDiag.attributeInfo { counters = try tcpInfo(value) }
            // A short value is read as no group: the socket is still judged for its link.
            if attribute == SockDiag.attributeControlGroup { controlGroup = value.integer(at: 0, as: UInt64.self) ?? 0 }
        } invalid: { .invalidAttributeLength(attribute: $0, declared: $1, available: $2) }
        let unmappedSource = source.unmappedV4 ?? source
        let unmappedDestination = destination.unmappedV4 ?? destination
        var sample = TCPSocketSample(
            cookie: UInt64(cookieHigh) << 32 | UInt64(cookieLow), state: TCPState(rawValue: state),
            source: unmappedSource, sourcePort: UInt16(bigEndian: sourcePort),
            destination: unmappedDestination, destinationPort: UInt16(bigEndian: destinationPort),
            boundInterface: Int32(bitPattern: interface), counters: counters, owner: uid, controlGroup: controlGroup)
        sample.unread = unread
        return sample
    }

    /// An address of `inet_diag_sockid` (16 bytes reserved, the first 4 used by AF_INET).
    package static func address(_ payload: ByteReader, at offset: Int, family: UInt8) -> IPAddress? {
        switch AddressFamily(rawValue: family) {
        case .ipv4:
            guard let raw = payload.integer(at: offset, as: UInt32.self) else { return nil }
            return .v4(UInt32(bigEndian: raw))
        case .ipv6:
            guard let hi = payload.integer(at: offset, as: UInt64.self),
                let lo = payload.integer(at: offset + 8, as: UInt64.self)
            else { return nil }
            return .v6(UInt64(bigEndian: hi), UInt64(bigEndian: lo))
        default:
            return nil
        }
    }

    package static func tcpInfo(_ value: ByteReader) throws(SocketDiagDecodingError) -> TCPCounters {
        guard value.count >= SockDiag.infoMinimumSize,
            let retransmits = value.integer(at: SockDiag.infoRetransmits, as: UInt8.self),
            let rto = value.integer(at: SockDiag.infoRTO, as: UInt32.self),
            let unacknowledged = value.integer(at: SockDiag.infoUnacknowledged, as: UInt32.self),
            let lastDataSent = value.integer(at: SockDiag.infoLastDataSent, as: UInt32.self),
            let lastData = value.integer(at: SockDiag.infoLastDataReceived, as: UInt32.self),
            let lastAck = value.integer(at: SockDiag.infoLastAckReceived, as: UInt32.self),
            let total = value.integer(at: SockDiag.infoTotalRetransmits, as: UInt32.self),
            let out = value.integer(at: SockDiag.infoSegmentsOut, as: UInt32.self),
            let received = value.integer(at: SockDiag.infoSegmentsIn, as: UInt32.self),
            let acked = value.integer(at: SockDiag.infoBytesAcked, as: UInt64.self),
            let bytesReceived = value.integer(at: SockDiag.infoBytesReceived, as: UInt64.self)
        else { throw .truncatedTCPInfo(length: value.count, needed: SockDiag.infoMinimumSize) }
        var counters = TCPCounters(
            segmentsOut: out, segmentsIn: received, totalRetransmits: total, consecutiveTimeouts: retransmits,
            retransmissionTimeoutMicroseconds: rto, millisecondsSinceDataReceived: lastData,
            millisecondsSinceAckReceived: lastAck, millisecondsSinceDataSent: lastDataSent,
            unacknowledged: unacknowledged)
        counters.progress = acked &+ bytesReceived
        counters.dataSegmentsIn = value.integer(at: SockDiag.infoDataSegmentsIn, as: UInt32.self) ?? 0
        // Backed off with nothing in flight, data queued and the window open: the host refused
        // to send it (see `TCPCounters.sendsRefused`). Absent fields (older kernels) say nothing.
        if unacknowledged == 0, let backoff = value.integer(at: SockDiag.infoBackoff, as: UInt8.self), backoff > 0,
            let queued = value.integer(at: SockDiag.infoNotSentBytes, as: UInt32.self), queued > 0,
            let window = value.integer(at: SockDiag.infoSendWindow, as: UInt32.self), window > 0
        {
            counters.sendsRefused = backoff
        }
        return counters
    }
}

/// Encodes sock_diag requests.
package enum SocketDiagRequest {
    /// A dump of the TCP sockets of `family` in the states stall detection reads, each with its
    /// tcp_info: `nlmsghdr` (SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP) then `inet_diag_req_v2`.
    package static func tcpDump(family: AddressFamily, sequence: UInt32) -> [UInt8] {
        var message = NetlinkRequest.header(
            type: SockDiag.byFamily, flags: RT.flagRequest | RT.flagDump, sequence: sequence,
            bodyLength: SockDiag.requestSize)
        message += [family.rawValue, SockDiag.protocolTCP, UInt8(1 << (SockDiag.attributeInfo - 1)), 0]
        NetlinkRequest.append(SockDiag.stallStates, to: &message)
        // inet_diag_sockid zeroed: no filter on ports, addresses, interface or cookie.
        message += [UInt8](repeating: 0, count: SockDiag.requestSize - 8)
        return message
    }

    /// The same dump for both families at once: TCPDIAG_GETSOCK with `struct inet_diag_req`
    /// (family u8 0, src_len u8, dst_len u8, ext u8, inet_diag_sockid, states u32, dbs u32).
    /// One walk of the kernel's established-socket hash instead of two: the walk visits every
    /// bucket however few sockets there are, and is most of the cost of a poll (BENCHMARKS.md).
    package static func tcpDumpBothFamilies(sequence: UInt32) -> [UInt8] {
        var message = NetlinkRequest.header(
            type: SockDiag.tcpGetSocket, flags: RT.flagRequest | RT.flagDump, sequence: sequence,
            bodyLength: SockDiag.compatRequestSize)
        message += [0, 0, 0, UInt8(1 << (SockDiag.attributeInfo - 1))]
        message += [UInt8](repeating: 0, count: 48)
        NetlinkRequest.append(SockDiag.stallStates, to: &message)
        NetlinkRequest.append(UInt32(0), to: &message)
        return message
    }
}
