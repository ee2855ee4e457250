import Reachability

/// The watches of all clients, with their limits. A client's watches die with it (sd_bus_track).
/// Limits hold per connection, per Unix user (learnt from the bus without blocking) and in all.
final class WatchRegistry {
    private let core: ReachabilityCore
    private let bus: BusConnection
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
        var uid: UInt32?
        /// Watch calls waiting for the uid: the GetConnectionUnixUser call in flight, and the calls.
        var lookup: BusSlot?
        var waiting: [(target: String, call: OwnedBusMessage)] = []
    }

    init(core: ReachabilityCore, bus: BusConnection, loop: EventLoop, metrics: DaemonMetrics, configuration: Configuration) {
        self.core = core
        self.bus = bus
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
    /// the caller's Unix user is known, else after asking the bus for it (asynchronously: the bus
    /// attaches no credentials to messages, and a synchronous GetConnectionUnixUser would block
    /// the loop).
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
        if let uid = clients[owner]?.uid {
            let path = try create(target: target, owner: owner, uid: uid)
            return .now { reply throws(BusError) in try reply.append(objectPath: path) }
        }
        clients[owner]?.waiting.append((target, OwnedBusMessage(retaining: message)))
        if clients[owner]?.lookup == nil {
            clients[owner]?.lookup = try bus.callAsync(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetConnectionUnixUser", { call throws(BusError) in try call.append(owner) }
            ) { [unowned self] result in self.learned(owner, result.flatMap { reply in Result { () throws(BusError) in try reply.readUInt32() } }) }
        }
        return .later
    }

    /// The bus told `owner`'s Unix user (or could not): answer every Watch call that waited for it.
    private func learned(_ owner: String, _ uid: Result<UInt32, BusError>) {
        guard var client = clients[owner] else { return }  // it left meanwhile: nothing to answer
        let waiting = client.waiting
        client.waiting = []
        client.lookup = nil
        if case let .success(uid) = uid { client.uid = uid }
        clients[owner] = client
        for (target, call) in waiting {
            switch uid {
            case let .success(uid):
                do {
                    let path = try create(target: target, owner: owner, uid: uid)
                    try bus.reply(to: call.message) { reply throws(BusError) in try reply.append(objectPath: path) }
                } catch {
                    bus.reply(to: call.message, error: error)
                }
            case let .failure(error):
                bus.reply(
                    to: call.message,
                    error: BusError(name: "org.freedesktop.DBus.Error.Failed", message: "cannot learn the Unix user of \(owner): \(error.message)"))
            }
        }
        if clients[owner]?.paths.isEmpty == true, clients[owner]?.waiting.isEmpty == true, case .failure = uid {
            clients.removeValue(forKey: owner)
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
