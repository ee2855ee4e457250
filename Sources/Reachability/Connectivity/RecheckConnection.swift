import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection opened while a link is stalled, toward a destination the host's own
/// failing connections were trying (`StallRecheck`), and left alone until the next poll closes
/// it. Nothing is read or written and nothing waits on it: the kernel's SYN is the whole check.
/// If the path came back, the next poll finds it established, a receive of the host's own that
/// clears the stall; if not, it is one more connection unanswered. Connections deep in
/// exponential back-off would otherwise show a return only at their next retransmission, up to
/// a minute later.
package final class RecheckConnection {
    private let descriptor: Descriptor

    /// nil when the socket cannot even be made (the source address is gone, say): nothing to check.
    package init?(_ recheck: StallRecheck) {
        let family = recheck.destination.family == .ipv4 ? AF_INET : AF_INET6
        let fd = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        descriptor = Descriptor(fd)
        // From the failing connection's own address, so the kernel routes it the same way.
        guard recheck.source.family == recheck.destination.family,
            recheck.source.withSocketAddress(port: 0, { bind(fd, $0, $1) }) == 0
        else { return nil }
        let connected = recheck.destination.withSocketAddress(port: recheck.port) { connect(fd, $0, $1) }
        guard connected == 0 || errno == EINPROGRESS else { return nil }
    }
}
