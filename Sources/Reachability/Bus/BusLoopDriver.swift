import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// Runs a `BusConnection` on an `EventLoop` in place of sd_bus_attach_event, for two reasons:
/// - sd-bus's own attachment logs the error that ends a connection at debug level only and then
///   quits the loop without a word; here that error reaches `onLoss`, so the log names the cause.
/// - While the broker does not read (a stalled dbus-daemon), every signal would wait in sd-bus's
///   write queue, which grows without bound. Past `holdBackAbove` queued messages a signal is
///   held back instead, at most one per path, interface and member (the latest replaces the one
///   held; PropertiesChanged names are merged), and sent once the queue is under the bound
///   again. Memory then grows with the number of objects, not with the number of changes.
///   Method replies are never held back.
package final class BusLoopDriver {
    /// Queued outgoing messages past which signals are held back. One change sends a few host
    /// signals and one PropertiesChanged per watch that changed; the socket buffer takes about
    /// a thousand before anything queues at all, so a broker that merely lags never sees a
    /// signal held back, and a stalled one costs at most this many messages plus one per object.
    package static let holdBackAbove: UInt64 = 256

    private unowned let connection: BusConnection
    private var io: EventSource?
    private var timer: EventSource?
    private let loop: EventLoop
    private let onLoss: (String) -> Void
    package private(set) var isLost = false
    /// Why the connection ended, learnt from its socket before sd-bus closed it.
    private var cause: String?

    /// What is held back, by key, and the order to send it in (oldest key first).
    private var held: [Key: Held] = [:]
    private var order: [Key] = []

    package enum Key: Hashable {
        case signal(path: String, interface: String, member: String)
        case properties(path: String, interface: String)
    }

    package enum Held {
        /// A built signal; the driver holds one reference.
        case message(OpaquePointer)
        /// Property names, in the order first given; their values are read when sent.
        case properties([String])
    }

    package init(_ connection: BusConnection, loop: EventLoop, onLoss: @escaping (String) -> Void) throws(BusError) {
        self.connection = connection
        self.loop = loop
        self.onLoss = onLoss
        let fd = sd_bus_get_fd(connection.bus)
        guard fd >= 0 else { throw BusError("get the bus connection's descriptor", code: fd) }
        do {
            let io = try loop.watch(fd: fd, events: []) { [unowned self] _ in self.process() }
            timer = try loop.timer(at: 0) { [unowned self] in self.process() }
            try io.onPrepare { [unowned self] in self.prepare() }
            self.io = io
        } catch {
            throw BusError("attach the bus to the event loop", code: -error.errno)
        }
    }

    deinit {
        io?.cancel()
        timer?.cancel()
        for case let .message(message) in held.values { sd_bus_message_unref(message) }
    }

    /// Whether a signal is to be held back: the queue is over the bound, or older signals are
    /// still held (sending this one first would reorder them).
    package var holdsSignals: Bool { !order.isEmpty || isBackedUp }

    /// Whether a signal sent now would only lengthen a queue the broker is not reading.
    private var isBackedUp: Bool {
        var queued: UInt64 = 0
        return sd_bus_get_n_queued_write(connection.bus, &queued) >= 0 && queued > Self.holdBackAbove
    }

    /// Holds a built signal back (taking a reference), replacing the one held for its key.
    package func hold(_ message: OpaquePointer, key: Key) {
        sd_bus_message_ref(message)
        if case let .message(previous)? = held[key] { sd_bus_message_unref(previous) } else { order.append(key) }
        held[key] = .message(message)
    }

    /// Holds PropertiesChanged back for `names`, merged with those already held for the object.
    package func holdProperties(path: String, interface: String, names: [String]) {
        let key = Key.properties(path: path, interface: interface)
        if case let .properties(previous)? = held[key] {
            held[key] = .properties(previous + names.filter { !previous.contains($0) })
        } else {
            order.append(key)
            held[key] = .properties(names)
        }
    }

    /// Before every poll: what sd-bus waits for (input, output once its queue has something,
    /// a reply's timeout, or at once when messages are already read but not dispatched), as
    /// sd-bus's own attachment does; and what was held back, if the queue has room again.
    private func prepare() {
        guard !isLost else { return }
        sendHeld()
        let events = sd_bus_get_events(connection.bus)
        guard events >= 0 else { return lose(BusError("ask the bus what it waits for", code: events)) }
        io?.setEvents(IOEvents(rawValue: UInt32(events)))
        var until: UInt64 = 0
        if sd_bus_get_timeout(connection.bus, &until) > 0 { timer?.schedule(at: until) } else { timer?.disable() }
    }

    /// One step of sd-bus's work per wakeup, as its own attachment does, so a flood of calls
    /// cannot starve netlink; `prepare` arms the timer at once while more is pending.
    private func process() {
        guard !isLost else { return }
        let result = sd_bus_process(connection.bus, nil)
        if result < 0 { return lose(BusError("read or write the bus connection", code: result)) }
        // sd-bus takes a disconnection (ECONNRESET, EPIPE...) as the start of its own close and
        // keeps the errno to itself; the socket still tells why until sd-bus closes it next call.
        if cause == nil, sd_bus_is_open(connection.bus) == 0 { cause = Self.diagnose(sd_bus_get_fd(connection.bus)) }
    }

    /// Why the connection on `fd` ended: its pending error, or a hang-up (the peer closed it).
    private static func diagnose(_ fd: Int32) -> String? {
        guard fd >= 0 else { return nil }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error != 0 {
            return explain(BusError(name: "System.Error.\(error)", message: String(cString: strerror(error))))
        }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&entry, 1, 0) > 0, entry.revents & Int16(POLLHUP) != 0 {
            // What sd-bus itself reports for end-of-file on the bus socket.
            return explain(BusError(name: "System.Error.\(ECONNRESET)", message: String(cString: strerror(ECONNRESET))))
        }
        return nil
    }

    private func sendHeld() {
        var sent = 0
        defer { order.removeFirst(sent) }
        while sent < order.count, !isBackedUp {
            let key = order[sent]
            sent += 1
            guard let entry = held.removeValue(forKey: key) else { continue }
            switch (entry, key) {
            case let (.message(message), _):
                sd_bus_send(connection.bus, message, nil)
                sd_bus_message_unref(message)
            case let (.properties(names), .properties(path, interface)):
                connection.sendPropertiesChanged(path: path, interface: interface, names: names)
            case (.properties, .signal):
                break
            }
        }
    }

    private func lose(_ error: BusError) {
        isLost = true
        io?.cancel()
        timer?.cancel()
        onLoss(cause ?? Self.explain(error))
        loop.exit(code: 1)
    }

    /// The error, and what it means when it is the usual one.
    package static func explain(_ error: BusError) -> String {
        switch error.name {
        case "System.Error.\(ECONNRESET)", "System.Error.\(EPIPE)":
            "the connection was closed by the other end (dbus-daemon stopped or restarted, or it dropped this client): \(error.message)"
        case "System.Error.\(EBADMSG)":
            "\(error.message): the bus daemon sent a malformed message"
        default:
            error.message
        }
    }
}
