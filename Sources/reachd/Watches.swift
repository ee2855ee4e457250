import Reachability

/// The watches of all clients, with their limits. A client's watches die with it (sd_bus_track).
/// Limits hold per connection, per Unix user (learnt from the bus without blocking, through the
/// daemon's `CallerIdentities`) and in all. Each watch answers as its owner's traffic is routed.
final class WatchRegistry {
    private let core: ReachabilityCore
    private let bus: BusConnection
    private let callers: CallerIdentities
    private unowned let metrics: DaemonMetrics
    private var limits: (perClient: Int, perUser: Int, total: Int)
    private var watches: [String: Watch] = [:]
    /// Every client that asked for a watch: its tracking, its watches, and its Unix user once known.
    private var clients: [String: Client] = [:]
    /// Watches held per Unix user.
    private var perUser: [UInt32: Int] = [:]
    private var nextID: UInt64 = 0
    /// The distinct targets the watches share, and when each is asked.
    private let targets: WatchTargets

    private struct Client {
        var track: BusTrack
        var paths: Set<String> = []
    }

    init(
        core: ReachabilityCore, bus: BusConnection, callers: CallerIdentities, loop: EventLoop, metrics: DaemonMetrics,
        configuration: Configuration
    ) {
        self.core = core
        self.bus = bus
        self.callers = callers
        self.metrics = metrics
        targets = WatchTargets(core: core, bus: bus, loop: loop)
        limits = (0, 0, 0)
        configure(configuration)
    }

    /// At start and on every reload: the limits and the targets' lookup settings.
    func configure(_ configuration: Configuration) {
        limits = (configuration.maxWatchesPerClient, configuration.maxWatchesPerUser, configuration.maxWatches)
        targets.configure(timeout: configuration.defaultTimeout, maxConcurrentLookups: configuration.maxConcurrentLookups)
    }

    /// A refusal by a limit, counted for `reachd_watches_refused_total`.
    private func limitExceeded(_ message: String) -> BusError {
        metrics.counters.watchesRefused += 1
        metrics.changed()
        return BusError(name: ReachdContract.ErrorName.limitExceeded, message: message)
    }

    var count: Int { watches.count }

    /// Validates `target`, and serves a new watch object once the limits allow it: at once when
    /// the caller's Unix user is known, else once the bus told it (asked asynchronously: a
    /// synchronous GetConnectionUnixUser would block the loop).
    func add(target: String, caller message: BusMessage) throws(BusError) -> BusReply {
        let isAddress = AddressTarget.looksLikeAddress(target)
        if isAddress {
            // The whole check, not only the syntax: a scope naming no interface (fe80::1%nonexist)
            // is refused here exactly as CheckAddress refuses it.
            let answer = core.mirror.check(address: target)
            if answer.reason == .invalidTarget { throw ReachabilityService.invalidTarget(answer.message ?? "invalid address '\(target)'") }
        } else if case let .failure(error) = HostName.validate(target) {
            throw ReachabilityService.invalidTarget(error.description)
        }
        let owner = message.sender ?? ""
        if clients[owner] == nil {
            let track = try BusTrack(bus: bus) { [unowned self] in self.removeAll(of: owner) }
            clients[owner] = Client(track: track)
        }
        try clients[owner]?.track.add(senderOf: message)
        return try callers.answering(message) { [unowned self] uid throws(BusError) in
            // It may have left while its user was asked: a watch now would outlive it.
            guard clients[owner] != nil else {
                throw BusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "\(owner) left")
            }
            let path = try create(target: target, owner: owner, uid: uid)
            return .now { reply throws(BusError) in try reply.append(objectPath: path) }
        }
    }

    /// Enforces the limits and serves the watch object.
    private func create(target: String, owner: String, uid: UInt32) throws(BusError) -> String {
        let owned = clients[owner]?.paths.count ?? 0
        guard owned < limits.perClient else {
            throw limitExceeded("\(owner) already has \(owned) watches, the most one client may hold (MaxWatchesPerClient=\(limits.perClient))")
        }
        // The total first: with a small MaxWatches, MaxWatchesPerUser=auto equals it, and the
        // message then names the limit that really binds.
        guard watches.count < limits.total else {
            throw limitExceeded("reachd already serves \(watches.count) watches, the most it holds (MaxWatches=\(limits.total))")
        }
        let ofUser = perUser[uid] ?? 0
        guard ofUser < limits.perUser else {
            throw limitExceeded("the clients of Unix user \(uid) already hold \(ofUser) watches, the most one user may hold (MaxWatchesPerUser=\(limits.perUser))")
        }
        nextID += 1
        let watch = Watch(path: "\(ReachdContract.watchPathNamespace)/\(nextID)", owner: owner, uid: uid, target: target, targets: targets)
        // The watch holds its slot and this registry holds the watch: the slot must not hold it.
        watch.slot = try bus.add(watch, at: watch.path, interface: ReachdContract.watchInterface, vtable: Watch.vtable, retaining: false)
        watches[watch.path] = watch
        clients[owner]?.paths.insert(watch.path)
        perUser[uid, default: 0] += 1
        targets.attach(watch)
        metrics.changed()
        Log.debug("watch \(watch.path) on \(target) for \(owner) (uid \(uid))")
        return watch.path
    }

    func remove(path: String, caller: String) throws(BusError) {
        guard let watch = watches[path] else {
            throw BusError(name: "org.freedesktop.DBus.Error.UnknownObject", message: "no watch \(path)")
        }
        guard watch.owner == caller else {
            throw BusError(name: "org.freedesktop.DBus.Error.AccessDenied", message: "\(path) belongs to another client")
        }
        drop(watch)
        if clients[caller]?.paths.isEmpty == true { clients.removeValue(forKey: caller) }
    }

    private func removeAll(of client: String) {
        guard let entry = clients.removeValue(forKey: client) else { return }
        for path in entry.paths { if let watch = watches[path] { drop(watch) } }
        Log.debug("client \(client) left: dropped \(entry.paths.count) watch(es)")
    }

    private func drop(_ watch: Watch) {
        watches.removeValue(forKey: watch.path)
        clients[watch.owner]?.paths.remove(watch.path)
        perUser[watch.uid]? -= 1
        if perUser[watch.uid] == 0 { perUser.removeValue(forKey: watch.uid) }
        watch.slot = nil
        targets.detach(watch)
        metrics.changed()
    }

    /// At stop: lets go of every watch, and so unregisters its object.
    func releaseAll() {
        watches = [:]
        clients = [:]
        perUser = [:]
    }

    /// The core's follower: after a routing change every distinct target is answered again,
    /// once for all its watches.
    func follow(_ update: CoreUpdate) {
        if update.routingMoved { targets.networkChanged() }
    }
}
