#if canImport(Glibc)
import Glibc
#endif

/// Asks the kernel which route it would use for one destination (RTM_GETROUTE with RTA_DST).
/// The reply is queued before `send` returns, so a lookup costs two system calls and never waits;
/// a poll bounded to a few milliseconds guards against a kernel that would ever differ.
package final class RouteQuery {
    private let socket: NetlinkSocket
    private var sequence: UInt32 = 0
    private var buffer = [UInt8](repeating: 0, count: 16 << 10)

    package init(namespacePath: String?) throws(SystemError) {
        socket = try NetlinkSocket(nonBlocking: true, namespacePath: namespacePath)
    }

    /// `uid`: the user whose traffic is routed (nil: this process's own uid, as `ip route get`).
    package func lookup(_ destination: IPAddress, outputInterface: Int32? = nil, uid: UInt32? = nil) throws(SystemError) -> RouteLookup {
        let sequence = nextSequence()
        let request = NetlinkRequest.routeLookup(destination: destination, outputInterface: outputInterface, uid: uid, sequence: sequence)
        switch try ask(request, sequence: sequence, what: "route lookup for \(destination)") {
        case let .route(route): return .route(route)
        case let .error(code): return .failed(errno: -code)
        default: return .failed(errno: EPROTO)
        }
    }

    /// The link with `index` (RTM_GETLINK for one link, answered at once as a route lookup is);
    /// nil when there is none. For a namespace reachd does not follow (a unit's own).
    package func link(_ index: Int32) throws(SystemError) -> Link? {
        let sequence = nextSequence()
        var request = NetlinkRequest.header(type: RT.getLink, flags: RT.flagRequest, sequence: sequence, bodyLength: NetlinkDecoder.linkHeaderSize)
        // struct ifinfomsg: family, pad, type u16, index i32, flags u32, change u32.
        request += [0, 0, 0, 0]
        NetlinkRequest.append(index, to: &request)
        request += [UInt8](repeating: 0, count: 8)
        if case let .link(link) = try ask(request, sequence: sequence, what: "link \(index)") { return link }
        return nil
    }

    private func nextSequence() -> UInt32 {
        sequence &+= 1
        if sequence == 0 { sequence = 1 }
        return sequence
    }

    /// Sends `request` and returns the kernel's answer to it: the first message of its sequence
    /// that is a route, a link or an error.
    private func ask(_ request: [UInt8], sequence: UInt32, what: String) throws(SystemError) -> RoutingMessage {
        try socket.send(request)
        var waits = 0
        while true {
            switch try socket.receive(into: &buffer) {
            case .wouldBlock:
                waits += 1
                guard waits <= 5 else { throw SystemError(what, errno: ETIMEDOUT) }
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
                    case .route, .link: return decoded.message
                    case let .error(code) where code < 0: return decoded.message
                    default: continue
                    }
                }
                // A stale reply to an earlier, abandoned lookup: keep reading for ours.
            }
        }
    }
}
