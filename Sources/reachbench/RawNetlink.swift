#if canImport(Glibc)
import Glibc
#endif

/// A bare NETLINK_ROUTE socket for the bench itself: it changes links (one sendmsg per sample,
/// no process spawned) and, as a floor, listens to link notifications without any library code.
/// Created on a thread inside the bench namespace; a socket stays in the namespace it was created in.
final class RawNetlink: @unchecked Sendable {
    let fd: Int32
    private var sequence: UInt32 = 0
    private var buffer = [UInt8](repeating: 0, count: 256 << 10)

    // <linux/netlink.h>, <linux/rtnetlink.h>, <linux/if.h>, <linux/if_link.h>
    static let netlinkRoute: Int32 = 0
    static let messageError: UInt16 = 2
    static let messageDone: UInt16 = 3
    static let newLink: UInt16 = 16  // RTM_NEWLINK
    static let flagRequest: UInt16 = 0x1
    static let flagAck: UInt16 = 0x4
    static let interfaceUp: UInt32 = 0x1  // IFF_UP
    static let attributeOperState: UInt16 = 16  // IFLA_OPERSTATE
    static let operStateUp: UInt8 = 6  // IF_OPER_UP
    /// RTMGRP_* bit masks for bind(2).
    static let groupLink: UInt32 = 0x1
    static let groupsAll: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400  // link, IPv4/IPv6 addresses and routes

    /// Opens the socket inside `namespace`, bound to the multicast `groups` (0: requests only).
    init(in namespace: BenchNamespace, groups: UInt32) throws(BenchError) {
        fd = try namespace.inside { () -> Result<Int32, BenchError> in
            let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Self.netlinkRoute)
            return fd >= 0 ? .success(fd) : .failure(BenchError.system("socket(AF_NETLINK)"))
        }
        // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid; __u32 nl_groups; }
        var address = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: UInt16(AF_NETLINK).littleEndian) { address.replaceSubrange(0..<2, with: $0) }
        withUnsafeBytes(of: groups.littleEndian) { address.replaceSubrange(8..<12, with: $0) }
        let bound = address.withUnsafeBytes { raw in
            bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0 else {
            let error = BenchError.system("bind(AF_NETLINK)")
            close(fd)
            throw error
        }
        if groups != 0 {
            var size: Int32 = 8 << 20
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    deinit { close(fd) }

    // MARK: changing links

    /// Sets a link administratively up or down: RTM_NEWLINK with ifi_change = IFF_UP, one
    /// sendmsg. The kernel applies it before send returns; the ACK is left queued for `readAck()`,
    /// so reading it costs nothing inside a measurement.
    func setAdminState(index: Int32, up: Bool) throws(BenchError) {
        sequence &+= 1
        if sequence == 0 { sequence = 1 }
        var message = [UInt8](repeating: 0, count: 32)
        message.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt32(32), toByteOffset: 0, as: UInt32.self)  // nlmsg_len
            raw.storeBytes(of: Self.newLink, toByteOffset: 4, as: UInt16.self)  // nlmsg_type
            raw.storeBytes(of: Self.flagRequest | Self.flagAck, toByteOffset: 6, as: UInt16.self)
            raw.storeBytes(of: sequence, toByteOffset: 8, as: UInt32.self)  // nlmsg_seq; nlmsg_pid 0
            // struct ifinfomsg at 16: family (AF_UNSPEC), pad, type, index, flags, change
            raw.storeBytes(of: index, toByteOffset: 20, as: Int32.self)
            raw.storeBytes(of: up ? Self.interfaceUp : 0, toByteOffset: 24, as: UInt32.self)
            raw.storeBytes(of: Self.interfaceUp, toByteOffset: 28, as: UInt32.self)
        }
        let sent = message.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == message.count else { throw BenchError.system("send RTM_NEWLINK") }
    }

    /// Reads the ACK of the last `setAdminState`, throwing the kernel's error if it refused.
    func readAck(timeoutMilliseconds: Int32 = 2000) throws(BenchError) {
        let deadline = monotonicNanoseconds() + UInt64(timeoutMilliseconds) * 1_000_000
        while true {
            let count = try receive(until: deadline)
            guard count > 0 else { throw BenchError("no ACK for RTM_NEWLINK within \(timeoutMilliseconds) ms") }
            var result: Int32?
            forEachMessage(count) { type, sequence, body in
                guard type == Self.messageError, sequence == self.sequence, body.count >= 4 else { return }
                result = body.loadUnaligned(fromByteOffset: 0, as: Int32.self)
            }
            if let result {
                guard result == 0 else { throw BenchError.system("RTM_NEWLINK", errno: -result) }
                return
            }
        }
    }

    // MARK: listening

    /// Blocks until an RTM_NEWLINK for `index` reports the operational state asked for
    /// (up: IF_OPER_UP; down: anything else). Returns false on timeout.
    func waitForOperState(index: Int32, up: Bool, deadline: UInt64) throws(BenchError) -> Bool {
        while true {
            let count = try receive(until: deadline)
            guard count > 0 else { return false }
            var matched = false
            forEachMessage(count) { type, _, body in
                guard type == Self.newLink, body.count >= 16,
                    body.loadUnaligned(fromByteOffset: 4, as: Int32.self) == index,
                    let state = Self.operState(attributes: UnsafeRawBufferPointer(rebasing: body[16...]))
                else { return }
                if (state == Self.operStateUp) == up { matched = true }
            }
            if matched { return true }
        }
    }

    /// Reads what is queued, without waiting, and tells whether an RTM_NEWLINK for `index` with
    /// the operational state asked for was among it (for a loop that polls several sources).
    func takeOperState(index: Int32, up: Bool) -> Bool {
        var matched = false
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 && (errno == EINTR || errno == ENOBUFS) { continue }
            guard count > 0 else { return matched }
            forEachMessage(count) { type, _, body in
                guard type == Self.newLink, body.count >= 16,
                    body.loadUnaligned(fromByteOffset: 4, as: Int32.self) == index,
                    let state = Self.operState(attributes: UnsafeRawBufferPointer(rebasing: body[16...]))
                else { return }
                if (state == Self.operStateUp) == up { matched = true }
            }
        }
    }

    /// Discards everything queued.
    func drain() {
        while buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
    }

    /// Waits until the namespace has been silent for `quiet` milliseconds (links, addresses, routes
    /// settled after a setup), at most `limit` milliseconds. Returns whether it got quiet.
    func waitForQuiet(quietMilliseconds: Int32, limitMilliseconds: Int) -> Bool {
        let deadline = monotonicNanoseconds() + UInt64(limitMilliseconds) * 1_000_000
        while monotonicNanoseconds() < deadline {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, quietMilliseconds)
            if ready == 0 { return true }
            if ready < 0 && errno != EINTR { return false }
            drain()
        }
        return false
    }

    /// One datagram into the buffer; 0 when the deadline passed first.
    private func receive(until deadline: UInt64) throws(BenchError) -> Int {
        while true {
            let now = monotonicNanoseconds()
            guard now < deadline else { return 0 }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min((deadline - now) / 1_000_000 + 1, 60_000)))
            if ready < 0 {
                if errno == EINTR { continue }
                throw BenchError.system("poll(netlink)")
            }
            if ready == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { return count }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            // ENOBUFS on a listener: notifications were lost; the next sample still works.
            if count < 0 && errno == ENOBUFS { continue }
            throw BenchError.system("recv(netlink)")
        }
    }

    /// Calls `body(type, sequence, payload)` for each netlink message in the first `count` bytes.
    private func forEachMessage(_ count: Int, _ body: (UInt16, UInt32, UnsafeRawBufferPointer) -> Void) {
        buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset + 16 <= count {
                let length = Int(raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                guard length >= 16, offset + length <= count else { return }
                let type = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)
                let sequence = raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
                body(type, sequence, UnsafeRawBufferPointer(rebasing: raw[(offset + 16)..<(offset + length)]))
                offset += (length + 3) & ~3
            }
        }
    }

    /// IFLA_OPERSTATE among a link message's attributes.
    private static func operState(attributes: UnsafeRawBufferPointer) -> UInt8? {
        var offset = 0
        while offset + 4 <= attributes.count {
            let length = Int(attributes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let type = attributes.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self) & 0x3FFF
            guard length >= 4, offset + length <= attributes.count else { return nil }
            if type == attributeOperState, length >= 5 { return attributes[offset + 4] }
            offset += (length + 3) & ~3
        }
        return nil
    }
}
