#if canImport(Glibc)
import Glibc
#endif

/// The one core of reachability, for whoever owns the loop (reachd's sd-event, the in-process
/// monitor's poll thread): it owns the `NetworkState` (in `shared`, for readers on any thread),
/// the kernel's source and the host checks. Every input, whether the kernel's events or a
/// resync, a probe's or the stall watch's verdict, the radios, the clock, the nameservers or a
/// reload, enters one way (`take`) and is followed by one sequence: each source shown the turn's
/// state (stall detection learns whether the host is online), incidents to the log, the timers
/// re-armed, the host checks told of a routing change; and when something moved, the turn's
/// update is gathered, to be told to every follower once the turn's inputs are in (`CoreUpdates`).
/// Loop-thread only; `shared` may be read from any thread.
package final class ReachabilityCore: CoreInputs, HostCheckStarting {
    package let shared: SharedState
    private let source: any KernelEdge
    private let hostChecks: HostChecks
    private let warn: (String) -> Void
    private let updates: CoreUpdates
    private var lastRoutingEpoch: UInt64
    private var netlinkWatch: (any LoopSource)?
    private var resyncTimer: (any LoopSource)?
    /// Armed at the first deadline (a route's, an address's or a NAT64 prefix's lifetime, the
    /// end of an announcement hold window, a drop report due), never periodic; disarmed while a
    /// dump runs (its end arms it again).
    private var expiryTimer: (any LoopSource)?
    /// The dump socket of a resync; its replies are read as they come, never waited for.
    private var dumpWatch: (any LoopSource)?
    /// The monitor socket is unwatched while a dump runs (see `KernelSource.isDumping`).
    private var netlinkPaused = false
    /// Ids of host checks, shared with whoever else starts checks here (`ReachabilityMonitor`).
    private let checkIDs: HostCheckIDs
    /// The inputs beside the kernel's sockets, in the order they start (`CoreSource`).
    private let sources: [any CoreSource]
    /// Passive stall detection, one of `sources`: reachd tells it which units to judge apart and
    /// hears of its polls.
    package let stall: StallSource
    /// Told of every host check that answered, with how long it took (metrics).
    package var checkAnswered: ((CheckResult, Duration) -> Void)?

    /// Opens the netlink sockets, completes the first sync and starts watching on `loop`.
    /// `warn` gets the lines worth a warning in a journal (netlink incidents, loop failures).
    package convenience init(
        configuration: CoreConfiguration, loop: any EventLoopProtocol, checkIDs: HostCheckIDs = HostCheckIDs(),
        warn: @escaping (String) -> Void = { _ in }
    ) throws(SystemError) {
        try self.init(
            configuration: configuration, kernel: KernelSource(options: configuration.sourceOptions), loop: loop, checkIDs: checkIDs,
            warn: warn)
    }

    /// A core on `kernel`: the real one, or a test's fake (`KernelEdge`); `extraSources` follow
    /// the standard ones (`sources(_:files:)`).
    package init(
        configuration: CoreConfiguration, kernel: any KernelEdge, loop: any EventLoopProtocol, checkIDs: HostCheckIDs = HostCheckIDs(),
        extraSources: [any CoreSource] = [], warn: @escaping (String) -> Void = { _ in }
    ) throws(SystemError) {
        self.checkIDs = checkIDs
        let files = configuration.resolverFiles(warn: warn)
        stall = StallSource(settings: configuration.stall, namespacePath: configuration.namespacePath)
        sources = Self.sources(configuration, files: files) + [stall] + extraSources
        let state = try Self.start(configuration, kernel: kernel, sources: sources)
        let shared = try SharedState(state, namespacePath: configuration.namespacePath)
        shared.record(overruns: kernel.overrunCount, resyncs: kernel.resyncCount)
        self.shared = shared
        updates = try CoreUpdates(loop: loop, first: shared.snapshot, routingEpoch: state.routingEpoch) { shared.snapshot }
        source = kernel
        netlinkReceiveBufferBytes = kernel.receiveBufferBytes
        self.warn = warn
        lastRoutingEpoch = state.routingEpoch
        hostChecks = HostChecks(
            options: configuration.resolverOptions, files: files, rate: configuration.lookupRate, loop: loop, warn: warn
        ) { addresses, target, uid in
            shared.evaluate(addresses: addresses, target: target, uid: uid)
        }
        netlinkWatch = try loop.addWatch(fd: kernel.monitorDescriptor, events: .readable) { [unowned self] _ in
            for source in self.sources { source.kernelWoke() }
            self.take(self.shared.withState { self.source.readAvailable(knowing: $0) })
        }
        dumpWatch = try loop.addWatch(fd: kernel.requestDescriptor, events: .readable) { [unowned self] _ in
            self.take(self.shared.withState { self.source.continueDump(knowing: $0) })
        }
        resyncTimer = try loop.addTimer(urgent: false) { [unowned self] in
            self.source.resyncIfDue()
            self.take(nil)
        }
        expiryTimer = try loop.addTimer(urgent: false) { [unowned self] in
            self.take(self.shared.withState { self.source.lifetimesDue(at: .now, knowing: $0) })
        }
        let context = CoreSourceContext(
            loop: loop, kernel: kernel, submit: { [unowned self] in self.take($0) }, warn: warn, shared: shared,
            dnsTimeouts: { [unowned hostChecks] in hostChecks.consecutiveDNSTimeouts })
        hostChecks.dnsTimedOut = { [unowned self] in for source in self.sources { source.dnsTimeoutsMoved() } }
        for source in sources { try source.start(context) }
    }

    deinit {
        for source in sources { source.cancel() }
    }

    /// The inputs beside the kernel's sockets: a new input is one more here.
    package static func sources(_ configuration: CoreConfiguration, files: ResolverFiles) -> [any CoreSource] {
        let leases = DHCPLeases(configuration)
        return [RadioWatch(), FailedGatewayWatch(), NameserverSource(NameserverWatch(files: files), follows: configuration.followsResolvConf)]
            + (leases.map { [LeaseWatch($0)] } ?? [])
    }

    /// The kernel's network as a core starts from it, read once: the first complete dump, then
    /// what each source reads first (the routes to the nameservers resolv.conf names, the DHCP
    /// leases). The core goes on from here; `snapshot(configuration:)` answers with it alone.
    private static func start(
        _ configuration: CoreConfiguration, kernel: any KernelEdge, sources: [any CoreSource]
    ) throws(SystemError) -> NetworkState {
        var state = configuration.initialState
        if let first = try kernel.synchronize(knowing: state) { _ = state.take(first) }
        _ = kernel.takeIncidentLines()
        for source in sources { if let input = source.firstInput(kernel: kernel) { _ = state.take(input) } }
        return state
    }

    /// The host's picture now, the one a core (and so a `ReachabilityMonitor`) starts with,
    /// taken without a loop, a thread or a socket left open: for a process that asks once and
    /// exits (`reachctl is` without reachd, from every timer's ExecCondition=).
    package static func snapshot(configuration: CoreConfiguration) throws(SystemError) -> ReachabilitySnapshot {
        let kernel = try KernelSource(options: configuration.sourceOptions)
        let sources = sources(configuration, files: configuration.resolverFiles(warn: { _ in }))
        return try start(configuration, kernel: kernel, sources: sources).snapshot
    }

    /// Where the radios' state comes from ("following /dev/rfkill", or why sysfs).
    package var radioSource: String { source.radioSourceDescription }

    /// The receive buffer the kernel granted the netlink monitor socket, in bytes.
    package let netlinkReceiveBufferBytes: Int

    /// `body` hears of every update from now on, after the followers that joined before it.
    package func follow(_ body: @escaping (CoreUpdate) -> Void) { updates.follow(body) }

    /// The update last told to the followers; before the first, the state the core started from.
    package var update: CoreUpdate { updates.last }

    /// The state as the last update told it.
    package var snapshot: ReachabilitySnapshot { updates.last.snapshot }

    /// The host's answer as the last update told it.
    package var host: HostStatus { updates.last.host }

    /// The connectivity probe's verdict joins the host's answer.
    package func record(connectivity: ConnectivityStatus) {
        take(.events([.connectivity(connectivity)]))
    }

    /// The probe's verdict on one uplink other than the primary (`ValidatedInterfaces`).
    package func record(uplink index: Int32, connectivity: ConnectivityVerdict) {
        take(.events([.uplinkConnectivity(index: index, connectivity)]))
    }

    /// What NetworkManager says of its devices' cost, by interface name, as reachd's follower of
    /// NetworkManager on the bus heard it (`unknown`: forget). One input, however many.
    package func record(networkManagerMetered said: [(interface: String, metered: NetworkManagerMetered)]) {
        guard !said.isEmpty else { return }
        take(.events(said.map { .networkManagerMetered(interface: $0.interface, $0.metered) }))
    }

    /// A link's captive-portal API answered (`PortalAnswer`), a verdict like the probe's.
    package func record(portal index: Int32, api: String, _ answer: PortalAnswer?) {
        take(.events([.portalAnswer(index: index, api: api, answer)]))
    }

    /// New interface rules, priorities and resolver settings (a reload).
    package func reconfigure(_ configuration: CoreConfiguration) {
        hostChecks.reconfigure(configuration.resolverOptions, rate: configuration.lookupRate)
        for source in sources { source.reconfigured(configuration) }
        // New rules can change what followers derive from the state (which links are probed,
        // kinds and costs behind targets) with nothing shown moving: every follower hears of it.
        take(.rules(configuration.classifier), routingMoved: true)
    }

    /// The host resumed from sleep: the kernel's state is dumped afresh (as after an overrun),
    /// cached DNS answers are dropped, and every follower hears of a routing move, so targets are
    /// asked again (through DNS) with their backoff started afresh.
    package func resumed() {
        hostChecks.forgetAnswers()
        source.requestResync()
        take(nil, routingMoved: true)
    }

    /// Starts a host check; `completion` runs once, on the loop.
    package func checkHost(_ request: HostCheckRequest) {
        guard let answered = checkAnswered else { return hostChecks.start(request) }
        let started = ContinuousClock.now
        let box = LoopBound(answered)
        hostChecks.start(HostCheckRequest(
            id: request.id, name: request.name, owner: request.owner, routing: request.routing, deadline: request.deadline
        ) { outcome in
            if case let .success(result) = outcome { box.value(result, .now - started) }
            request.completion(outcome)
        })
    }

    /// Starts a host check for `owner` under an id of the core's own (for a front end whose
    /// checks all start on the loop), its addresses routed as `routing` says; returns it for
    /// `cancelHostCheck`. `completion` may run before this returns.
    @discardableResult
    package func checkHost(
        _ name: String, timeout: Duration, owner: LookupOwner, routing: HostRouting,
        completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void
    ) -> UInt64 {
        let id = checkIDs.next()
        checkHost(HostCheckRequest(id: id, name: name, owner: owner, routing: routing, deadline: .now + timeout, completion: completion))
        return id
    }

    package func cancelHostCheck(_ id: UInt64) { hostChecks.cancel(id) }

    /// Host checks running now (metrics: a ledger that reads 0 when nobody waits).
    package var hostChecksRunning: Int { hostChecks.runningCount }

    /// Ends every host check (the front end is stopping).
    package func cancelHostChecks() { hostChecks.cancelAll() }

    /// See `HostChecks.disable(because:)`.
    package func disableHostChecks(because reason: String) { hostChecks.disable(because: reason) }

    /// The kernel gives a route's time left in hundredths of a second, rounded down from its own
    /// ticks, and stops using it only after its deadline: looked at this much later, the kernel's
    /// answer is past doubt (a negative `rta_expires`), yet well within a second.
    package static let lifetimeMargin: Duration = .milliseconds(50)

    /// One journal line for a burst of dropped announcements (the Engine rate-limits them).
    package static func line(for drops: AnnouncementDrops) -> String {
        "router advertisements on \(drops.interfaceName): \(drops.count) announcement(s) dropped: more than "
            + "\(LinkAnnouncements.routerCapacity) routers announce NAT64 prefixes, or a router that is no default router "
            + "announces another portal (more are counted in reachd_announcements_dropped_total, told here at most once a minute)"
    }

    /// The one way in: applies `input` (nil: none, only the source's own state moved, such as a
    /// dump begun) to the state, then follows it with the one sequence (see the type). While
    /// followers are being told of an update, the input waits until every one of them was.
    /// `routingMoved`: the routing may have moved though the epoch did not (a resume).
    private func take(_ input: NetworkInput?, routingMoved: Bool = false) {
        guard !updates.isDelivering else { return updates.hold { [unowned self] in self.take(input, routingMoved: routingMoved) } }
        let told = updates.last.snapshot.stallEvidence
        let (change, refusals, drops, epoch, expiry, evidenceMoved) = shared.change { state in
            let change = input.flatMap { state.take($0) }
            for source in sources { source.turnTaken(state) }
            return (change, state.takeRefusedAnnouncements(), state.takeAnnouncementDrops(), state.routingEpoch,
                    state.nextExpiry, state.hostStallEvidence != told)
        }
        // The Engine refuses what it can judge only with the link's prefixes (NAT64); the
        // source says each router's refusal once.
        for refusal in refusals { source.note(refusal) }
        shared.record(overruns: source.overrunCount, resyncs: source.resyncCount)
        let dumping = source.isDumping
        expiryTimer?.schedule(orDisableAt: dumping ? nil : expiry.map { $0 + Self.lifetimeMargin })
        for incident in source.takeIncidentLines() { warn("netlink: \(incident)") }
        for drop in drops { warn(Self.line(for: drop)) }
        resyncTimer?.schedule(orDisableAt: source.resyncDeadline)
        if dumping != netlinkPaused {
            netlinkPaused = dumping
            netlinkWatch?.setEvents(dumping ? [] : .readable)
        }
        let moved = epoch != lastRoutingEpoch || routingMoved
        if moved {
            lastRoutingEpoch = epoch
            hostChecks.networkChanged()
        }
        // Followers hear only of what moved: a batch of facts that changed nothing anyone sees,
        // nor the routing, nor the stall figures, is nobody's news.
        guard change != nil || moved || evidenceMoved else { return }
        updates.gather(change, routingMoved: moved, routingEpoch: epoch)
    }
}
