import CNetlink
import Testing
@testable import Reachability

// SocketDiagDecoder against a commented sock_diag answer, then against hostile bytes: every
// truncation, lying lengths, a short tcp_info, unknown families and seeded random buffers.
// Netlink headers, attributes and tcp_info are host byte order (these fixtures: little-endian);
// ports and addresses of inet_diag_sockid are network byte order.

private enum DiagWire {
    static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    static func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: netlinkAlign(bytes.count) - bytes.count) }

    static func message(type: UInt16, sequence: UInt32 = 7, length: UInt32? = nil, _ payload: [UInt8]) -> [UInt8] {
        let body = padded(payload)
        return u32(length ?? UInt32(16 + body.count)) + u16(type) + u16(2 /* NLM_F_MULTI */) + u32(sequence) + u32(0) + body
    }

    /// `struct tcp_info` of `size` bytes with the fields the decoder reads.
    static func tcpInfo(out: UInt32, in received: UInt32, retransmitted: UInt32, size: Int = 232) -> [UInt8] {
        var info = [UInt8](repeating: 0, count: size)
        func put(_ value: UInt32, at offset: Int) {
            for (index, byte) in u32(value).enumerated() where offset + index < size { info[offset + index] = byte }
        }
        if size > 2 { info[2] = 3 }  // tcpi_retransmits
        put(204_000, at: 8)  // tcpi_rto, µs
        put(2, at: 24)  // tcpi_unacked
        put(1300, at: 44)  // tcpi_last_data_sent, ms
        put(1500, at: 52)  // tcpi_last_data_recv, ms
        put(1400, at: 56)  // tcpi_last_ack_recv, ms
        put(retransmitted, at: 100)  // tcpi_total_retrans
        put(5_000, at: 120)  // tcpi_bytes_acked (low half)
        put(1, at: 124)  // tcpi_bytes_acked (high half): 2^32 + 5,000
        put(700, at: 128)  // tcpi_bytes_received
        put(out, at: 136)  // tcpi_segs_out
        put(received, at: 140)  // tcpi_segs_in
        put(received / 2, at: 152)  // tcpi_data_segs_in
        return info
    }

    static func attribute(_ type: UInt16, length: UInt16? = nil, _ value: [UInt8]) -> [UInt8] {
        padded(u16(length ?? UInt16(4 + value.count)) + u16(type) + value)
    }

    /// A SOCK_DIAG_BY_FAMILY message of an IPv4 socket 192.0.2.2:40000 -> 198.51.100.7:443.
    static func socketV4(
        cookie: UInt64 = 0x1_0000_0002, family: UInt8 = 2, interface: UInt32 = 0, info: [UInt8]? = tcpInfo(out: 30, in: 2, retransmitted: 27)
    ) -> [UInt8] {
        var msg: [UInt8] = [family, 2 /* TCP_SYN_SENT */, 1, 3]
        msg += [0x9C, 0x40]  // sport 40000, big-endian
        msg += [0x01, 0xBB]  // dport 443
        msg += [192, 0, 2, 2] + [UInt8](repeating: 0, count: 12)  // src
        msg += [198, 51, 100, 7] + [UInt8](repeating: 0, count: 12)  // dst
        msg += u32(interface)  // idiag_if
        msg += u32(UInt32(truncatingIfNeeded: cookie)) + u32(UInt32(cookie >> 32))  // idiag_cookie[2]
        msg += u32(0) + u32(321) + u32(0) + u32(65534) + u32(1234)  // expires, rqueue, wqueue, uid, inode
        if let info { msg += attribute(2 /* INET_DIAG_INFO */, info) }
        return message(type: 20, msg)
    }

    /// An IPv6 socket [2001:db8::2]:50000 -> [::ffff:198.51.100.7]:80, bound to interface 4.
    static func socketV6Mapped() -> [UInt8] {
        var msg: [UInt8] = [10, 1 /* ESTABLISHED */, 0, 0]
        msg += [0xC3, 0x50, 0x00, 0x50]
        msg += [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [2]
        msg += [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 198, 51, 100, 7]
        msg += u32(4) + u32(9) + u32(0)
        msg += [UInt8](repeating: 0, count: 20)
        msg += attribute(8 /* INET_DIAG_SHUTDOWN, skipped */, [0])
        msg += attribute(2, tcpInfo(out: 5, in: 6, retransmitted: 0, size: 144))
        return message(type: 20, msg)
    }

    static let done = message(type: 3, u32(0))
}

@Suite struct SocketDiagDecoderTests {
    @Test func layoutMatchesTheKernelHeaders() {
        #expect(MemoryLayout<inet_diag_req_v2>.size == SockDiag.requestSize)
        #expect(MemoryLayout<inet_diag_msg>.size == SockDiag.messageSize)
        #expect(MemoryLayout<inet_diag_msg>.offset(of: \inet_diag_msg.idiag_uid) == SockDiag.uidOffset)
        #expect(MemoryLayout<inet_diag_msg>.offset(of: \inet_diag_msg.idiag_rqueue) == SockDiag.unreadOffset)
        #expect(MemoryLayout<inet_diag_msg>.offset(of: \inet_diag_msg.id)! + MemoryLayout<inet_diag_sockid>.offset(of: \inet_diag_sockid.idiag_if)! == SockDiag.interfaceOffset)
        #expect(MemoryLayout<inet_diag_msg>.offset(of: \inet_diag_msg.id)! + MemoryLayout<inet_diag_sockid>.offset(of: \inet_diag_sockid.idiag_cookie)! == SockDiag.cookieOffset)
        #expect(Int32(SOCK_DIAG_BY_FAMILY) == Int32(SockDiag.byFamily))
        #expect(Int32(INET_DIAG_INFO) == Int32(SockDiag.attributeInfo))
        #expect(Int32(INET_DIAG_CGROUP_ID) == Int32(SockDiag.attributeControlGroup))
        #expect(NETLINK_SOCK_DIAG == SockDiag.netlinkProtocol)
    }

    @Test func requestIsInetDiagReqV2ForTCPWithInfo() {
        let request = SocketDiagRequest.tcpDump(family: .ipv6, sequence: 9)
        #expect(request.count == 16 + 56)
        #expect(Array(request[0..<4]) == DiagWire.u32(72))  // nlmsg_len
        #expect(Array(request[4..<6]) == DiagWire.u16(20))  // SOCK_DIAG_BY_FAMILY
        #expect(Array(request[6..<8]) == DiagWire.u16(0x301))  // NLM_F_REQUEST | NLM_F_DUMP
        #expect(Array(request[8..<12]) == DiagWire.u32(9))  // sequence
        #expect(Array(request[16..<20]) == [10, 6, 2, 0])  // AF_INET6, IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1)
        #expect(Array(request[20..<24]) == DiagWire.u32(0b1111_0001_0110))  // ESTABLISHED, SYN_SENT, FIN_WAIT1, CLOSE_WAIT, LAST_ACK, LISTEN, CLOSING
        #expect(request[24...].allSatisfy { $0 == 0 })
    }

    @Test func bothFamiliesRequestIsInetDiagReqV1WithFamilyUnspecified() {
        let request = SocketDiagRequest.tcpDumpBothFamilies(sequence: 3)
        #expect(request.count == 16 + 60)
        #expect(Array(request[0..<4]) == DiagWire.u32(76))  // nlmsg_len
        #expect(MemoryLayout<inet_diag_req>.size == SockDiag.compatRequestSize)
        #expect(Array(request[4..<6]) == DiagWire.u16(18))  // TCPDIAG_GETSOCK
        #expect(Int32(TCPDIAG_GETSOCK) == 18)
        #expect(Array(request[16..<20]) == [0, 0, 0, 2])  // AF_UNSPEC, src_len, dst_len, ext INET_DIAG_INFO
        #expect(request[20..<68].allSatisfy { $0 == 0 })  // inet_diag_sockid: no filter
        #expect(Array(request[68..<72]) == DiagWire.u32(0b1111_0001_0110))  // idiag_states
        #expect(Array(request[72..<76]) == DiagWire.u32(0))  // idiag_dbs
        // Its answers (type 18) decode as sockets too.
        var answer = DiagWire.socketV4()
        answer[4] = 18
        #expect(SocketDiagDecoder.decode(answer).messages.first.map { if case .socket = $0.message { true } else { false } } == true)
    }

    @Test func decodesSocketsAndDone() throws {
        let batch = SocketDiagDecoder.decode(DiagWire.socketV4() + DiagWire.socketV6Mapped() + DiagWire.done)
        #expect(batch.errors.isEmpty)
        #expect(batch.messages.count == 3)
        guard case let .socket(v4) = batch.messages[0].message, case let .socket(v6) = batch.messages[1].message else {
            Issue.record("not sockets: \(batch.messages)")
            return
        }
        #expect(batch.messages[0].header.sequence == 7)
        #expect(v4.cookie == 0x1_0000_0002)
        #expect(v4.state == .synSent)
        #expect(v4.source == IPAddress("192.0.2.2") && v4.sourcePort == 40000)
        #expect(v4.destination == IPAddress("198.51.100.7") && v4.destinationPort == 443)
        #expect(v4.boundInterface == 0)
        var expected = TCPCounters(
            segmentsOut: 30, segmentsIn: 2, totalRetransmits: 27, consecutiveTimeouts: 3,
            retransmissionTimeoutMicroseconds: 204_000, millisecondsSinceDataReceived: 1500,
            millisecondsSinceAckReceived: 1400, millisecondsSinceDataSent: 1300, unacknowledged: 2)
        // Bytes acknowledged plus bytes received.
        expected.progress = (1 << 32) + 5_000 + 700
        expected.dataSegmentsIn = 1
        #expect(v4.counters == expected)
        #expect(v4.owner == 65534, "idiag_uid")
        #expect(v4.unread == 321, "idiag_rqueue")
        #expect(v6.state == .established)
        #expect(v6.source == IPAddress("2001:db8::2") && v6.sourcePort == 50000)
        #expect(v6.destination == IPAddress("198.51.100.7"), "an IPv4-mapped peer is given as IPv4")
        #expect(v6.boundInterface == 4 && v6.cookie == 9)
        #expect(v6.counters?.segmentsIn == 6)
        #expect(v6.counters?.dataSegmentsIn == 0, "a tcp_info of Linux 4.2's size has none")
        #expect(batch.messages[2].message == .done)
    }

    /// issue 48: data queued, nothing in flight, backed off with the peer's window open is data
    /// the host refuses to send (a drop rule of its own output hook); a zero window's probes
    /// and a kernel without tcpi_snd_wnd say nothing.
    @Test func backedOffWithDataQueuedAndTheWindowOpenIsASendTheHostRefused() {
        func counters(backoff: UInt8, notSent: UInt32, window: UInt32, size: Int = 232) -> TCPCounters? {
            var info = DiagWire.tcpInfo(out: 8, in: 1, retransmitted: 0, size: size)
            info[2] = 0  // tcpi_retransmits
            info[4] = backoff  // tcpi_backoff
            for index in 24..<28 { info[index] = 0 }  // tcpi_unacked
            for (index, byte) in DiagWire.u32(notSent).enumerated() where 144 + index < size { info[144 + index] = byte }
            for (index, byte) in DiagWire.u32(window).enumerated() where 228 + index < size { info[228 + index] = byte }
            guard case let .socket(sample)? = SocketDiagDecoder.decode(DiagWire.socketV4(info: info)).messages.first?.message else { return nil }
            return sample.counters
        }
        #expect(counters(backoff: 5, notSent: 1000, window: 65160)?.sendsRefused == 5)
        #expect(counters(backoff: 5, notSent: 1000, window: 0)?.sendsRefused == 0, "a zero window's probes")
        #expect(counters(backoff: 5, notSent: 0, window: 65160)?.sendsRefused == 0, "nothing queued")
        #expect(counters(backoff: 0, notSent: 1000, window: 65160)?.sendsRefused == 0, "not backed off")
        #expect(counters(backoff: 5, notSent: 1000, window: 65160, size: 160)?.sendsRefused == 0, "before Linux 5.4")
    }

    /// INET_DIAG_CGROUP_ID: the socket's cgroup v2 id, u64 in host order; a short one is no group.
    @Test func controlGroupIdIsRead() {
        var full = DiagWire.socketV4()
        full += DiagWire.attribute(21, DiagWire.u32(0x1234) + DiagWire.u32(0x1))
        let length = UInt32(full.count)
        full.replaceSubrange(0..<4, with: DiagWire.u32(length))
        guard case let .socket(sample) = SocketDiagDecoder.decode(full).messages.first?.message else { Issue.record("no socket"); return }
        #expect(sample.controlGroup == 0x1_0000_1234)
        var short = DiagWire.socketV4()
        short += DiagWire.attribute(21, [1, 2])
        short.replaceSubrange(0..<4, with: DiagWire.u32(UInt32(short.count)))
        guard case let .socket(none) = SocketDiagDecoder.decode(short).messages.first?.message else { Issue.record("no socket"); return }
        #expect(none.controlGroup == 0 && none.counters != nil)
    }

    @Test func socketWithoutInfoHasNoCounters() {
        let batch = SocketDiagDecoder.decode(DiagWire.socketV4(info: nil))
        #expect(batch.errors.isEmpty)
        guard case let .socket(sample)? = batch.messages.first?.message else {
            Issue.record("no socket")
            return
        }
        #expect(sample.counters == nil)
    }

    @Test func errorsNameWhatWasWrong() {
        #expect(SocketDiagDecoder.decode(DiagWire.socketV4(info: DiagWire.tcpInfo(out: 1, in: 1, retransmitted: 0, size: 104))).errors
            == [.truncatedTCPInfo(length: 104, needed: 144)])
        #expect(SocketDiagDecoder.decode(DiagWire.socketV4(family: 7)).errors == [.unknownFamily(7)])
        #expect(SocketDiagDecoder.decode(DiagWire.message(type: 20, [UInt8](repeating: 0, count: 40))).errors
            == [.truncatedPayload(messageType: 20, needed: 72, available: 40)])
        #expect(SocketDiagDecoder.decode(DiagWire.message(type: 2, length: 18, [1, 2])).errors
            == [.truncatedPayload(messageType: 2, needed: 4, available: 2)])
        #expect(SocketDiagDecoder.decode([1, 2, 3]).errors == [.truncatedHeader(offset: 0, available: 3)])
        #expect(SocketDiagDecoder.decode(DiagWire.message(type: 3, length: 200, DiagWire.u32(0))).errors
            == [.invalidMessageLength(offset: 0, declared: 200, available: 20)])
        // An attribute claiming more than its message holds.
        var lying = DiagWire.socketV4(info: nil)
        lying += DiagWire.u16(300) + DiagWire.u16(2) + [UInt8](repeating: 0, count: 8)
        lying.replaceSubrange(0..<4, with: DiagWire.u32(UInt32(lying.count)))
        #expect(SocketDiagDecoder.decode(lying).errors == [.invalidAttributeLength(attribute: 2, declared: 300, available: 12)])
        // Descriptions say something.
        for error in SocketDiagDecoder.decode(lying).errors { #expect(error.description.contains("sock_diag")) }
    }

    @Test func everyTruncationIsAnErrorNeverATrap() {
        let whole = DiagWire.socketV4() + DiagWire.socketV6Mapped() + DiagWire.done
        for length in 0..<whole.count {
            let batch = SocketDiagDecoder.decode(Array(whole[0..<length]))
            if length > 0 { #expect(!batch.errors.isEmpty || batch.messages.count >= 1, "length \(length)") }
            #expect(batch.messages.count <= 3)
        }
    }

    @Test func twentyThousandRandomBuffersNeverTrap() {
        var state: UInt64 = 0x50C4_D1A6
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        let seeds = [DiagWire.socketV4(), DiagWire.socketV6Mapped(), DiagWire.done]
        for round in 0..<20_000 {
            var bytes: [UInt8]
            switch round % 3 {
            case 0: bytes = (0..<Int(next() % 600)).map { _ in UInt8(truncatingIfNeeded: next()) }
            case 1:
                // A valid message with random bytes flipped.
                bytes = seeds[Int(next() % 3)] + seeds[Int(next() % 3)]
                for _ in 0..<(1 + next() % 6) { bytes[Int(next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: next()) }
            default:
                // A plausible header with a random length and type over random bytes.
                let length = 16 + Int(next() % 400)
                bytes = DiagWire.u32(UInt32(length)) + DiagWire.u16([2, 3, 20, 20][Int(next() % 4)])
                    + (0..<length - 6).map { _ in UInt8(truncatingIfNeeded: next()) }
            }
            let batch = SocketDiagDecoder.decode(bytes)
            let again = SocketDiagDecoder.decode(bytes)
            #expect(batch.messages == again.messages && batch.errors == again.errors)
            #expect((batch.messages.count + batch.errors.count) * 16 <= bytes.count + 16, "round \(round)")
            for error in batch.errors where error.description.isEmpty { Issue.record("round \(round): empty description") }
        }
    }
}
