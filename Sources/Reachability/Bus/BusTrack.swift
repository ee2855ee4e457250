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
