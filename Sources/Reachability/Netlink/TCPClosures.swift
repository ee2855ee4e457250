import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// The last counters of each TCP socket of the host as it closes: sock_diag's destroy multicast
/// groups (SKNLGRP_INET_TCP_DESTROY, SKNLGRP_INET6_TCP_DESTROY). The kernel sends a socket's
/// `inet_diag_msg` and tcp_info when it frees it, so connections born and closed between two
/// polls (an application's timeout, a failed connect, a short request) are seen too.
///
/// Any user may join these groups (sock_diag lets unprivileged sockets receive; checked on Linux
/// 6.x), so reachd needs no capability for them. A destroy event names no owner: the kernel fills
/// `idiag_uid` with 0 whoever owned the socket, so samples come with `owner` nil.
package struct TCPClosures: ~Copyable {
    private let socket: NetlinkSocket
    private var buffer: [UInt8]

    /// SKNLGRP_INET_TCP_DESTROY and SKNLGRP_INET6_TCP_DESTROY (linux/sock_diag.h).
    package static let groups: [Int32] = [1, 3]
    /// Datagrams read per `readable()`: a host closing thousands of sockets a second is read in
    /// slices, never in one burst on the loop (the descriptor stays readable for the rest).
    package static let datagramsPerRead = 32

    package init(namespacePath: String? = nil) throws(SystemError) {
        let socket = try NetlinkSocket(nonBlocking: true, namespacePath: namespacePath, sockDiag: true)
        try socket.join(groups: Self.groups)
        // One destroy message is about 400 bytes; a burst of closes between two reads fits.
        socket.setReceiveBuffer(bytes: 1 << 20)
        self.socket = socket
        buffer = [UInt8](repeating: 0, count: 64 << 10)
    }

    /// The descriptor to watch for readability. Owned here: never close it.
    package var fileDescriptor: Int32 { socket.fd }

    /// The sockets closed since the last call (up to `datagramsPerRead` datagrams of them).
    package mutating func readable() -> [TCPSocketSample] {
        var closed: [TCPSocketSample] = []
        for _ in 0..<Self.datagramsPerRead {
            let reception: NetlinkSocket.Reception
            do {
                reception = try socket.receive(into: &buffer)
            } catch {
                // ENOBUFS: some closures were dropped, evidence missed and nothing else. The next
                // reads go on with what follows.
                continue
            }
            switch reception {
            case .wouldBlock: return closed
            case .foreign: continue
            case .datagram(let count, _):
                buffer.withUnsafeBytes { raw in
                    SocketDiagDecoder.decode(UnsafeRawBufferPointer(rebasing: raw[0..<count])) { _, result in
                        guard case .success(.socket(var sample)) = result else { return }
                        sample.owner = nil
                        closed.append(sample)
                    }
                }
            }
        }
        return closed
    }
}

/// Neighbour-table activity (RTNLGRP_NEIGH) as a cheap sign that traffic began: a host that
/// starts talking after a pause resolves or re-confirms its gateway (ARP, ND), and the kernel
/// says so. Stall detection listens only while it has no TCP traffic to poll, so an idle host
/// has no timer and still judges new traffic within seconds of its start.
package struct NeighbourActivity: ~Copyable {
    private let socket: NetlinkSocket
    private var buffer = [UInt8](repeating: 0, count: 16 << 10)
    private var listening = false

    /// RTNLGRP_NEIGH.
    package static let group: Int32 = 3

    package init(namespacePath: String? = nil) throws(SystemError) {
        socket = try NetlinkSocket(nonBlocking: true, namespacePath: namespacePath)
    }

    package var fileDescriptor: Int32 { socket.fd }

    /// Joins or leaves the group; what was queued before leaving is dropped.
    package mutating func listen(_ on: Bool) {
        guard on != listening else { return }
        listening = on
        _ = socket.setOption(level: SOL_NETLINK, name: on ? NETLINK_ADD_MEMBERSHIP : NETLINK_DROP_MEMBERSHIP, value: Self.group)
        if !on { _ = drain() }
    }

    /// Reads everything queued; whether any neighbour changed while listening.
    package mutating func drain() -> Bool {
        var seen = false
        // Bounded: an error that repeats (none should) cannot hold the loop.
        for _ in 0..<1024 {
            // ENOBUFS: neighbours changed faster than read, which is activity all the same.
            guard let reception = try? socket.receive(into: &buffer) else {
                seen = true
                continue
            }
            switch reception {
            case .wouldBlock: return seen && listening
            case .foreign: continue
            case .datagram: seen = true
            }
        }
        return seen && listening
    }
}
