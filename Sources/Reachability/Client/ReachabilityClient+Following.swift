import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// Following reachd across its restarts and the bus's (`followsService`): a subscriber that
/// outlives them instead of ending with them.
extension ReachabilityClient {
    /// How long to wait between attempts to connect to a bus that went away: a client's own
    /// retry, cheap, and quick enough that a restarted dbus-daemon is found within a second.
    package static let reconnectInterval: Duration = .seconds(1)

    /// Drops what belonged to the reachd that left: its signal matches and our watches (they
    /// died with it).
    package func forgetService() {
        slots = []
        owner = nil
        watches = [:]
        paths = [:]
        sendsUpdates = false
        lastUpdated = 0
        serviceSlot = nil
        described = []
    }

    /// The bus connection failed: forgets it and schedules a new one. Returns whether a reachd was
    /// being followed (then its loss is news).
    package func disconnect() -> Bool {
        let hadService = owner != nil
        forgetService()
        // Slots hold references on the connection: drop them before it.
        nameSlot = nil
        activation = nil
        reconnectAt = .now + Self.reconnectInterval
        return hadService
    }

    /// Connects to the bus again when the time has come. Returns whether connected; then, when
    /// reachd is already there, the client is subscribed to it (`owner` set).
    package func reconnectIfDue() -> Bool {
        guard let due = reconnectAt, ContinuousClock.now >= due else { return reconnectAt == nil }
        do {
            connection = try BusConnection(address, description: "reachability-client")
            reconnectAt = nil
            guard subscribed else { return true }
            try followName()
            do {
                try subscribe(to: try nameOwner())
            } catch where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                activate()
            }
            return true
        } catch {
            _ = disconnect()
            return false
        }
    }

    /// Asks the bus to start reachd where it is installed for D-Bus activation. Never waits: the
    /// answer is of no interest (ServiceUnknown where it is not), reachd taking its name is.
    package func activate() {
        activation = try? connection.callAsync(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "StartServiceByName"
        ) { message throws(BusError) in
            try message.append(ReachdContract.busName)
            try message.append(UInt32(0))
        } reply: { _ in }
    }

    /// Waits up to `timeout` for `descriptor` (when given) to become readable; whether it did.
    package static func wait(timeout: Duration, orReadable descriptor: Int32?) -> Bool {
        var fds = descriptor.map { [pollfd(fd: $0, events: Int16(POLLIN), revents: 0)] } ?? []
        return poll(&fds, nfds_t(fds.count), Int32(clamping: timeout.millisecondsRoundedUp)) > 0
    }
}
