import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// A synchronous client of reachd (`org.reachd.Reachability1`), for command-line tools and
/// programs with a loop of their own.
///
/// ```swift
/// let client = try ReachabilityClient(bus: .system)
/// let snapshot = try client.snapshot()
/// let answer = try client.check("example.org", timeout: .seconds(2))
/// try client.subscribe()
/// while true {
///     for event in try client.nextEvents(timeout: nil) { ... }
/// }
/// ```
/// Every call waits at most `timeout` for its reply (host checks: their own deadline plus a
/// margin). Like the `BusConnection` under it, a client belongs to one thread at a time; it may
/// be handed to another thread between uses. Signals that arrive during a call are kept and
/// delivered by the next `dispatch()`.
public final class ReachabilityClient {
    private typealias Contract = ReachdContract

    /// How much longer than a host check's own deadline its call may take (bus round trips).
    public static let checkCallMargin: Duration = .milliseconds(500)

    /// Something the service told us without being asked.
    public enum Event: Hashable, Sendable {
        /// The `Changed` signal: derived state changed and is now at `generation`.
        case changed(flags: ReachabilityFlags, primaryInterface: String, generation: UInt64)
        /// The `InterfacesChanged` signal: an interface changed (the host's answer did not, or
        /// `changed` came too) and derived state is now at `generation`.
        case interfacesChanged(generation: UInt64)
        /// The `HostChangeDescribed` signal, right after `changed` of the same generation: what
        /// the host change changed and whether sockets must be rebound.
        case hostChangeDescribed(HostChange, generation: UInt64)
        /// A watch of ours (`watch(_:)`) has a new answer.
        case watch(path: String, result: CheckResult)
        /// A path watch of ours (`watchPath(_:)`) has a new answer.
        case path(path: String, value: Path)
        /// reachd left the bus (stopped or crashed), or the bus connection was lost. Its watches
        /// are gone. Unless the client `followsService`, a new client must be made once it is back.
        case serviceLost
        /// reachd is on the bus again (`followsService` only): the client is subscribed to it,
        /// its watches are still gone (make them anew), its generation counts from its start.
        case serviceReturned
        /// The snapshot followed (`followSnapshot()`) moved: the change, from the signals of one
        /// generation, or from one read when they do not link it to the last (a missed signal,
        /// reachd back after a restart). The snapshot is `followed`'s after it.
        case change(ReachabilityChange)
    }

    /// The bus connection; a new one after the bus came back (`followsService`), and at its
    /// first use when it was made more than `setUpWindow` before and is not yet set up. Its
    /// set-up goes out behind the first call (a round trip fewer for `reachctl is`): sd-bus
    /// says Hello only once it reads the broker's answer to its authentication, and dbus-daemon
    /// drops a connection that has not said Hello within its auth_timeout (30 s by default, as
    /// on the system bus), so a client made at a program's start and first asked later failed
    /// that call ("Connection terminated"). Decided once, at the first use: whoever holds the
    /// connection (a client thread polling its descriptor) holds the one that stays.
    package internal(set) var connection: BusConnection {
        get {
            if !handedOut {
                handedOut = true
                if ContinuousClock.now - made > setUpWindow, !current.isReady,
                    let fresh = try? BusConnection(address, description: "reachability-client")
                {
                    current = fresh
                }
            }
            return current
        }
        set { (current, handedOut) = (newValue, true) }
    }
    private var current: BusConnection
    private let made = ContinuousClock.now
    private var handedOut = false
    /// Well inside dbus-daemon's 30 s; tests shorten it.
    package var setUpWindow: Duration = .seconds(5)
    /// Where `connection` leads, to connect again.
    package let address: BusAddress
    /// Whether the client outlives reachd and the bus: after `serviceLost` it keeps listening for
    /// reachd's name, asks the bus to activate it, and reconnects to a bus that went away. Off by
    /// default (`dispatch()` then throws when the bus fails, and a lost reachd stays lost).
    public var followsService = false
    /// Set while the bus connection is lost (`followsService`): when to try to connect again.
    package var reconnectAt: ContinuousClock.Instant?
    /// The NameOwnerChanged match of this connection, made by the first `subscribe()`.
    package var nameSlot: BusSlot?
    /// The pending StartServiceByName call (activation) while reachd is away.
    package var activation: BusSlot?
    /// How long a call waits for its reply.
    public var timeout: Duration

    /// What the signal handlers queued, for `dispatch()` to finish and hand out.
    package let inbox = Inbox()
    /// The signal matches of the reachd we follow (its unique name as sender).
    package var slots: [BusSlot] = []
    /// Whether `subscribe()` was asked for (it stays asked while reachd is away).
    package var subscribed = false
    /// The unique bus name of the reachd we talk to, once subscribed; nil while it is away.
    package var owner: String?
    /// Our watches and their last known answers.
    package var watches: [String: CheckResult] = [:]
    /// Our path watches and their last known answers.
    package var paths: [String: Path] = [:]
    /// The snapshot kept from the signals since `followSnapshot()`; nil before.
    public internal(set) var followed: ReachabilitySnapshot?
    /// Whether reachd sends `Updated` (seen once): its other signals of a generation then say
    /// nothing new, and are matched no more.
    package var sendsUpdates = false
    /// The last `Updated` applied: one delivered twice (while the match narrows) is told once.
    package var lastUpdated: UInt64 = 0
    /// The match for the service object's signals: all of them, then `Updated` alone.
    package var serviceSlot: BusSlot?
    /// From a reachd without `Updated`: the HostChangeDescribed of the generation in flight.
    package var described: [HostChange] = []
    /// The whole picture the probe's GetStatus carried (`ReachdOrInProcess.probe`), and when:
    /// the first `snapshot()` asked within `probeReuse` of it answers with it instead of asking
    /// again (`reachctl status` makes one call, not two).
    package var probed: (snapshot: ReachabilitySnapshot, at: ContinuousClock.Instant)?
    package static let probeReuse: Duration = .milliseconds(100)

    /// Connects to `bus`. Does not talk to reachd yet: the first call does (use `status()` as
    /// a probe). Throws when the bus itself cannot be reached.
    public init(bus: BusAddress, timeout: Duration = .milliseconds(500)) throws(BusError) {
        current = try BusConnection(bus, description: "reachability-client")
        address = bus
        self.timeout = timeout
    }

    // MARK: watches

    /// `Watch`: asks reachd to follow `target` and returns the watch's object path. Its answers
    /// arrive as `Event.watch` after `subscribe()` (called here when it was not yet). An invalid
    /// target throws the InvalidTarget error; over the limits, LimitExceeded.
    ///
    /// A host watch has no answer until its first resolution: `answer(ofWatch:)` is then
    /// `isPending`, and the first real answer arrives as an event.
    public func watch(_ target: String) throws(BusError) -> String {
        try subscribe()
        let reply = try call("Watch") { message throws(BusError) in try message.append(target) }
        let path = try reply.message.readObjectPath()
        watches[path] = CheckResult(target: target, addresses: Self.addresses(ofTarget: target))
        try refresh(watch: path)
        return path
    }

    /// `Unwatch`: stops a watch of ours.
    public func unwatch(_ path: String) throws(BusError) {
        watches.removeValue(forKey: path)
        paths.removeValue(forKey: path)
        _ = try call("Unwatch") { message throws(BusError) in try message.append(objectPath: path) }
    }

    /// The last known answer of a watch of ours.
    public func answer(ofWatch path: String) -> CheckResult? { watches[path] }

    /// Whether a watch's answer is still unknown: not reachable and no reason yet (a host watch
    /// before its first resolution). Every real negative answer carries a reason.
    public static func isPending(_ result: CheckResult) -> Bool {
        !result.isReachable && result.reason == nil
    }

    // MARK: events

    /// Starts receiving `Changed`, the PropertiesChanged of our watches, and reachd leaving the
    /// bus. Idempotent. Matches name reachd's unique bus name, so nobody else's signals count.
    public func subscribe() throws(BusError) {
        guard !subscribed else { return }
        // A snapshot to follow is read after the matches are made, or a change between is lost.
        probed = nil
        try followName()
        try subscribe(to: try nameOwner())
        subscribed = true
    }

    /// The unique bus name that owns reachd's name now (NameHasNoOwner when none does).
    package func nameOwner() throws(BusError) -> String {
        let reply = try connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetNameOwner", timeout: timeout
        ) { message throws(BusError) in try message.append(Contract.busName) }
        return try reply.message.readString()
    }

    /// Listens for owners of reachd's name coming and going, once per connection. Made before
    /// the owner is asked, so that no change between the two goes unseen.
    package func followName() throws(BusError) {
        guard nameSlot == nil else { return }
        // The match is added synchronously: bounded by the client's timeout, not sd-bus's own.
        try connection.waitUntilReady(timeout: timeout)
        let inbox = self.inbox
        nameSlot = try connection.addMatch(
            "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
                + "member='NameOwnerChanged',arg0='\(Contract.busName)'"
        ) { message in
            _ = try? message.readString()
            guard let old = try? message.readString(), let new = try? message.readString() else { return }
            inbox.append(.ownerChanged(old: old, new: new))
        }
    }

    /// Matches the signals of the reachd whose unique bus name is `owner`, so nobody else's count.
    package func subscribe(to owner: String) throws(BusError) {
        let inbox = self.inbox
        var slots: [BusSlot] = []
        // One match for every signal of the service object (its own and its PropertiesChanged):
        // one AddMatch round trip instead of one per member, narrowed to `Updated` once seen.
        serviceSlot = try connection.addMatch("type='signal',sender='\(owner)',path='\(Contract.objectPath)'") { message in
            Self.readServiceSignal(message, into: inbox)
        }
        slots.append(try connection.addMatch(
            "type='signal',sender='\(owner)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                + "path_namespace='\(Contract.watchPathNamespace)',arg0='\(Contract.watchInterface)'"
        ) { message in
            guard let path = message.path, let properties = try? Self.readPropertiesChanged(message) else { return }
            inbox.append(.watch(path: path, properties: properties.changed, invalidated: properties.invalidated))
        })
        slots.append(try connection.addMatch(
            "type='signal',sender='\(owner)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                + "path_namespace='\(Contract.watchPathNamespace)',arg0='\(Contract.pathInterface)'"
        ) { message in
            // The values are read when applied, onto the path last known.
            guard let path = message.path, (try? message.readString()) != nil else { return }
            inbox.append(.pathChanged(path: path, properties: OwnedBusMessage(retaining: message)))
        })
        self.slots = slots
        self.owner = owner
    }

    /// Handles everything the bus has queued and returns the events, in order. Never waits.
    /// Throws when the connection failed (then the service is as good as lost), unless the client
    /// `followsService`: then it says `serviceLost` and connects again later.
    public func dispatch() throws(BusError) -> [Event] {
        var events: [Event] = []
        do {
            try dispatch(into: &events)
        } catch {
            guard followsService else { throw error }
            // The connection failed, or reachd in the middle of an answer: start over on a new
            // connection. What is still queued is stale.
            _ = inbox.take()
            if disconnect() { events.append(.serviceLost) }
        }
        return events
    }

    private func dispatch(into events: inout [Event]) throws(BusError) {
        if reconnectAt != nil {
            guard reconnectIfDue() else { return }
            if owner != nil {
                events.append(.serviceReturned)
                try rereadAfterReturn(into: &events)
            }
        }
        while try connection.process() {}
        for raw in inbox.take() {
            switch raw {
            case let .updated(owned):
                if !sendsUpdates { narrowToUpdates() }
                try apply(updated: owned.message, into: &events)
            case .event, .interfaces, .generationEnded:
                if !sendsUpdates { try record(raw, into: &events) }
            case let .ownerChanged(old, new):
                if let owner, old == owner {
                    forgetService()
                    events.append(.serviceLost)
                    if followsService { activate() }
                }
                if followsService, subscribed, owner == nil, !new.isEmpty {
                    try subscribe(to: new)
                    activation = nil
                    events.append(.serviceReturned)
                    try rereadAfterReturn(into: &events)
                }
            case let .watch(path, properties, invalidated):
                guard var result = watches[path] else { continue }
                Self.apply(properties, to: &result)
                watches[path] = result
                if !invalidated.isEmpty { try refresh(watch: path) }
                if let result = watches[path] { events.append(.watch(path: path, result: result)) }
            case let .pathChanged(path, properties):
                guard paths[path] != nil else { continue }
                try apply(properties.message, toPath: path)
                if let value = paths[path] { events.append(.path(path: path, value: value)) }
            }
        }
    }

    /// Waits until the bus has something to process, `timeout` passes (nil: no limit), or
    /// `descriptor` (for example a `WakeUpPipe` another thread signals to wake this one) becomes
    /// readable. Returns whether `descriptor` did.
    @discardableResult
    public func wait(timeout: Duration?, orReadable descriptor: Int32? = nil) throws(BusError) -> Bool {
        if let reconnectAt {
            // No bus to wait on: only the descriptor, until the next attempt to connect.
            let untilAttempt = max(.zero, reconnectAt - .now)
            return Self.wait(timeout: timeout.map { min($0, untilAttempt) } ?? untilAttempt, orReadable: descriptor)
        }
        let events = sd_bus_get_events(connection.bus)
        // A connection that failed: the next `dispatch()` finds out, and says so when following.
        guard events >= 0 else {
            if followsService { return false }
            throw BusError("get the bus's poll events", code: events)
        }
        var fds = [pollfd(fd: connection.fileDescriptor, events: Int16(events), revents: 0)]
        if let descriptor { fds.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)) }
        var milliseconds: Int64 = timeout.map(\.millisecondsRoundedUp) ?? -1
        var busDeadline: UInt64 = 0
        if sd_bus_get_timeout(connection.bus, &busDeadline) >= 0, busDeadline != UInt64.max {
            let nowMicroseconds = SystemClock.monotonicMicroseconds()
            let busMilliseconds = busDeadline > nowMicroseconds ? Int64((busDeadline - nowMicroseconds + 999) / 1000) : 0
            milliseconds = milliseconds < 0 ? busMilliseconds : min(milliseconds, busMilliseconds)
        }
        let ready = poll(&fds, nfds_t(fds.count), Int32(clamping: milliseconds))
        guard ready >= 0 || errno == EINTR else { throw BusError("wait for the bus", code: -errno) }
        return ready > 0 && fds.count > 1 && fds[1].revents != 0
    }

    /// `dispatch()`, and when nothing was queued, waits up to `timeout` (nil: no limit) and
    /// dispatches again. May return no events (timeout, or bus traffic that was not for us).
    public func nextEvents(timeout: Duration?) throws(BusError) -> [Event] {
        let events = try dispatch()
        guard events.isEmpty else { return events }
        try wait(timeout: timeout)
        return try dispatch()
    }

    // MARK: internals

    package func call(
        _ member: String, timeout: Duration? = nil, _ build: (BusMessage) throws(BusError) -> Void = { _ in }
    ) throws(BusError) -> OwnedBusMessage {
        try connection.call(
            destination: owner ?? Contract.busName, path: Contract.objectPath, interface: Contract.interface,
            member: member, timeout: timeout ?? self.timeout, build)
    }

    /// Whether reachd's loop still answers: `org.freedesktop.DBus.Peer.Ping`, which sd-bus answers
    /// on reachd's loop without reading any state (a hung loop leaves it unanswered). Asks nothing
    /// of the reachability interface, so a client that follows signals makes no call about them.
    public func ping() throws(BusError) {
        _ = try connection.call(
            destination: owner ?? Contract.busName, path: Contract.objectPath, interface: "org.freedesktop.DBus.Peer",
            member: "Ping", timeout: timeout)
    }

    /// Reads a watch's properties anew (GetAll), replacing what we knew.
    private func refresh(watch path: String) throws(BusError) {
        let reply = try connection.call(
            destination: owner ?? Contract.busName, path: path, interface: "org.freedesktop.DBus.Properties",
            member: "GetAll", timeout: timeout
        ) { message throws(BusError) in try message.append(Contract.watchInterface) }
        let properties = try Self.readProperties(reply.message)
        guard var result = watches[path] else { return }
        Self.apply(properties, to: &result)
        watches[path] = result
    }

    /// What a signal handler saw, before `dispatch()` makes events of it.
    package enum RawEvent {
        /// `Updated`, read when applied.
        case updated(OwnedBusMessage)
        /// From a reachd without `Updated`: a signal that is an event as it stands (`changed`,
        /// `hostChangeDescribed`), InterfacesChanged's arguments, and the service object's
        /// PropertiesChanged, which ends a generation.
        case event(Event)
        case interfaces(changed: [InterfaceStatus], removed: [String], generation: UInt64)
        case generationEnded
        case watch(path: String, properties: WatchProperties, invalidated: [String])
        case pathChanged(path: String, properties: OwnedBusMessage)
        /// NameOwnerChanged for reachd's name: `old` left it, `new` took it (empty: nobody).
        case ownerChanged(old: String, new: String)
    }

    /// Filled by signal handlers (inside `process()`), emptied by `dispatch()`: same thread.
    package final class Inbox {
        private var events: [RawEvent] = []
        package func append(_ event: RawEvent) { events.append(event) }
        package func take() -> [RawEvent] {
            defer { events = [] }
            return events
        }
    }
}
