#if canImport(Glibc)
import Glibc
#endif

/// One change as every part of a front end hears of it.
public struct CoreUpdate: Sendable {
    /// What the host or an interface shows that changed; nil when nothing shown did.
    public let change: ReachabilityChange?
    /// A link, address, route or rule moved, whether or not anything shown did: the path of a
    /// single target may have, so followers of targets check them again.
    public let routingMoved: Bool
    public let routingEpoch: UInt64
}

/// The one core of reachability, for whoever owns the loop (reachd's sd-event, the in-process
/// monitor's poll thread): it owns the kernel mirror and the host checks and runs the one
/// sequence that follows every input, whether the kernel's events, a resync, a probe's verdict
/// or a reload. That sequence: incidents to the log, the resync timer re-armed, the host checks
/// told of a routing change, stall detection told whether the host is online, then every
/// follower, in the order they joined. Updates reach followers in the order they happened,
/// never one inside another (`undelivered`). Loop-thread only;
/// `mirror` may be read from any thread.
public final class ReachabilityCore {
    public let mirror: SharedMirror
    private let hostChecks: HostChecks
    private let warn: (String) -> Void
    private var followers: [(CoreUpdate) -> Void] = []
    /// Updates not yet told to every follower, oldest first. An input that arrives while
    /// followers are being told (a probe follower recording a verdict from inside an update) is
    /// applied at once, and its update waits here for the one being told to reach every follower:
    /// as sd-event's defer sources, so followers hear updates in the order they happened.
    private var undelivered: [CoreUpdate] = []
    private var delivering = false
    private var lastRoutingEpoch: UInt64
    private var netlinkWatch: (any LoopSource)?
    private var resyncTimer: (any LoopSource)?
    /// /dev/rfkill, while it is followed.
    private var radioWatch: (any LoopSource)?
    /// Armed at the first deadline (a route's, an address's or a NAT64 prefix's lifetime, the
    /// end of an announcement hold window, a drop report due), never periodic; disarmed while a
    /// dump runs (its end arms it again).
    private var expiryTimer: (any LoopSource)?
    /// The dump socket of a resync; its replies are read as they come, never waited for.
    private var dumpWatch: (any LoopSource)?
    /// The monitor socket is unwatched while a dump runs (see `KernelMirror.isDumping`).
    private var netlinkPaused = false
    private var lastCheckID: UInt64 = 0
    /// Follows resolv.conf into the Engine's nameserver fact (`supportsDNS`).
    private let nameservers: NameserverWatch
    /// inotify was refused: resolv.conf's identity is compared on each netlink wake-up instead.
    private var nameserversByIdentity = false
    /// Passive stall detection; nil when off (or sock_diag could not be opened).
    private var stallWatch: StallWatch?
    private let namespacePath: String?
    private unowned let loop: any EventLoopProtocol
    /// Told of every stall poll while online (reachd runs its probe on a suspicion).
    public var stallPolled: ((StallReport) -> Void)? {
        didSet { stallWatch?.polled = stallPolled }
    }
    /// Told of every host check that answered, with how long it took (metrics).
    public var checkAnswered: ((CheckResult, Duration) -> Void)?

    /// Opens the netlink sockets, completes the first sync and starts watching on `loop`.
    /// `warn` gets the lines worth a warning in a journal (netlink incidents, loop failures).
    public init(
        configuration: CoreConfiguration, loop: any EventLoopProtocol, warn: @escaping (String) -> Void = { _ in }
    ) throws(SystemError) {
        let kernel = try KernelMirror(options: configuration.mirrorOptions)
        try kernel.synchronize()
        _ = kernel.takeIncidents()
        let files = configuration.resolverFiles(warn: warn)
        nameservers = NameserverWatch(files: files)
        _ = kernel.setNameservers(nameservers.nameservers())
        let mirror = SharedMirror(kernel)
        self.mirror = mirror
        self.warn = warn
        namespacePath = configuration.namespacePath
        self.loop = loop
        lastRoutingEpoch = kernel.state.routingEpoch
        hostChecks = HostChecks(
            options: configuration.resolverOptions, files: files, rate: configuration.lookupRate, loop: loop, warn: warn
        ) { addresses, target, uid in
            mirror.evaluate(addresses: addresses, target: target, uid: uid)
        }
        netlinkWatch = try loop.addWatch(fd: kernel.monitorDescriptor, events: .readable) { [unowned self] _ in
            if self.nameserversByIdentity, self.nameservers.changedSinceLastLook() { self.nameserversChanged() }
            self.settle(self.mirror.withLock { $0.readAvailable() })
        }
        dumpWatch = try loop.addWatch(fd: kernel.requestDescriptor, events: .readable) { [unowned self] _ in
            self.settle(self.mirror.withLock { $0.continueDump() })
        }
        resyncTimer = try loop.addTimer(urgent: false) { [unowned self] in
            self.settle(self.mirror.withLock { $0.resyncIfDue() })
        }
        if let radios = kernel.radios.descriptor {
            radioWatch = try loop.addWatch(fd: radios, events: .readable) { [unowned self] _ in self.radiosReadable() }
        }
        expiryTimer = try loop.addTimer(urgent: false) { [unowned self] in
            self.settle(self.mirror.withLock { $0.lifetimesDue(at: .now) })
        }
        configureStallDetection(configuration.stall)
        do {
            guard configuration.followsResolvConf else { return }
            try nameservers.start(on: loop) { [unowned self] in self.nameserversChanged() }
        } catch {
            _ = nameservers.changedSinceLastLook()
            nameserversByIdentity = true
            warn("\(nameservers.path) is looked at on each network change instead of followed: \(error)")
        }
    }

    private func nameserversChanged() {
        let servers = nameservers.nameservers()
        settle(mirror.withLock { $0.setNameservers(servers) })
    }

    /// Where the radios' state comes from ("following /dev/rfkill", or why sysfs).
    public var radioSource: String { mirror.withLock { $0.radios.source.description } }

    /// /dev/rfkill has records: applied as one input. When it ends (it should not), the radios
    /// are read from sysfs on link events from then on.
    private func radiosReadable() {
        settle(mirror.withLock { $0.readRadios() })
        guard mirror.withLock({ $0.radios.deviceEnded }) else { return }
        radioWatch?.cancel()
        radioWatch = nil
        let source = mirror.withLock { mirror in
            mirror.radios.closeDevice()
            return mirror.radios.source.description
        }
        warn("radios: \(source)")
    }

    /// `body` hears of every input after it was applied, from now on.
    public func follow(_ body: @escaping (CoreUpdate) -> Void) { followers.append(body) }

    public var state: NetworkState { mirror.state }

    /// The connectivity probe's verdict joins the host's answer.
    public func record(connectivity: ConnectivityStatus) {
        settle(mirror.withLock { $0.state.apply([.connectivity(connectivity)]) })
    }

    /// The probe's verdict on one uplink other than the primary (`ValidatedInterfaces`).
    public func record(uplink index: Int32, connectivity: ConnectivityVerdict) {
        settle(mirror.withLock { $0.state.apply([.uplinkConnectivity(index: index, connectivity)]) })
    }

    /// New interface rules, priorities and resolver settings (a reload).
    public func reconfigure(_ configuration: CoreConfiguration) {
        let classifier = Classifier(rules: configuration.rules, priorities: configuration.priorities)
        hostChecks.reconfigure(configuration.resolverOptions, rate: configuration.lookupRate)
        configureStallDetection(configuration.stall)
        settle(mirror.withLock { $0.state.reclassify(with: classifier) })
    }

    /// The host resumed from sleep: the kernel's state is dumped afresh (as after an overrun),
    /// cached DNS answers are dropped, and every follower hears of a routing move, so targets are
    /// asked again (through DNS) with their backoff started afresh.
    public func resumed() {
        hostChecks.forgetAnswers()
        mirror.withLock { $0.requestResync() }
        settle(nil, routingMoved: true)
    }

    /// Starts a host check; `completion` runs once, on the loop.
    public func checkHost(_ request: HostCheckRequest) {
        guard let answered = checkAnswered else { return hostChecks.start(request) }
        let started = ContinuousClock.now
        let box = UncheckedSendable(answered)
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
    public func checkHost(
        _ name: String, timeout: Duration, owner: LookupOwner = .system, routing: HostRouting = .asThisProcess,
        completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void
    ) -> UInt64 {
        lastCheckID += 1
        let id = lastCheckID
        checkHost(HostCheckRequest(id: id, name: name, owner: owner, routing: routing, deadline: .now + timeout, completion: completion))
        return id
    }

    public func cancelHostCheck(_ id: UInt64) { hostChecks.cancel(id) }

    /// Ends every host check (the front end is stopping).
    public func cancelHostChecks() { hostChecks.cancelAll() }

    /// See `HostChecks.disable(because:)`.
    public func disableHostChecks(because reason: String) { hostChecks.disable(because: reason) }

    /// The last stall poll's report while online; nil before the first, offline, or when off.
    public var stallReport: StallReport? { stallWatch?.lastReport }

    /// Starts, retunes or stops stall detection. Off, every verdict is forgotten.
    private func configureStallDetection(_ settings: StallSettings?) {
        guard let settings else {
            stallWatch?.cancel()
            stallWatch = nil
            return
        }
        if let stallWatch { return stallWatch.settings = settings }
        do {
            let watch = try StallWatch(
                settings: settings, namespacePath: namespacePath, loop: loop, warn: warn,
                context: { [unowned self] in
                    let timeouts = self.hostChecks.consecutiveDNSTimeouts
                    return self.mirror.withState { ($0.addresses, $0.dnsTimeoutsByLink(consecutive: timeouts)) }
                },
                verdicts: { [unowned self] verdicts in
                    self.settle(self.mirror.withLock { $0.state.apply([.stalls(verdicts)]) })
                })
            watch.polled = stallPolled
            stallWatch = watch
            hostChecks.dnsTimedOut = { [unowned self] in self.stallWatch?.evidenceArrived() }
            watch.follow(online: state.host.state == .online)
        } catch {
            warn("stall detection off: cannot open a sock_diag socket: \(error)")
        }
    }

    /// The kernel gives a route's time left in hundredths of a second, rounded down from its own
    /// ticks, and stops using it only after its deadline: looked at this much later, the kernel's
    /// answer is past doubt (a negative `rta_expires`), yet well within a second.
    static let lifetimeMargin: Duration = .milliseconds(50)

    /// One journal line for a burst of dropped announcements (the Engine rate-limits them).
    static func line(for drops: AnnouncementDrops) -> String {
        "router advertisements on \(drops.interfaceName): \(drops.count) announcement(s) dropped: more than "
            + "\(LinkAnnouncements.routerCapacity) routers announce NAT64 prefixes, or a router that is no default router "
            + "announces another portal (more are counted in reachd_announcements_dropped_total, told here at most once a minute)"
    }

    /// `routingMoved`: the routing may have moved though the epoch did not (a resume).
    private func settle(_ change: ReachabilityChange?, routingMoved: Bool = false) {
        let (incidents, resync, dumping, epoch, online, expiry) = mirror.withLock {
            ($0.takeIncidents(), $0.resyncDeadline, $0.isDumping, $0.state.routingEpoch, $0.state.host.state == .online,
             $0.state.nextExpiry)
        }
        expiryTimer?.schedule(orDisableAt: dumping ? nil : expiry.map { $0 + Self.lifetimeMargin })
        stallWatch?.follow(online: online)
        for incident in incidents { warn("netlink: \(incident)") }
        for drops in mirror.withLock({ $0.state.takeAnnouncementDrops() }) { warn(Self.line(for: drops)) }
        resyncTimer?.schedule(orDisableAt: resync)
        if dumping != netlinkPaused {
            netlinkPaused = dumping
            netlinkWatch?.setEvents(dumping ? [] : .readable)
        }
        let moved = epoch != lastRoutingEpoch || routingMoved
        if moved {
            lastRoutingEpoch = epoch
            hostChecks.networkChanged()
        }
        undelivered.append(CoreUpdate(change: change, routingMoved: moved, routingEpoch: epoch))
        guard !delivering else { return }
        delivering = true
        defer { delivering = false }
        var next = 0
        while next < undelivered.count {
            let update = undelivered[next]
            next += 1
            for follower in followers { follower(update) }
        }
        undelivered.removeAll(keepingCapacity: true)
    }
}
