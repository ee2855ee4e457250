import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// reachd's composition root: one sd-event loop carrying the core (netlink, c-ares), the bus,
/// signals and the watchdog, and the parts that follow the core's updates, in this order: the
/// service object (whose properties answer from the update last told), the publisher (signals,
/// STATUS=, journal, NetworkManager surface), the metrics, the history
/// (each change of an answer with its cause, in memory and the journal), the probes and
/// the watches; and sleep, which hands a resume to the core and the probes. NetworkManager's
/// devices, while it runs, are one more input to the core (`NetworkManagerDevices`). Each part
/// gets what it needs at construction (the first update, the state's questions, a way to hand
/// in inputs or start host checks); none holds the daemon or the core.
final class Daemon {
    private let options: Options
    private var configuration: Configuration
    private let loop: EventLoop
    private let core: ReachabilityCore
    private let metrics: DaemonMetrics
    /// The listening sockets of reachd-metrics.socket, served once the loop runs.
    private let metricsSockets: [Int32]
    private var sources: [EventSource] = []
    private var busSlots: [BusSlot] = []
    private var bus: BusConnection!
    private var publisher: Publisher!
    private var probes: Probes!
    /// The watched units' own traffic (`[Units] Watch=`).
    private var traffic: UnitTraffic!
    private var portals: PortalSessions!
    /// libcurl's thread, for the portal APIs and the probes alike.
    private var exchanges: HTTPExchanges!
    private var watches: WatchRegistry!
    /// The clients that hold watches or checks in flight, and their host checks.
    private var callers: Callers?
    private var checks: HostCheckCalls?
    private var service: ReachabilityService!
    private var sleep: Sleep!
    private var history: History!
    private var outageClock: OutageClock!
    /// NetworkManager's devices' `Metered`, while NetworkManager runs.
    private var networkManagerDevices: NetworkManagerDevices?

    /// Runs the daemon; returns the process exit status.
    static func main(_ options: Options) -> Int32 {
        let configuration: Configuration
        switch Configuration.load(directories: options.configDirectories, named: options.configDirectoriesNamed) {
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
            // In words: a bus error's message names the bus and what failed (its name is errno's number).
            Log.error("cannot start: \((error as? BusError)?.message ?? "\(error)")")
            return 1
        }
    }

    init(options: Options, configuration: Configuration) throws {
        self.options = options
        self.configuration = configuration
        // What systemd passed is sorted before reachd opens anything of its own (see PassedSockets).
        let passed = PassedSockets.take()
        loop = try EventLoop()
        var settings = Self.coreConfiguration(options, configuration)
        metricsSockets = passed.metrics
        settings.monitorSocket = passed.netlink
        core = try ReachabilityCore(configuration: settings, loop: loop) { Log.event(.incidents, $0, warning: true) }
        Log.info(PassedSockets.bufferReport(
            core.netlinkReceiveBufferBytes, asked: Int(settings.receiveBufferBytes), adopted: passed.netlink != nil))
        Log.info("radios: \(core.radioSource)")
        metrics = DaemonMetrics(loop: loop, mirror: core.shared)
        core.checkAnswered = { [unowned metrics] result, elapsed in metrics.recordCheck(result, took: elapsed) }
        if let namespace = options.namespace {
            // c-ares opens its sockets on this thread: they must live in the watched namespace too.
            try NetworkNamespace.enter(namespace)
        }
    }

    static func coreConfiguration(_ options: Options, _ configuration: Configuration) -> CoreConfiguration {
        var settings = CoreConfiguration()
        settings.namespacePath = options.namespace
        settings.sysfsRoot = options.sysfsRoot
        settings.rfkillDevicePath = options.rfkillDevice
        settings.resolvConfPath = options.resolvConf
        settings.dhcpLeasesDirectory = options.dhcpLeases
        settings.dhcpClientLeasesDirectory = options.dhcpClientLeases
        settings.networkdLinksDirectory = options.networkdLinks
        settings.dhcpcdLeasesDirectory = options.dhcpcdLeases
        configuration.apply(to: &settings)
        // No caller may take reachd to its descriptor limit: what DNS may hold is kept under it.
        let limit = DescriptorBudget.softLimit
        let configured = settings.maximumConcurrentLookups
        let fitting = DescriptorBudget.lookups(configured, limit: limit)
        if fitting < configured {
            let needed = DescriptorBudget.needed(lookups: configured)
            Log.warning("MaxConcurrentLookups=\(configured) needs \(needed) file descriptors, more than the soft limit of "
                + "\(limit) (LimitNOFILE=): running \(fitting) lookups at once")
            settings.maximumConcurrentLookups = fitting
        }
        return settings
    }

    func run() -> Int32 {
        do {
            try start()
        } catch {
            // In words: a bus error's message names the bus and what failed (its name is errno's number).
            Log.error("cannot start: \((error as? BusError)?.message ?? "\(error)")")
            return 1
        }
        let code = loop.run()
        // Clients hear reachd leave before the teardown, however long that takes under load: a
        // ping meanwhile would go unanswered and read as a hung reachd.
        publisher.networkManagerCompatibility(false)
        bus.releaseName(ReachdContract.busName)
        bus.flush()
        core.cancelHostChecks()
        watches?.releaseAll()
        callers?.releaseAll()
        metrics.stop()
        history?.stopped()
        outageClock?.stop()
        ServiceManager.notify("STOPPING=1")
        Log.info(code == 0 ? "stopped" : "stopping after an error (exit \(code))")
        return code
    }

    private func start() throws {
        sources.append(try loop.onSignal(SIGTERM) { [unowned self] in self.stop() })
        sources.append(try loop.onSignal(SIGINT) { [unowned self] in self.stop() })
        sources.append(try loop.onSignal(SIGHUP) { [unowned self] in self.reload() })
        if loop.enableWatchdog() { Log.info("watchdog enabled") }
        // What the log's lanes held back is said once they have room, on a wake-up the loop has
        // anyway (the watchdog's, at the latest): no timer of its own.
        sources.append(try loop.afterEachWake { Log.flushLanes() })

        let bus = try BusConnection(options.bus, description: "reachd")
        self.bus = bus
        // The journal says what happened (with the errno), not only that the daemon stopped.
        try bus.attach(to: loop) { cause in Log.error("lost the bus: \(cause); exiting so that systemd restarts reachd") }
        try makeParts(on: bus)
        try serve(on: bus)
        try followSleep(on: bus)
        metrics.apply(configuration.metrics)
        metrics.serve(metricsSockets)
    }

    /// The parts that follow the core's updates, each given what it needs, and their order as
    /// followers (see the type).
    private func makeParts(on bus: BusConnection) throws {
        let first = core.update
        let publisher = Publisher(bus: bus, first: first)
        self.publisher = publisher
        let history = History(state: core.shared)
        self.history = history
        // Before the history's first record: the clock counts from it.
        let outageClock = OutageClock(path: options.outageClock, first: first, loop: loop)
        self.outageClock = outageClock
        history.recorded = { [unowned outageClock] in outageClock.record($0) }
        metrics.outage = { [unowned outageClock] in outageClock.totals }
        history.start()
        let identities = try CallerIdentities(bus: bus)
        identities.asking = { Log.debug("asking the bus for the Unix user of \($0)") }
        let callers = Callers(identities: identities)
        self.callers = callers
        let watches = WatchRegistry(
            checks: core, state: core.shared, first: first, bus: bus, callers: callers, loop: loop, metrics: metrics, configuration: configuration)
        self.watches = watches
        metrics.watchCount = { [unowned watches] in watches.count }
        let exchanges = HTTPExchanges(loop: loop, caFile: configuration.portal.caFile)
        self.exchanges = exchanges
        let probes = Probes(
            parts: ProbeParts(inputs: core, checks: core, state: core.shared), loop: loop, exchanges: exchanges, metrics: metrics,
            settings: configuration.connectivity)
        self.probes = probes
        let traffic = UnitTraffic(bus: bus, sysfsRoot: options.sysfsRoot)
        self.traffic = traffic
        traffic.judge = { [unowned core] in core.stall.controlGroups = $0 }
        core.stall.polled = { [unowned probes, unowned traffic] in
            probes.stallPolled($0)
            traffic.polled($0)
        }
        traffic.configure(configuration.watchedUnits)
        metrics.unitStalls = { [unowned traffic] in traffic.stalls }
        traffic.flipped = { [unowned metrics] in metrics.changed() }
        let portals = PortalSessions(inputs: core, loop: loop, exchanges: exchanges, settings: configuration.portal)
        self.portals = portals
        portals.answered = { [unowned probes] in probes.portalAPIAnswered() }
        let checks = HostCheckCalls(checks: core, bus: bus, callers: callers, metrics: metrics, configuration: configuration)
        self.checks = checks
        metrics.heldForCallers = { [unowned checks, unowned callers, unowned core] in
            HeldForCallers(hostCheckCalls: checks.inFlightCount, hostChecksRunning: core.hostChecksRunning, clients: callers.count)
        }
        let service = ReachabilityService(
            state: core.shared, first: first, bus: bus, watches: watches, checks: checks, defaultTimeout: configuration.defaultTimeout,
            callers: callers, validate: { [unowned probes] uid, reply in probes.validate(for: uid, reply) }, metricsText: { [unowned metrics] in metrics.text },
            units: UnitChecks(state: core.shared, bus: bus, callers: callers, sysfsRoot: options.sysfsRoot, traffic: traffic))
        self.service = service
        service.history = history
        // The service first: the properties sd-bus reads as the publisher signals are the update's.
        core.follow { [unowned service] in service.follow($0) }
        core.follow { [unowned publisher] in publisher.follow($0) }
        core.follow { [unowned metrics] in metrics.follow($0) }
        // The clock before the history: the history's records of an update are counted with its kinds.
        core.follow { [unowned outageClock] in outageClock.follow($0) }
        core.follow { [unowned history] in history.follow($0) }
        core.follow { [unowned probes] in probes.follow($0) }
        core.follow { [unowned portals] in portals.follow($0) }
        core.follow { [unowned watches] in watches.follow($0) }
    }

    /// The service object, NetworkManager's devices and surface, and reachd's name: READY=1 once
    /// the name is owned.
    private func serve(on bus: BusConnection) throws {
        busSlots.append(try bus.add(service, at: ReachdContract.objectPath, interface: ReachdContract.interface, vtable: ReachabilityService.vtable))
        // Losing the name (another owner replaced us) is as fatal as losing the bus.
        busSlots.append(try bus.matchSignal(
            sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameLost"
        ) { [unowned self] message in
            if (try? message.readString()) == ReachdContract.busName {
                Log.error("lost the bus name \(ReachdContract.busName)")
                self.loop.exit(code: 1)
            }
        })
        // NetworkManager's own word on each link's cost, once it runs (ExpensiveReason).
        let devices = NetworkManagerDevices(bus: bus) { [unowned core] said in core.record(networkManagerMetered: said) }
        networkManagerDevices = devices
        try devices.start()
        // Asked before reachd's own name: the bus answers in order, so READY=1 (which sessions
        // and portals may be ordered after) comes once that name is decided too.
        publisher.networkManagerCompatibility(configuration.networkManagerCompatibility)
        busSlots.append(try bus.requestName(ReachdContract.busName) { [unowned self] result in
            switch result {
            case .success(.owned):
                // The first netlink sync completed before the loop started: now we are ready.
                self.publisher.ready()
            case .success(.ownedByAnother), .success(.queued):
                // Never READY without the name: clients would talk to the other instance.
                self.refuseSecondInstance()
            case let .failure(error):
                Log.error("cannot own the bus name \(ReachdContract.busName): \(error)")
                self.loop.exit(code: 1)
            }
        })
    }

    /// What a resume makes stale: the kernel mirror, DNS answers, targets (and their backoff,
    /// through the core's update), the probe's verdict (dropped already when logind warned of the
    /// sleep, so no early question after the resume gets the old one).
    private func followSleep(on bus: BusConnection) throws {
        let (core, probes, outageClock, history) = (self.core, self.probes!, self.outageClock!, self.history!)
        sleep = try Sleep(bus: bus, loop: loop, suspending: { [unowned probes, unowned outageClock, unowned history] in
            outageClock.sleeping()
            history.sleeping()
            probes.suspending()
        }) { [unowned core, unowned probes, unowned outageClock, unowned history] how in
            outageClock.resumed()
            history.resumed()
            Log.info("the host resumed from sleep (\(how)): resyncing, forgetting DNS answers, asking targets and probing again")
            core.resumed()
            probes.resumed()
        }
    }

    /// Another connection owns the name: say which (its unique name and PID, as the bus tells
    /// them, asked without blocking) and exit 1.
    private func refuseSecondInstance() {
        let name = ReachdContract.busName
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

    private func stop() {
        Log.info("stopping on signal")
        loop.exit(code: 0)
    }

    /// SIGHUP: re-read the configuration. A bad one is refused and the running one kept.
    private func reload() {
        ServiceManager.notify("RELOADING=1\nMONOTONIC_USEC=\(SystemClock.monotonicMicroseconds())")
        switch Configuration.load(directories: options.configDirectories, named: options.configDirectoriesNamed) {
        case let .success(loaded):
            configuration = loaded
            watches.configure(loaded)
            checks?.configure(loaded)
            service.defaultTimeout = loaded.defaultTimeout
            for warning in loaded.warnings { Log.warning(warning.description) }
            Log.info("configuration reloaded from \(loaded.sources.isEmpty ? "defaults" : loaded.sources.joined(separator: ", "))")
            // Rules, priorities and resolver settings; the change goes out like any other.
            core.reconfigure(Self.coreConfiguration(options, loaded))
            // The trust first: a probe the new settings start at once uses it.
            exchanges.caFile = loaded.portal.caFile
            probes.configure(loaded.connectivity)
            traffic.configure(loaded.watchedUnits)
            portals.configure(loaded.portal)
            publisher.networkManagerCompatibility(loaded.networkManagerCompatibility)
            metrics.apply(loaded.metrics)
            ServiceManager.notify("READY=1\nSTATUS=\(publisher.summary)")
        case let .failure(errors):
            for error in errors.errors { Log.error(error.description) }
            Log.error("new configuration refused (\(errors.errors.count) error(s)); keeping the running one")
            ServiceManager.notify("READY=1\nSTATUS=\(publisher.summary) (configuration reload refused: \(errors.errors.first?.description ?? "error"))")
        }
    }
}
