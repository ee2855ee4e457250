import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// reachd's wiring: one sd-event loop carrying netlink, the bus, c-ares sockets, timers,
/// signals and the watchdog. Nothing here blocks; the Engine and adapters do the work.
final class Daemon {
    static let busName = ReachdContract.busName
    static let objectPath = ReachdContract.objectPath
    static let interface = ReachdContract.interface

    let options: Options
    let loop: EventLoop
    let observer: NetworkObserver
    private(set) var configuration: Configuration
    private(set) var hostChecks: HostChecks!
    var bus: BusConnection!
    var watches: WatchRegistry!
    /// The opt-in connectivity probe (`[Connectivity]`); idle, with no timer, when off.
    private var internetProbe: InternetProbe!
    /// One probe per uplink other than the primary (`Uplink`), by ifindex; none when the probe is off.
    private var uplinkProbes: [Int32: InternetProbe] = [:]
    private var sources: [EventSource] = []
    private var busSlots: [BusSlot] = []
    private var resyncTimer: EventSource!
    private var resolverSources: ResolverSources!
    private var nextCheckID: UInt64 = 0
    /// Resolver settings from a reload, applied once no check is waiting for DNS.
    private var pendingResolverOptions: HostResolver.Options?
    private var resolverOptions: HostResolver.Options
    private var lastStatus = ""
    /// The routing epoch the watches were last evaluated at.
    private var lastRoutingEpoch: UInt64 = 0
    /// `[Compatibility] NetworkManager=yes`: org.freedesktop.NetworkManager for GLib and Qt.
    private var networkManager: NetworkManagerSurface?
    /// What the metrics count (DESIGN.md "Metrics"); bumped where the events happen.
    var metricsCounters = MetricsCounters()
    /// The mirror's counters as the metrics outputs last heard of them.
    private var lastMirrorCounters = MirrorCounters()
    /// When reachd started, in seconds since the Unix epoch (`reachd_start_time_seconds`).
    let startTime: Double
    /// `[Metrics] TextfileDirectory=`: the node_exporter textfile; nil (no timer) when unset.
    private var metricsTextfile: MetricsTextfile?
    /// The listening sockets of reachd-metrics.socket, and what serves them.
    private let metricsSockets: [Int32]
    private var metricsEndpoints: [MetricsEndpoint] = []

    /// Runs the daemon; returns the process exit status.
    static func main(_ options: Options) -> Int32 {
        let configuration: Configuration
        switch Configuration.load(directories: options.configDirectories) {
        case let .success(loaded): configuration = loaded
        case let .failure(errors):
            for error in errors.errors { Log.error(error.description) }
            Log.error("configuration rejected: \(errors.errors.count) error(s)")
            return 2
        }
        for warning in configuration.warnings { Log.warning(warning.description) }
        if options.checkConfig {
            print(configuration.mergedText, terminator: "")
            return 0
        }
        do {
            // The daemon is released before the count: whatever it still holds is freed by then.
            let code = try Daemon(options: options, configuration: configuration).run()
            Log.debug("watch objects alive at exit: \(Watch.alive.load(ordering: .relaxed))")
            return code
        } catch {
            Log.error("cannot start: \(error)")
            return 1
        }
    }

    init(options: Options, configuration: Configuration) throws {
        self.options = options
        self.configuration = configuration
        startTime = SystemClock.wallSeconds()
        loop = try EventLoop()
        var monitor = Self.monitorConfiguration(options, configuration)
        // reachd-metrics.socket passes its listening sockets named "metrics" (FileDescriptorName=);
        // reachd.socket passes one rtnetlink socket. Anything else (a drop-in gone wrong) is
        // closed, and reachd watches through a socket of its own, as when started by hand.
        let passed = ServiceManager.listenedDescriptors()
        metricsSockets = passed.filter { $0.name == MetricsEndpoint.socketName }.map(\.descriptor)
        switch passed.filter({ $0.name != MetricsEndpoint.socketName }).map(\.descriptor) {
        case []: break
        case let descriptors where descriptors.count == 1 && isRouteNetlinkSocket(descriptors[0]):
            monitor.monitorSocket = descriptors[0]
        case let descriptors:
            let what = descriptors.count == 1 ? "file descriptor \(descriptors[0]), not an rtnetlink socket" : "\(descriptors.count) sockets"
            Log.warning("systemd passed \(what); expected one rtnetlink socket (reachd.socket): ignoring it, opening a netlink socket of its own")
            for descriptor in descriptors { Descriptor(descriptor).close() }
        }
        observer = try NetworkObserver(configuration: monitor)
        Log.info(Self.bufferReport(observer.netlinkReceiveBufferBytes, asked: Int(monitor.receiveBufferBytes), adopted: monitor.monitorSocket != nil))
        resolverOptions = Self.resolverOptions(options, configuration)
        hostChecks = makeHostChecks(resolverOptions)
        if let namespace = options.namespace {
            // c-ares opens its sockets on this thread: they must live in the watched namespace too.
            try NetworkNamespace.enter(namespace)
        }
    }

    private func makeHostChecks(_ options: HostResolver.Options) -> HostChecks {
        let checks = HostChecks(options: options, failure: nil) { [unowned self] addresses, target in
            self.observer.evaluate(addresses: addresses, target: target)
        }
        checks.socketWillClose = { [unowned self] fd in self.resolverSources?.socketWillClose(fd) }
        return checks
    }

    /// One line for the journal: how big the netlink receive buffer is, and why.
    static func bufferReport(_ granted: Int, asked: Int, adopted: Bool) -> String {
        let size = "netlink: receive buffer \(granted / 1024) KiB"
        if adopted { return size + " (socket from reachd.socket, sized by systemd)" }
        // The kernel reports twice what it granted; less than twice the request means clamped.
        if granted >= 2 * asked { return size + " (own socket, SO_RCVBUFFORCE)" }
        return size + " (own socket, clamped to net.core.rmem_max: start reachd through reachd.socket for a larger one)"
    }

    static func monitorConfiguration(_ options: Options, _ configuration: Configuration) -> MonitorConfiguration {
        var monitor = MonitorConfiguration()
        monitor.namespacePath = options.namespace
        monitor.sysfsRoot = options.sysfsRoot
        monitor.resolvConfPath = options.resolvConf
        configuration.apply(to: &monitor)
        return monitor
    }

    static func resolverOptions(_ options: Options, _ configuration: Configuration) -> HostResolver.Options {
        HostResolver.Options(
            maxConcurrent: configuration.maxConcurrentLookups, resolvConfPath: options.resolvConf,
            negativeCacheTime: configuration.negativeCacheTime)
    }

    func run() -> Int32 {
        do {
            try start()
        } catch {
            Log.error("cannot start: \(error)")
            return 1
        }
        let code = loop.run()
        hostChecks.cancelAll()
        watches?.releaseAll()
        metricsTextfile?.stop()
        ServiceManager.notify("STOPPING=1")
        Log.info(code == 0 ? "stopped" : "stopping after an error (exit \(code))")
        return code
    }

    private func start() throws {
        // Netlink: every batch the kernel queued, applied at once.
        sources.append(try loop.watch(fd: observer.netlinkDescriptor, events: .readable) { [unowned self] _ in
            self.handle(self.observer.readAvailable())
        })
        resyncTimer = try loop.timer(at: 0) { [unowned self] in self.handle(self.observer.resyncIfDue()) }
        resyncTimer.disable()
        resolverSources = try ResolverSources(loop: loop) { [unowned self] in
            self.hostChecks.processTimeouts()
            self.syncResolver()
        } ready: { [unowned self] fd, revents in
            self.hostChecks.process(fd: fd, readable: revents.canRead, writable: revents.contains(.writable))
            self.syncResolver()
        }

        sources.append(try loop.onSignal(SIGTERM) { [unowned self] in self.stop() })
        sources.append(try loop.onSignal(SIGINT) { [unowned self] in self.stop() })
        sources.append(try loop.onSignal(SIGHUP) { [unowned self] in self.reload() })
        if loop.enableWatchdog() { Log.info("watchdog enabled") }

        bus = try BusConnection(options.bus, description: "reachd")
        // The journal says what happened (with the errno), not only that the daemon stopped.
        try bus.attach(to: loop) { cause in Log.error("lost the bus: \(cause); exiting so that systemd restarts reachd") }
        watches = WatchRegistry(daemon: self)
        let service = ReachabilityService(daemon: self)
        busSlots.append(try bus.add(service, at: Self.objectPath, interface: Self.interface, vtable: ReachabilityService.vtable))
        // Losing the name (another owner replaced us) is as fatal as losing the bus.
        busSlots.append(try bus.matchSignal(
            sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameLost"
        ) { [unowned self] message in
            if (try? message.readString()) == Self.busName {
                Log.error("lost the bus name \(Self.busName)")
                self.loop.exit(code: 1)
            }
        })
        // Asked before reachd's own name: the bus answers in order, so READY=1 (which sessions
        // and portals may be ordered after) comes once that name is decided too.
        applyCompatibility()
        busSlots.append(try bus.requestName(Self.busName) { [unowned self] result in
            switch result {
            case .success(.owned):
                // The first netlink sync completed before the loop started: now we are ready.
                self.lastStatus = self.summary
                ServiceManager.notify("READY=1\nSTATUS=\(self.lastStatus)")
                Log.info("ready on the bus as \(Self.busName): \(self.lastStatus)")
            case .success(.ownedByAnother), .success(.queued):
                // Never READY without the name: clients would talk to the other instance.
                self.refuseSecondInstance()
            case let .failure(error):
                Log.error("cannot own the bus name \(Self.busName): \(error)")
                self.loop.exit(code: 1)
            }
        })
        scheduleResync()
        internetProbe = InternetProbe(daemon: self, settings: ConnectivitySettings())
        internetProbe.configure(configuration.connectivity)
        reconcileUplinkProbes()
        applyMetrics()
        serveMetrics()
    }

    // MARK: metrics

    /// /metrics on every socket reachd-metrics.socket passed; one that is not a listening
    /// stream socket (a drop-in gone wrong) is closed with a warning.
    private func serveMetrics() {
        for descriptor in metricsSockets {
            let owned = Descriptor(descriptor)  // closed unless an endpoint takes it
            guard ServiceManager.isListeningStreamSocket(descriptor) else {
                Log.warning("metrics: systemd passed file descriptor \(descriptor) named \(MetricsEndpoint.socketName), not a listening stream socket: closing it")
                continue
            }
            do {
                metricsEndpoints.append(try MetricsEndpoint(daemon: self, listening: owned))
            } catch {
                Log.error("metrics: cannot serve file descriptor \(descriptor): \(error)")
            }
        }
        if !metricsEndpoints.isEmpty {
            Log.info("metrics: serving \(MetricsHTTP.path) on \(metricsEndpoints.count) socket(s) from reachd-metrics.socket")
        }
    }

    /// The exposition every metrics output prints (textfile, /metrics, GetMetrics).
    var metricsText: String {
        MetricsExposition.render(MetricsSample(
            snapshot: observer.snapshot, mirror: observer.counters, counters: metricsCounters,
            watches: watches?.count ?? 0, startTime: startTime))
    }

    /// Something the metrics show moved: the textfile is rewritten soon (coalesced).
    func metricsChanged() { metricsTextfile?.changed() }

    /// One host check finished (CheckHost, a watch of a host name, the probe's lookup).
    private func recordCheck(_ result: CheckResult, since start: ContinuousClock.Instant) {
        metricsCounters.recordCheck(result, seconds: (ContinuousClock.now - start).inSeconds)
        metricsChanged()
    }

    /// Starts, moves or stops the textfile to match `[Metrics]` (at start and on every reload).
    private func applyMetrics() {
        let settings = configuration.metrics
        if let current = metricsTextfile, current.settings == settings { return }
        metricsTextfile?.stop()
        metricsTextfile = MetricsTextfile(loop: loop, settings: settings) { [unowned self] in self.metricsText }
        do {
            try metricsTextfile?.start()
        } catch {
            Log.error("metrics: cannot start the textfile timer: \(error)")
            metricsTextfile = nil
        }
    }

    /// The probe's verdict joins the host's answer: published like any change of it.
    func recordConnectivity(_ status: ConnectivityStatus) {
        handle(observer.record(connectivity: status))
    }

    /// An uplink's verdict (see `InternetProbe.Path.uplink`), published like the host's.
    func recordUplinkConnectivity(index: Int32, _ connectivity: Connectivity) {
        handle(observer.record(uplink: index, connectivity: connectivity))
    }

    /// Starts a probe for each uplink that is not the primary, and retires those of links that
    /// stopped being one (or became the primary, which the host's probe judges). Off: none.
    /// One pass over the default routes per change (`NetworkState.uplinks`).
    private func reconcileUplinkProbes() {
        let settings = configuration.connectivity
        let state = observer.state
        let wanted = settings.isEnabled
            ? Dictionary(state.uplinks().filter { $0.name != state.host.primaryInterface }.map { ($0.index, $0.name) }) { first, _ in first }
            : [:]
        for (index, probe) in uplinkProbes where wanted[index] != probe.pathName {
            uplinkProbes.removeValue(forKey: index)
            probe.retire()
        }
        // Not configure: this runs inside a probe's own verdict (record -> handle), where a
        // configure would start it over; networkChanged acts only when its path moved.
        for probe in uplinkProbes.values { probe.networkChanged() }
        for (index, name) in wanted where uplinkProbes[index] == nil {
            let probe = InternetProbe(daemon: self, settings: ConnectivitySettings(), path: .uplink(index: index, name: name))
            uplinkProbes[index] = probe
            probe.configure(settings)
        }
    }

    /// `Validate`: probe now (see `InternetProbe.validate`).
    func validateConnectivity(_ reply: @escaping (ConnectivityStatus) -> Void) {
        internetProbe.validate(reply)
    }

    /// Another connection owns the name: say which (its unique name and PID, as the bus tells
    /// them, asked without blocking) and exit 1.
    private func refuseSecondInstance() {
        let name = Self.busName
        func refuse(_ owner: String) {
            Log.error("another instance owns the bus name \(name) (\(owner)); exiting: stop it first, or give this one another bus")
            ServiceManager.notify("STATUS=refused: \(name) is owned by \(owner)")
            loop.exit(code: 1)
        }
        func ask(_ member: String, _ argument: String, _ read: @escaping (BusMessage) throws(BusError) -> String, then: @escaping (String?) -> Void) {
            do {
                busSlots.append(try bus.callAsync(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                    member: member, timeout: .seconds(2), { message throws(BusError) in try message.append(argument) }
                ) { result in then((try? result.get()).flatMap { try? read($0) }) })
            } catch {
                then(nil)
            }
        }
        ask("GetNameOwner", name, { message throws(BusError) in try message.readString() }) { owner in
            guard let owner else { return refuse("its owner could not be asked") }
            ask("GetConnectionUnixProcessID", owner, { message throws(BusError) in "\(try message.readUInt32())" }) { pid in
                refuse(pid.map { "\(owner), pid \($0)" } ?? owner)
            }
        }
    }

    var summary: String {
        let snapshot = observer.snapshot
        return renderSummary(snapshot.host, interfaces: snapshot.interfaces)
    }

    // MARK: changes

    /// Publishes one change. `Changed` goes first and only when the host's answer changed;
    /// interface-level changes have `InterfacesChanged`; both move `Generation`. Then the slower
    /// parts: logs, STATUS=, and the watches (re-evaluated whenever routing facts moved, even when
    /// nothing the host shows did: a single target's path may have).
    private func handle(_ change: ReachabilityChange?) {
        for line in observer.takeIncidents() { Log.warning("netlink: \(line)") }
        scheduleResync()
        if let change { publish(change) }
        let mirror = observer.counters
        if change != nil || mirror != lastMirrorCounters {
            lastMirrorCounters = mirror
            metricsChanged()
        }
        // nil until start() made it (the first sync's change comes before).
        internetProbe?.networkChanged()
        if internetProbe != nil { reconcileUplinkProbes() }
        let epoch = observer.state.routingEpoch
        if epoch != lastRoutingEpoch {
            lastRoutingEpoch = epoch
            hostChecks.networkChanged()
            watches.reevaluate()
        }
    }

    private func publish(_ change: ReachabilityChange) {
        if change.hostChanged {
            metricsCounters.changedEvents += 1
            emit("Changed") { message throws(BusError) in
                try message.append(change.host.flags.rawValue)
                try message.append(change.host.primaryInterface)
                try message.append(change.generation)
            }
            bus.emitPropertiesChanged(path: Self.objectPath, interface: Self.interface, names: ReachabilityService.hostProperties + ["Generation"])
        }
        if !change.changedInterfaces.isEmpty || !change.removedInterfaces.isEmpty {
            emit("InterfacesChanged") { message throws(BusError) in
                try ReachabilityService.appendInterfaces(message, change.changedInterfaces)
                try message.append(change.removedInterfaces.map(\.name))
                try message.append(change.generation)
            }
            if !change.hostChanged {
                bus.emitPropertiesChanged(path: Self.objectPath, interface: Self.interface, names: ["Generation"])
            }
        }
        // One line per interface whose visible state changed: what an administrator reads back
        // in the journal when asking "what happened to the network at 14:02".
        for status in change.changedInterfaces {
            let addresses = status.addresses.isEmpty ? "no address" : status.addresses.map(\.description).joined(separator: " ")
            Log.info("link \(status.name) (\(status.kind.rawValue)): \(status.flags), \(addresses)")
        }
        for status in change.removedInterfaces { Log.info("link \(status.name) removed") }
        networkManager?.update()
        let summary = self.summary
        if summary != lastStatus {
            lastStatus = summary
            ServiceManager.notify("STATUS=\(summary)")
            Log.info(summary)
        }
    }

    private func emit(_ member: String, _ arguments: (BusMessage) throws(BusError) -> Void) {
        do {
            try bus.emitSignal(path: Self.objectPath, interface: Self.interface, member: member, arguments)
        } catch {
            Log.warning("cannot send \(member): \(error)")
        }
    }

    private func scheduleResync() {
        if let deadline = observer.resyncDeadline {
            resyncTimer.schedule(at: deadline.monotonicMicroseconds)
        } else {
            resyncTimer.disable()
        }
    }

    // MARK: compatibility

    /// Starts or stops the NetworkManager surface to match the configuration (at start and on
    /// every reload). Off, nothing is claimed on the bus.
    private func applyCompatibility() {
        let wanted = configuration.networkManagerCompatibility
        guard wanted != (networkManager != nil) else { return }
        let name = NetworkManagerSurface.busName
        if !wanted {
            networkManager?.stop()
            networkManager = nil
            Log.info("NetworkManager compatibility off: released \(name)")
            return
        }
        let surface = NetworkManagerSurface(bus: bus) { [unowned self] in self.observer.snapshot }
        networkManager = surface
        do {
            try surface.start { [weak self, weak surface] refusal in
                guard let self, let surface, self.networkManager === surface else { return }
                if let why = refusal {
                    // Never alongside NetworkManager: reachd's own interface goes on, this one does not.
                    Log.error("NetworkManager compatibility refused: cannot own \(name): \(why); serving only \(Self.busName)")
                    ServiceManager.notify("STATUS=\(self.summary) (NetworkManager compatibility refused: \(name) is taken)")
                    self.networkManager = nil
                } else {
                    let values = surface.values
                    Log.info("NetworkManager compatibility: serving \(name) (State \(values.state), Connectivity \(values.connectivity), Metered \(values.metered))")
                }
            }
        } catch {
            Log.error("NetworkManager compatibility refused: cannot serve \(name): \(error)")
            surface.stop()
            networkManager = nil
        }
    }

    // MARK: host checks

    /// Starts a host check; `completion` runs on the loop.
    func checkHost(_ name: String, timeout: Duration, completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void) -> UInt64 {
        nextCheckID += 1
        let started = ContinuousClock.now
        let daemon = UncheckedBox(self)
        hostChecks.start(HostCheckRequest(id: nextCheckID, name: name, deadline: .now + timeout) { outcome in
            if case let .success(result) = outcome { daemon.value.recordCheck(result, since: started) }
            completion(outcome)
        })
        syncResolver()
        return nextCheckID
    }

    func cancelHostCheck(_ id: UInt64) {
        hostChecks.cancel(id)
        syncResolver()
    }

    /// Mirrors the resolver's socket changes and deadline into the loop (`ResolverSources`).
    func syncResolver() {
        if let pending = pendingResolverOptions, hostChecks.isIdle {
            // A reload changed MaxConcurrentLookups or NegativeCacheTime: swap in a new resolver
            // now that nothing waits on the old one (the cache starts afresh).
            pendingResolverOptions = nil
            resolverOptions = pending
            hostChecks = makeHostChecks(pending)
            resolverSources.reset()
        }
        resolverSources.sync(hostChecks)
    }

    // MARK: signals

    private func stop() {
        Log.info("stopping on signal")
        loop.exit(code: 0)
    }

    /// SIGHUP: re-read the configuration. A bad one is refused and the running one kept.
    private func reload() {
        ServiceManager.notify("RELOADING=1\nMONOTONIC_USEC=\(SystemClock.monotonicMicroseconds())")
        switch Configuration.load(directories: options.configDirectories) {
        case let .success(loaded):
            configuration = loaded
            let monitor = Self.monitorConfiguration(options, loaded)
            let change = observer.reclassify(with: Classifier(rules: monitor.rules, priorities: monitor.priorities))
            watches.limits = (loaded.maxWatchesPerClient, loaded.maxWatchesPerUser, loaded.maxWatches)
            let newResolverOptions = Self.resolverOptions(options, loaded)
            if newResolverOptions != resolverOptions {
                pendingResolverOptions = newResolverOptions
                syncResolver()
            }
            for warning in loaded.warnings { Log.warning(warning.description) }
            Log.info("configuration reloaded from \(loaded.sources.isEmpty ? "defaults" : loaded.sources.joined(separator: ", "))")
            handle(change)
            internetProbe.configure(loaded.connectivity)
            for probe in uplinkProbes.values { probe.configure(loaded.connectivity) }
            reconcileUplinkProbes()
            applyCompatibility()
            applyMetrics()
            ServiceManager.notify("READY=1\nSTATUS=\(summary)")
        case let .failure(errors):
            for error in errors.errors { Log.error(error.description) }
            Log.error("new configuration refused (\(errors.errors.count) error(s)); keeping the running one")
            ServiceManager.notify("READY=1\nSTATUS=\(summary) (configuration reload refused: \(errors.errors.first?.description ?? "error"))")
        }
    }
}
