#if canImport(Glibc)
import Glibc
#endif

/// Asks the kernel which route it would use for one destination (RTM_GETROUTE with RTA_DST).
/// The reply is queued before `send` returns, so a lookup costs two system calls and never waits;
/// a poll bounded to a few milliseconds guards against a kernel that would ever differ.
final class RouteQuery {
    private let socket: NetlinkSocket
    private var sequence: UInt32 = 0
    private var buffer = [UInt8](repeating: 0, count: 16 << 10)

    init(namespacePath: String?) throws(SystemError) {
        socket = try NetlinkSocket(nonBlocking: true, namespacePath: namespacePath)
    }

    /// `uid`: the user whose traffic is routed (nil: this process's own uid, as `ip route get`).
    func lookup(_ destination: IPAddress, outputInterface: Int32? = nil, uid: UInt32? = nil) throws(SystemError) -> RouteLookup {
        sequence &+= 1
        if sequence == 0 { sequence = 1 }
        try socket.send(NetlinkRequest.routeLookup(destination: destination, outputInterface: outputInterface, uid: uid, sequence: sequence))
        var waits = 0
        while true {
            switch try socket.receive(into: &buffer) {
            case .wouldBlock:
                waits += 1
                guard waits <= 5 else { throw SystemError("route lookup for \(destination)", errno: ETIMEDOUT) }
                var descriptor = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, 1)
            case .foreign:
                continue
            case let .datagram(count, _):
                let batch = buffer.withUnsafeBytes {
                    NetlinkDecoder.decode(UnsafeRawBufferPointer(rebasing: $0[..<min(count, $0.count)]), acceptClonedRoutes: true)
                }
                for decoded in batch.messages where decoded.header.sequence == sequence {
                    switch decoded.message {
                    case let .route(route): return .route(route)
                    case let .error(code) where code < 0: return .failed(errno: -code)
                    default: continue
                    }
                }
                // A stale reply to an earlier, abandoned lookup: keep reading for ours.
            }
        }
    }
}
