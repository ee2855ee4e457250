import CNetlink
import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// Tracks bus peers (sd_bus_track): `onGone` runs once every peer added has left the bus.
/// reachd keeps one per client, so a client's watches die with it.
public final class BusTrack {
    private var track: OpaquePointer?
    private let handler: ReplyHandler

    public init(bus: BusConnection, onGone: @escaping () -> Void) throws(BusError) {
        handler = ReplyHandler { _, _ in onGone() }
        var track: OpaquePointer?
        let context = Unmanaged.passUnretained(handler).toOpaque()
        let result = sd_bus_track_new(bus.bus, &track, { _, context in
            guard let context else { return 0 }
            Unmanaged<ReplyHandler>.fromOpaque(context).takeUnretainedValue().body(nil, nil)
            return 0
        }, context)
        guard result >= 0, let track else { throw BusError("track a bus peer", code: result) }
        self.track = track
    }

    deinit { if let track { sd_bus_track_unref(track) } }

    /// Tracks the sender of `message`.
    public func add(senderOf message: BusMessage) throws(BusError) {
        let result = sd_bus_track_add_sender(track, message.pointer)
        guard result >= 0 else { throw BusError("track the caller", code: result) }
    }
}

/// sd_notify(3): tells the service manager about readiness and status. Without NOTIFY_SOCKET
/// it does nothing, so the daemon runs the same under systemd and by hand.
public enum ServiceManager {
    @discardableResult
    public static func notify(_ state: String) -> Bool {
        sd_notify(0, state) > 0
    }

    /// The file descriptors systemd passed (socket units: LISTEN_FDS/LISTEN_PID naming this
    /// process), from fd 3 on, each with its name (`FileDescriptorName=`, by default the socket
    /// unit's name; "unknown" when LISTEN_FDNAMES is unset); empty when none. The variables are
    /// cleared, so children do not inherit them. What they are is for the caller to check.
    public static func listenedDescriptors() -> [(descriptor: Int32, name: String)] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        guard count > 0 else { return [] }
        defer {
            for index in 0..<Int(count) { free(names?[index]) }
            free(names)
        }
        return (0..<count).map { index in
            (SD_LISTEN_FDS_START + index, names?[Int(index)].map { String(cString: $0) } ?? "unknown")
        }
    }

    /// Whether `descriptor` is a listening stream socket (sd_is_socket), as a socket unit's
    /// `ListenStream=` passes.
    public static func isListeningStreamSocket(_ descriptor: Int32) -> Bool {
        sd_is_socket(descriptor, AF_UNSPEC, Int32(SOCK_STREAM.rawValue), 1) > 0
    }
}
