import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// What systemd passed at start, sorted: reachd-metrics.socket's listening sockets (named
/// "metrics" by `FileDescriptorName=`) and reachd.socket's one rtnetlink socket. Anything else
/// (a drop-in gone wrong) is closed, and reachd then watches through a socket of its own, as
/// when started by hand. Taken first thing, before reachd opens a descriptor of its own: a
/// number systemd names but never passed (LISTEN_FDS past what is open) is dropped unclosed, so
/// no later close can hit a descriptor reachd opened under that number since.
struct PassedSockets {
    var metrics: [Int32] = []
    var netlink: Int32?

    static func take() -> PassedSockets {
        // Read first: the call below unsets it.
        let said = getenv("LISTEN_FDS").map { String(cString: $0) } ?? ""
        let passed: [(descriptor: Int32, name: String)]
        do {
            passed = try ServiceManager.listenedDescriptors()
        } catch {
            // LISTEN_FDS names a descriptor that is not open (a wrapper closed it): none is taken.
            Log.warning("systemd's LISTEN_FDS=\(said) names descriptors reachd was not given (\(error)): taking none, opening its own")
            return PassedSockets()
        }
        var sockets = PassedSockets()
        // A metrics descriptor that is no listening socket is closed now, while its number is
        // still the one systemd passed.
        for (descriptor, name) in passed where name == MetricsEndpoint.socketName {
            guard ServiceManager.isListeningStreamSocket(descriptor) else {
                Log.warning("metrics: systemd passed file descriptor \(descriptor) named \(name), not a listening stream socket: closing it")
                Descriptor(descriptor).close()
                continue
            }
            sockets.metrics.append(descriptor)
        }
        switch passed.filter({ $0.name != MetricsEndpoint.socketName }).map(\.descriptor) {
        case []: break
        case let descriptors where descriptors.count == 1 && isRouteNetlinkSocket(descriptors[0]):
            sockets.netlink = descriptors[0]
        case let descriptors:
            let what = descriptors.count == 1 ? "file descriptor \(descriptors[0]), not an rtnetlink socket" : "\(descriptors.count) sockets"
            Log.warning("systemd passed \(what); expected one rtnetlink socket (reachd.socket): ignoring it, opening a netlink socket of its own")
            for descriptor in descriptors { Descriptor(descriptor).close() }
        }
        return sockets
    }

    /// One line for the journal: how big the netlink receive buffer is, and why.
    static func bufferReport(_ granted: Int, asked: Int, adopted: Bool) -> String {
        let size = "netlink: receive buffer \(granted / 1024) KiB"
        if adopted { return size + " (socket from reachd.socket, sized by systemd)" }
        // The kernel reports twice what it granted; less than twice the request means clamped.
        if granted >= 2 * asked { return size + " (own socket, SO_RCVBUFFORCE)" }
        return size + " (own socket, clamped to net.core.rmem_max: start reachd through reachd.socket for a larger one)"
    }
}
