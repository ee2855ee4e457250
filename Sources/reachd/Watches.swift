import Reachability

/// The watches of all clients, with their limits. A client's watches die with it (`Callers`).
/// Limits hold per connection, and as a `Quota` per Unix user (learnt from the bus without
/// blocking) and in all: users other than root together never take the reserve kept for root.
final class WatchRegistry {
    private let state: SharedState
    private let bus: BusConnection
    private let callers: Callers
    private unowned let metrics: DaemonMetrics
    private var perClient = 0
    /// The watches held per Unix user, within MaxWatches= and MaxWatchesPerUser=.
    private var ledger = QuotaLedger<UInt32>(Quota(total: 0)) { $0 == 0 }
    private var watches: [String: any HeldWatch] = [:]
    /// The watches of each client that holds any, by unique bus name.
    private var clients: [String: Set<String>] = [:]
    private var nextID: UInt64 = 0
    /// The distinct targets the watches share, and when each is asked.
    private let targets: WatchTargets
    /// The distinct kind restrictions the path watches share, and their answers.
    private let paths: PathWatches

    init(
        checks: any HostCheckStarting, state: SharedState, first: CoreUpdate, bus: BusConnection, callers: Callers, loop: EventLoop,
        metrics: DaemonMetrics, configuration: Configuration
    ) {
        self.state = state
        self.bus = bus
        self.callers = callers
        self.metrics = metrics
        targets = WatchTargets(checks: checks, state: state, bus: bus, loop: loop)
        paths = PathWatches(bus: bus, first: first.snapshot)
        configure(configuration)
    }

    /// At start and on every reload: the limits and the targets' lookup settings.
    func configure(_ configuration: Configuration) {
        perClient = configuration.maxWatchesPerClient
        ledger.quota = Quota(total: configuration.maxWatches, perOwner: configuration.maxWatchesPerUser)
        targets.configure(timeout: configuration.defaultTimeout, maxConcurrentLookups: configuration.maxConcurrentLookups)
    }

    /// A refusal by a limit, counted for `reachd_watches_refused_total`.
    private func limitExceeded(_ message: String) -> BusError {
        metrics.counters.watchesRefused += 1
        metrics.changed()
        return BusError(name: ReachdContract.ErrorName.limitExceeded, message: message)
    }

    var count: Int { watches.count }

    /// `Watch(target)`: validates `target`, and serves a new watch object on it.
    func add(target: String, caller message: BusMessage) throws(BusError) -> BusReply {
        let isAddress = AddressTarget.looksLikeAddress(target)
        if isAddress {
            // The whole check, not only the syntax: a scope naming no interface (fe80::1%nonexist)
            // is refused here exactly as CheckAddress refuses it.
            let answer = state.check(address: target)
            if answer.reason == .invalidTarget { throw ReachabilityService.invalidTarget(answer.message ?? "invalid address \(target.inertExcerpt())") }
        } else if case let .failure(error) = HostName.validate(target) {
            throw ReachabilityService.invalidTarget(error.description)
        }
        return try serve(message) { [unowned self] path, owner, uid throws(BusError) in
            let watch = Watch(path: path, owner: owner, uid: uid, target: target, targets: self.targets)
            // The watch holds its slot and this registry holds the watch: the slot must not hold it.
            watch.slot = try self.bus.add(watch, at: path, interface: ReachdContract.watchInterface, vtable: Watch.vtable, retaining: false)
            self.targets.attach(watch)
            Log.debug("watch \(path) on \(target) for \(owner) (uid \(uid))")
            return watch
        }
    }

    /// `WatchPath(options)`: the options read (refused at once when wrong), then a path watch
    /// served as a watch is, within the same limits.
    func addPath(caller message: BusMessage) throws(BusError) -> BusReply {
        let restriction = try PathProperty.readOptions(message)
        return try serve(message) { [unowned self] path, owner, uid throws(BusError) in
            let watch = PathWatch(path: path, owner: owner, uid: uid, restriction: restriction, paths: self.paths)
            watch.slot = try self.bus.add(watch, at: path, interface: ReachdContract.pathInterface, vtable: PathWatch.vtable, retaining: false)
            self.paths.attach(watch)
            Log.debug("path watch \(path) (\(restriction)) for \(owner) (uid \(uid))")
            return watch
        }
    }

    /// Serves a new watch object made by `make` once the limits allow it: at once when the
    /// caller's Unix user is known, else once the bus told it (see `Callers`).
    private func serve(
        _ message: BusMessage, _ make: @escaping (String, String, UInt32) throws(BusError) -> any HeldWatch
    ) throws(BusError) -> BusReply {
        let owner = message.sender ?? ""
        let call = OwnedBusMessage(retaining: message)
        try callers.withCaller(of: message) { [unowned self] caller in
            do throws(BusError) {
                let caller = try caller.get()
                let path = try self.create(owner: caller.name, uid: caller.uid, make)
                try self.bus.reply(to: call.message) { reply throws(BusError) in try reply.append(objectPath: path) }
            } catch {
                self.bus.reply(to: call.message, error: error)
                if self.clients[owner] == nil { self.callers.release(owner, .watches) }
            }
        }
        return .later
    }

    /// Enforces the limits and serves the watch object.
    private func create(
        owner: String, uid: UInt32, _ make: (String, String, UInt32) throws(BusError) -> any HeldWatch
    ) throws(BusError) -> String {
        let owned = clients[owner]?.count ?? 0
        guard owned < perClient else {
            throw limitExceeded("\(owner) already has \(owned) watches, the most one client may hold (MaxWatchesPerClient=\(perClient))")
        }
        // The total is tried first: with a small MaxWatches, MaxWatchesPerUser=auto equals it,
        // and the message then names the limit that really binds.
        let (quota, ofUser) = (ledger.quota, ledger.held(by: uid))
        switch ledger.refusal(for: uid) {
        case nil: break
        case .total:
            throw limitExceeded("reachd already serves \(watches.count) watches, the most it holds (MaxWatches=\(quota.total))")
        case .owner:
            throw limitExceeded("the clients of Unix user \(uid) already hold \(ofUser) watches, the most one user may hold (MaxWatchesPerUser=\(quota.perOwner))")
        case .reserve:
            throw limitExceeded(
                "users other than root already hold \(ledger.heldByOthers) watches; the last \(quota.reserve) of MaxWatches=\(quota.total) are kept for root")
        }
        nextID += 1
        let watch = try make("\(ReachdContract.watchPathNamespace)/\(nextID)", owner, uid)
        watches[watch.path] = watch
        if clients[owner] == nil {
            callers.onDeparture(of: owner, .watches) { [unowned self] in self.removeAll(of: owner) }
        }
        clients[owner, default: []].insert(watch.path)
        ledger.take(uid)
        metrics.changed()
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
        if clients[caller]?.isEmpty == true {
            clients.removeValue(forKey: caller)
            callers.release(caller, .watches)
        }
    }

    private func removeAll(of client: String) {
        guard let paths = clients.removeValue(forKey: client) else { return }
        for path in paths { if let watch = watches[path] { drop(watch) } }
        Log.debug("client \(client) left: dropped \(paths.count) watch(es)")
    }

    private func drop(_ watch: any HeldWatch) {
        watches.removeValue(forKey: watch.path)
        clients[watch.owner]?.remove(watch.path)
        ledger.release(watch.uid)
        watch.slot = nil
        if let watch = watch as? Watch { targets.detach(watch) }
        if let watch = watch as? PathWatch { paths.detach(watch) }
        metrics.changed()
    }

    /// At stop: lets go of every watch, and so unregisters its object.
    func releaseAll() {
        watches = [:]
        clients = [:]
        ledger.clear()
    }

    /// The core's follower: after a routing change every distinct target is answered again,
    /// once for all its watches.
    func follow(_ update: CoreUpdate) {
        if update.routingMoved { targets.networkChanged() }
        if update.change != nil { paths.networkChanged(update.snapshot) }
    }
}
