import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// Has the kernel resolve a gateway afresh, without privilege: one empty UDP datagram to the
/// gateway's own address, out of its link. The kernel must know the gateway's link-layer address
/// to send it, so a FAILED entry goes INCOMPLETE and the kernel broadcasts its ARP requests (or
/// multicasts its neighbour solicitations) once more, which the real router answers; the new
/// verdict comes back on netlink like any other. RTM_NEWNEIGH with NTF_USE would do the same
/// without a datagram, but needs CAP_NET_ADMIN, which reachd's unit does not grant; and
/// SO_BINDTODEVICE needs CAP_NET_RAW, where IP_UNICAST_IF / IPV6_UNICAST_IF need nothing.
package enum GatewayResolution {
    /// The discard port (RFC 863): a router that gets the datagram drops it, or answers ICMP
    /// port unreachable, which an unconnected socket never hears.
    package static let discardPort: UInt16 = 9
    /// IP_UNICAST_IF and IPV6_UNICAST_IF (<linux/in.h>, <linux/in6.h>): the link a unicast
    /// datagram leaves by, whatever the routing table would pick for the gateway's address.
    package static let ipv4UnicastInterface: Int32 = 50
    package static let ipv6UnicastInterface: Int32 = 76

    /// Sends the datagram to `gateway` out of link `index`; nil when the kernel took it, else
    /// what refused it. Never blocks: the socket is non-blocking, and an empty datagram is
    /// queued on the neighbour entry while it resolves, not waited for.
    package static func ask(_ gateway: IPAddress, on index: Int32) -> SystemError? {
        do throws(SystemError) {
            try send(to: gateway, on: index)
            return nil
        } catch {
            return error
        }
    }

    private static func send(to gateway: IPAddress, on index: Int32) throws(SystemError) {
        let family = gateway.family == .ipv4 ? AF_INET : AF_INET6
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let socket = try Descriptor(checking: Glibc.socket(family, type, 0), "socket")
        // Both take the index in network byte order (the kernel reads it with ntohl, for
        // Windows' sake); in host order IPV6_UNICAST_IF fails with EADDRNOTAVAIL.
        var link = index.bigEndian
        let level = gateway.family == .ipv4 ? Int32(IPPROTO_IP) : Int32(IPPROTO_IPV6)
        let name = gateway.family == .ipv4 ? ipv4UnicastInterface : ipv6UnicastInterface
        guard setsockopt(socket.rawValue, level, name, &link, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw SystemError("setsockopt UNICAST_IF \(index)")
        }
        // A link-local gateway (IPv6 routers are) is named with its link as the scope.
        let scope = gateway.isLinkLocal ? UInt32(bitPattern: index) : 0
        let sent = gateway.withSocketAddress(port: discardPort, scope: scope) { address, length in
            sendto(socket.rawValue, nil, 0, Int32(MSG_DONTWAIT), address, length)
        }
        guard sent >= 0 else { throw SystemError("sendto \(gateway) on \(index)") }
    }
}
