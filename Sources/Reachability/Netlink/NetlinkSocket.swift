import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// A netlink socket: rtnetlink (links, addresses, routes) or sock_diag (the host's TCP sockets).
/// Owns its descriptor: closed exactly once, when the value ends.
package struct NetlinkSocket: ~Copyable {
    private let descriptor: Descriptor
    package var fd: Int32 { descriptor.rawValue }
    /// "rtnetlink" or "sock_diag", for errors.
    private let name: String

    /// rtnetlink multicast groups (RTNLGRP_*) that reachability follows.
    package static let reachabilityGroups: [Int32] = [
        1,  // RTNLGRP_LINK
        5,  // RTNLGRP_IPV4_IFADDR
        7,  // RTNLGRP_IPV4_ROUTE
        9,  // RTNLGRP_IPV6_IFADDR
        11,  // RTNLGRP_IPV6_ROUTE
        8,  // RTNLGRP_IPV4_RULE: an `ip rule` change alone can move the host's path
        // RTNLGRP_NEIGH: the kernel's ARP/ND verdict on gateways (FAILED: nobody answers). Every
        // neighbour's changes come; the mirror keeps those of gateways only (`KernelSource`).
        3,
        19,  // RTNLGRP_IPV6_RULE
        // RTNLGRP_ND_USEROPT: options of router advertisements the kernel accepted (RFC 8910's
        // captive-portal URI). No privilege needed: rtnetlink lets anyone join its groups.
        20,
    ]

    /// Opens a NETLINK_ROUTE socket, NETLINK_SOCK_DIAG with `sockDiag`, or NETLINK_NETFILTER
    /// with `netfilter` (in `namespacePath`'s namespace when given: each kind speaks for the
    /// namespace it was created in).
    package init(nonBlocking: Bool, namespacePath: String? = nil, sockDiag: Bool = false, netfilter: Bool = false) throws(SystemError) {
        let flags = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let name = netfilter ? "nf_tables" : sockDiag ? "sock_diag" : "rtnetlink"
        let kind = netfilter ? Nftables.netlinkProtocol : sockDiag ? SockDiag.netlinkProtocol : NETLINK_ROUTE
        let open = { () -> Result<Int32, SystemError> in
            let fd = socket(AF_NETLINK, flags, kind)
            return fd >= 0 ? .success(fd) : .failure(SystemError("socket(AF_NETLINK) for \(name)"))
        }
        let opened = if let namespacePath { Result { () throws(SystemError) in try NetworkNamespace.run(in: namespacePath, open) } } else { open() }
        let descriptor = Descriptor(try opened.get())
        let fd = descriptor.rawValue
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
            }
        }
        guard bound == 0 else { throw SystemError("bind(AF_NETLINK)") }
        self.descriptor = descriptor
        self.name = name
        // Best effort: makes filtered dumps filter; older kernels lack it and still work.
        _ = setOption(level: SOL_NETLINK, name: NETLINK_GET_STRICT_CHK, value: 1)
    }

    /// Takes over `fd`, an rtnetlink socket made by someone else (systemd's reachd.socket, whose
    /// `ReceiveBuffer=` PID 1 could set past rmem_max). Refuses, without closing it, anything that
    /// is not a NETLINK_ROUTE socket. Made non-blocking: the loop only reads it when readable.
    package init(adopting fd: Int32) throws(SystemError) {
        guard Self.isRoute(fd) else {
            throw SystemError("file descriptor \(fd) is not an rtnetlink socket", errno: ENOTSOCK)
        }
        let descriptor = Descriptor(fd)
        guard descriptor.setNonBlocking() else { throw SystemError("make fd \(fd) non-blocking") }
        self.descriptor = descriptor
        self.name = "rtnetlink"
        _ = setOption(level: SOL_NETLINK, name: NETLINK_GET_STRICT_CHK, value: 1)
    }

    /// Whether `fd` is a NETLINK_ROUTE socket: sd_is_socket(fd, AF_NETLINK, 0, -1), and the
    /// protocol too (a NETLINK_AUDIT socket would pass that).
    package static func isRoute(_ fd: Int32) -> Bool {
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(fd, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        return option(SO_DOMAIN) == AF_NETLINK && option(SO_PROTOCOL) == NETLINK_ROUTE
    }

    package func setOption(level: Int32, name: Int32, value: Int32) -> Bool {
        var value = value
        return setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    package func join(groups: [Int32]) throws(SystemError) {
        for group in groups where !setOption(level: SOL_NETLINK, name: NETLINK_ADD_MEMBERSHIP, value: group) {
            throw SystemError("join rtnetlink group \(group)")
        }
    }

    /// Sets the receive buffer. SO_RCVBUFFORCE (root, CAP_NET_ADMIN) passes rmem_max;
    /// without privilege SO_RCVBUF is clamped to rmem_max, which still helps.
    package func setReceiveBuffer(bytes: Int32) {
        if !setOption(level: SOL_SOCKET, name: SO_RCVBUFFORCE, value: bytes) {
            _ = setOption(level: SOL_SOCKET, name: SO_RCVBUF, value: bytes)
        }
    }

    /// The receive buffer the kernel actually granted (it doubles the request for bookkeeping).
    package var receiveBufferSize: Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, &length)
        return value
    }

    /// Sends one request to the kernel.
    package func send(_ bytes: [UInt8]) throws(SystemError) {
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(AF_NETLINK)
        let sent = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &kernel) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    retryingOnInterrupt {
                        sendto(fd, raw.baseAddress, raw.count, 0, address, socklen_t(MemoryLayout<sockaddr_nl>.size))
                    }
                }
            }
        }
        guard sent == bytes.count else { throw SystemError("send to \(name)") }
    }

    package enum Reception {
        /// A datagram from the kernel of `count` bytes; `truncated` when it did not fit the buffer.
        case datagram(count: Int, truncated: Bool)
        /// A datagram from another process (netlink allows unicast between sockets): never trust it.
        case foreign
        /// Nothing to read now (non-blocking socket), or the receive timeout passed.
        case wouldBlock
    }

    /// Reads one datagram into `buffer`. ENOBUFS (the kernel dropped messages because the
    /// buffer overflowed) is thrown like any other error: the caller must resync.
    package func receive(into buffer: inout [UInt8]) throws(SystemError) -> Reception {
        var sender = sockaddr_nl()
        var flags: Int32 = 0
        let count = buffer.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &sender) { senderPointer in
                var vector = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_name = UnsafeMutableRawPointer(senderPointer)
                    message.msg_namelen = socklen_t(MemoryLayout<sockaddr_nl>.size)
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    let result = retryingOnInterrupt { recvmsg(fd, &message, 0) }
                    flags = message.msg_flags
                    return result
                }
            }
        }
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            throw SystemError("recvmsg from \(name)")
        }
        // Port 0 is the kernel; a process cannot send from it.
        guard sender.nl_pid == 0 else { return .foreign }
        return .datagram(count: count, truncated: flags & Int32(MSG_TRUNC) != 0)
    }
}

/// Whether `fd` may be handed over as a monitor socket: an rtnetlink (NETLINK_ROUTE) socket.
package func isRouteNetlinkSocket(_ fd: Int32) -> Bool { NetlinkSocket.isRoute(fd) }
