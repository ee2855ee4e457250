#if canImport(Glibc)
import Glibc
#endif

/// What a poll is judged against, read from the core's state as the dump completes.
package struct StallContext {
    package var addresses: [Address]
    package var dnsTimeouts: [Int32: Int]
    /// Each link's nameservers beyond its own subnets (`NetworkState.stallNameservers`).
    package var nameservers: [Int32: [IPAddress]]
}

/// Passive stall detection on the core's loop: sock_diag dumps of the host's TCP sockets, read as
/// the kernel answers (never waited for), and the last counters of each socket as it closes,
/// judged by the pure `StallEvaluator`; the verdicts go back to the core as an input like any
/// other, so a flip reaches subscribers through the one diff.
///
/// Cadence follows suspicion: every `suspectInterval` (2 s), or as a suspected wait reaches the
/// window if sooner, while a stall is suspected or
/// flagged; every `pollInterval` (20 s) while traffic moves (10 s while it is busy or has data
/// in flight), backing off to 160 s while sockets sit idle; and no timer at all while the host
/// has no TCP traffic to judge. Then a closing socket or the neighbour table's activity (a host
/// that starts talking resolves its gateway) brings the next poll a second later. While offline
/// nothing is polled and no verdict is kept.
/// Loop-thread only.
package final class StallWatch {
    private var dumper: TCPSocketDumper
    private var closures: TCPClosures?
    private var neighbours: NeighbourActivity?
    private var evaluator: StallEvaluator
    /// The watched units' own verdicts, from the same dumps.
    private var groups: ControlGroupStalls
    private var sources: [any LoopSource] = []
    private var timer: (any LoopSource)?
    /// When the timer is armed for, nil while disarmed.
    private var planned: ContinuousClock.Instant?
    private let warn: (String) -> Void
    /// What a poll is judged against, read from the core when the dump completes.
    private let context: () -> StallContext
    /// Hands the verdicts to the core (an input: the core settles it like any other).
    private let verdicts: ([LinkStall]) -> Void
    private let origin = ContinuousClock.now
    /// Polling: the host has a path.
    private var active = false
    /// Verdicts were handed over since the last time none were: they need forgetting when
    /// polling stops.
    private var holdsVerdicts = false
    /// The last poll failed: the next failure is not worth another warning.
    private var failing = false
    /// The connections of the last poll's rechecks, closed at the next poll.
    private var rechecks: [RecheckConnection] = []
    /// reachd's own questions to the suspect links' nameservers, by link: asked again at every
    /// poll while the link stays suspected, dropped once answered or no longer asked for.
    private var nameserverChecks: [Int32: NameserverCheck] = [:]
    package private(set) var lastReport: StallReport?
    /// The namespace whose sockets are judged (nil: the loop's own), whose counters are read too.
    private let namespacePath: String?
    /// Told of every completed poll while online (reachd runs its probe on a suspicion).
    package var polled: ((StallReport) -> Void)?

    package init(
        settings: StallSettings, namespacePath: String?, loop: any EventLoopProtocol, warn: @escaping (String) -> Void,
        context: @escaping () -> StallContext,
        verdicts: @escaping ([LinkStall]) -> Void
    ) throws(SystemError) {
        // One dump of both families: half the fixed cost of a poll (BENCHMARKS.md).
        dumper = try TCPSocketDumper(namespacePath: namespacePath, request: .bothFamilies)
        self.namespacePath = namespacePath
        evaluator = StallEvaluator(settings: settings, ownUID: geteuid())
        groups = ControlGroupStalls(settings: settings)
        self.warn = warn
        self.context = context
        self.verdicts = verdicts
        sources.append(try loop.addWatch(fd: dumper.fileDescriptor, events: .readable) { [unowned self] _ in self.dumpReadable() })
        // The triggers are worth having, not worth failing for: without them polls still come
        // while there is traffic, and a new application's traffic is judged at the next event.
        do {
            let closures = try TCPClosures(namespacePath: namespacePath)
            sources.append(try loop.addWatch(fd: closures.fileDescriptor, events: .readable) { [unowned self] _ in self.closed() })
            self.closures = consume closures
        } catch {
            warn("stall detection: cannot follow closing TCP sockets (\(error)); polls alone judge the traffic")
        }
        do {
            let neighbours = try NeighbourActivity(namespacePath: namespacePath)
            sources.append(try loop.addWatch(fd: neighbours.fileDescriptor, events: .readable) { [unowned self] _ in self.neighbourActivity() })
            self.neighbours = consume neighbours
        } catch {
            warn("stall detection: cannot follow the neighbour table (\(error)); new traffic is judged at the next closing socket")
        }
        timer = try loop.addTimer(urgent: false) { [unowned self] in self.due() }
    }

    package var settings: StallSettings {
        get { evaluator.settings }
        set {
            guard newValue != evaluator.settings else { return }
            evaluator = StallEvaluator(settings: newValue, ownUID: geteuid())
            let watched = groups.groups
            evaluator.separateGroups = watched
            groups = ControlGroupStalls(settings: newValue)
            groups.groups = watched
            if active { plan(at: .now) }
        }
    }

    /// The control groups (cgroup v2 ids) whose own traffic is judged apart; a new one is
    /// judged from the next poll.
    package var controlGroups: Set<UInt64> {
        get { groups.groups }
        set {
            groups.groups = newValue
            evaluator.separateGroups = groups.groups
        }
    }

    /// After every input: polling starts (with a first poll `baselineDelay` later) when the
    /// host comes online and stops when it goes offline or local.
    package func follow(online: Bool) {
        guard online != active else { return }
        active = online
        evaluator.reset()
        groups.reset()
        lastReport = nil
        rechecks = []
        nameserverChecks = [:]
        neighbours?.listen(false)
        planned = nil
        // Also when going offline: the timer's next shot forgets the verdicts, outside the
        // settle that is running now (the core would queue an input handed in from inside it,
        // but the stall watch is told before that settle has even made its update).
        if online { plan(at: .now + Self.baselineDelay) }
        else if holdsVerdicts { timer?.schedule(at: .now) } else { timer?.disable() }
    }

    /// A dump costs the loop about a millisecond however few sockets there are (the kernel walks
    /// its whole TCP hash table), and coming online is a burst: addresses, routes, often the link
    /// going again. The first poll waits for the burst to pass, so it delays none of it, and a
    /// link flapping faster than this is never polled.
    package static let baselineDelay: Duration = .seconds(1)

    /// How soon after a trigger (a socket closing, the neighbour table moving) a poll comes: the
    /// traffic that began has had a moment to show, and a burst of closes is one poll.
    package static let triggerDelay: Duration = .seconds(1)

    /// Stops for good (detection was turned off): verdicts forgotten, at once. (A watch that is
    /// merely released ends its loop sources with it.)
    package func cancel() {
        for source in sources { source.cancel() }
        sources = []
        timer?.cancel()
        timer = nil
        active = false
        rechecks = []
        nameserverChecks = [:]
        if holdsVerdicts { verdicts([]) }
    }

    /// Arms the timer for `instant` unless it is armed for sooner.
    private func plan(at instant: ContinuousClock.Instant) {
        if let planned, planned <= instant { return }
        planned = instant
        timer?.schedule(at: instant)
        neighbours?.listen(false)
    }

    private func due() {
        planned = nil
        guard active else {
            if holdsVerdicts {
                holdsVerdicts = false
                verdicts([])
            }
            return
        }
        do {
            // A dump still under way (the kernel never finished it) is abandoned by start().
            try dumper.start()
        } catch {
            failed(error)
        }
    }

    private func dumpReadable() {
        let samples: [TCPSocketSample]
        do {
            guard let complete = try dumper.readable() else { return }
            samples = complete
        } catch {
            return failed(error)
        }
        // A dump that completes after the host went offline is dropped.
        guard active else { return }
        if failing {
            failing = false
            warn("stall detection: the TCP socket dump works again")
        }
        let now = ContinuousClock.now
        let context = context()
        let answers = nameserverChecks.values.map {
            StallNameserverAnswer(interfaceIndex: $0.interfaceIndex, since: $0.since, answered: $0.answered())
        }
        // The count is of reachd's own namespace: for another one's sockets it says nothing.
        var report = evaluator.poll(
            at: now - origin, samples: samples, addresses: context.addresses, dnsTimeouts: context.dnsTimeouts,
            nameservers: answers, retransmissionsRefused: RefusedRetransmissions.counts(namespacePath))
        let own = groups.poll(at: now - origin, samples: samples, addresses: context.addresses)
        report.controlGroups = own.verdicts
        if let wanted = own.nextPoll { report.nextPoll = min(report.nextPoll ?? wanted, wanted) }
        lastReport = report
        rechecks = report.rechecks.compactMap(RecheckConnection.init)
        ask(report.nameserverChecks, servers: context.nameservers, answered: answers, at: now - origin)
        if let next = report.nextPoll {
            plan(at: now + next)
        } else if planned == nil {
            // Nothing to judge: no timer until traffic shows.
            timer?.disable()
            neighbours?.listen(true)
        }
        holdsVerdicts = holdsVerdicts || !report.links.isEmpty
        verdicts(report.links)
        polled?(report)
    }

    /// Keeps one question going to a nameserver of each link the report asks about (a fresh one
    /// after an answer, so silence is always counted from the latest answer), and drops the rest.
    private func ask(_ links: [Int32], servers: [Int32: [IPAddress]], answered: [StallNameserverAnswer], at now: Duration) {
        for answer in answered where answer.answered { nameserverChecks[answer.interfaceIndex] = nil }
        let wanted = Set(links)
        for link in nameserverChecks.keys where !wanted.contains(link) { nameserverChecks[link] = nil }
        for link in links {
            if nameserverChecks[link] == nil {
                // The servers in resolv.conf's order: the first that a socket can reach.
                nameserverChecks[link] = servers[link]?.lazy.compactMap { NameserverCheck(interfaceIndex: link, server: $0, at: now) }.first
            }
            nameserverChecks[link]?.ask()
        }
    }

    /// Sockets closed: their last counters are evidence, and a sign of traffic.
    private func closed() {
        guard let samples = closures?.readable(), active, !samples.isEmpty else { return }
        let now = ContinuousClock.now
        var soon = false
        for sample in samples {
            if groups.closed(sample, at: now - origin) == .failing { soon = true }
            switch evaluator.closed(sample, at: now - origin) {
            case .ignored: break
            case .failing: soon = true
            case .traffic: soon = soon || planned == nil
            }
        }
        if soon { plan(at: now + Self.triggerDelay) }
    }

    /// Evidence from elsewhere (reachd's own DNS lookups timed out): judged at a poll soon.
    package func evidenceArrived() {
        guard active else { return }
        plan(at: .now + Self.triggerDelay)
    }

    private func neighbourActivity() {
        guard neighbours?.drain() == true, active, planned == nil else { return }
        plan(at: .now + Self.triggerDelay)
    }

    /// A lost poll: said once, tried again after the usual interval; the verdicts stand.
    private func failed(_ error: SocketDiagError) {
        if !failing { warn("stall detection: cannot dump the TCP sockets: \(error); trying again every \(evaluator.settings.pollInterval)") }
        failing = true
        if active { plan(at: .now + evaluator.settings.pollInterval) }
    }
}
