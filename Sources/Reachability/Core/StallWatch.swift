/// Passive stall detection on the core's loop: every `nextPoll` while the host is online, one
/// sock_diag dump of its TCP sockets, read as the kernel answers (never waited for), judged by
/// the pure `StallEvaluator`; the verdicts go back to the core as an input like any other, so a
/// flip reaches subscribers through the one diff. While offline nothing is polled and no verdict
/// is kept; with no traffic the evaluator backs off (20 s doubling to 160 s by default), so an
/// idle host wakes for this at most 180 times an hour, and much less once backed off.
/// Loop-thread only.
final class StallWatch {
    private var dumper: TCPSocketDumper
    private var evaluator: StallEvaluator
    private var watch: (any LoopSource)?
    private var timer: (any LoopSource)?
    private let warn: (String) -> Void
    /// What a poll is judged against, read from the core when the dump completes.
    private let context: () -> (addresses: [Address], dnsTimeouts: [Int32: Int])
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
    private(set) var lastReport: StallReport?
    /// Told of every completed poll while online (reachd runs its probe on a suspicion).
    var polled: ((StallReport) -> Void)?

    init(
        settings: StallSettings, namespacePath: String?, loop: any EventLoopProtocol, warn: @escaping (String) -> Void,
        context: @escaping () -> (addresses: [Address], dnsTimeouts: [Int32: Int]),
        verdicts: @escaping ([LinkStall]) -> Void
    ) throws(SystemError) {
        // One dump of both families: half the fixed cost of a poll (BENCHMARKS.md).
        dumper = try TCPSocketDumper(namespacePath: namespacePath, request: .bothFamilies)
        evaluator = StallEvaluator(settings: settings)
        self.warn = warn
        self.context = context
        self.verdicts = verdicts
        watch = try loop.addWatch(fd: dumper.fileDescriptor, events: .readable) { [unowned self] _ in self.readable() }
        timer = try loop.addTimer(urgent: false) { [unowned self] in self.due() }
    }

    var settings: StallSettings {
        get { evaluator.settings }
        set {
            guard newValue != evaluator.settings else { return }
            evaluator = StallEvaluator(settings: newValue)
            if active { timer?.schedule(at: .now) }
        }
    }

    /// After every input: polling starts (with a baseline poll `baselineDelay` later) when the
    /// host comes online and stops when it goes offline or local.
    func follow(online: Bool) {
        guard online != active else { return }
        active = online
        evaluator.reset()
        lastReport = nil
        // Also when going offline: the timer's next shot forgets the verdicts, outside the
        // settle that is running now (an input handed in from inside it would nest).
        if online { timer?.schedule(at: .now + Self.baselineDelay) }
        else if holdsVerdicts { timer?.schedule(at: .now) } else { timer?.disable() }
    }

    /// A dump costs the loop about a millisecond however few sockets there are (the kernel walks
    /// its whole TCP hash table), and coming online is a burst: addresses, routes, often the link
    /// going again. The baseline waits for the burst to pass, so it delays none of it, and a link
    /// flapping faster than this is never polled; the first verdict needs two polls anyway.
    static let baselineDelay: Duration = .seconds(1)

    /// Stops for good (detection was turned off): verdicts forgotten, at once. (A watch that is
    /// merely released ends its loop sources with it.)
    func cancel() {
        watch?.cancel()
        timer?.cancel()
        watch = nil
        timer = nil
        active = false
        if holdsVerdicts { verdicts([]) }
    }

    private func due() {
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

    private func readable() {
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
        let (addresses, dnsTimeouts) = context()
        let report = evaluator.poll(at: now - origin, samples: samples, addresses: addresses, dnsTimeouts: dnsTimeouts)
        lastReport = report
        timer?.schedule(at: now + report.nextPoll)
        holdsVerdicts = holdsVerdicts || !report.links.isEmpty
        verdicts(report.links)
        polled?(report)
    }

    /// A lost poll: said once, tried again after the usual interval; the verdicts stand.
    private func failed(_ error: SocketDiagError) {
        if !failing { warn("stall detection: cannot dump the TCP sockets: \(error); trying again every \(evaluator.settings.pollInterval)") }
        failing = true
        if active { timer?.schedule(at: .now + evaluator.settings.pollInterval) }
    }
}
