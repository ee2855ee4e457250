import Synchronization

/// A `TargetFollower` on a core's loop, used on the loop's thread only: the loop's timer, the
/// core's checks, each answer to `answered`. reachd's watches follow targets through it on
/// sd-event, `MonitorTargets` on an in-process monitor's thread.
public final class CoreTargets: TargetFollowerDriver {
    public typealias Answered = (_ target: String, _ result: CheckResult, _ previous: CheckResult) -> Void

    private let core: ReachabilityCore
    private let loop: any EventLoopProtocol
    private let onAnswer: Answered
    /// Set once, right after init (the follower needs its driver).
    public private(set) var follower: TargetFollower!
    private var timer: (any LoopSource)?

    public init(core: ReachabilityCore, loop: any EventLoopProtocol, settings: TargetFollower.Settings, answered: @escaping Answered) {
        self.core = core
        self.loop = loop
        onAnswer = answered
        follower = TargetFollower(settings: settings, driver: self)
    }

    public var now: ContinuousClock.Instant { .now }

    public func check(address: String) -> CheckResult { core.mirror.check(address: address) }

    public func startHostCheck(_ name: String, timeout: Duration, done: @escaping (CheckResult?) -> Void) -> UInt64 {
        if case let .failure(error) = HostName.validate(name) {
            done(.invalid(name, error.description))
            return 0
        }
        // The core answers on this loop's thread: `done` never crosses.
        let done = UncheckedSendable(done)
        return core.checkHost(name, timeout: timeout) { outcome in done.value(try? outcome.get()) }
    }

    public func cancelHostCheck(_ id: UInt64) { core.cancelHostCheck(id) }

    public func scheduleTimer(at instant: ContinuousClock.Instant?) {
        if timer == nil, instant != nil {
            timer = try? loop.addTimer(urgent: false) { [unowned self] in follower.timerFired() }
        }
        timer?.schedule(orDisableAt: instant)
    }

    public func answered(_ target: String, _ result: CheckResult, previous: CheckResult) { onAnswer(target, result, previous) }
}

/// Targets followed in this process: `CoreTargets` on a `ReachabilityMonitor`'s own thread, the
/// one its core runs on, so answers come out in the order they were found, a newer one is never
/// overtaken by an older one, and nothing else runs. SystemConfiguration's in-process backend
/// and reachctl's in-process monitor follow targets through it.
public final class MonitorTargets: Sendable {
    /// Gets every answer of a followed target (repeats included), on the monitor's thread.
    public typealias Answered = @Sendable (_ target: String, _ result: CheckResult) -> Void

    private let monitor: ReachabilityMonitor
    private let side: ThreadSide

    /// `ended` runs once when the monitor has stopped or after `stop()`.
    public init(
        monitor: ReachabilityMonitor, settings: TargetFollower.Settings,
        answered: @escaping Answered, ended: @escaping @Sendable () -> Void = {}
    ) {
        self.monitor = monitor
        side = ThreadSide(ended)
        let side = side
        monitor.onStop { side.end() }
        monitor.onThread { core, loop in
            let targets = CoreTargets(core: core, loop: loop, settings: settings) { target, result, _ in
                side.known.withLock { $0.answers[target] = result }
                answered(target, result)
            }
            side.targets = targets
            core.follow { [weak targets] update in if update.routingMoved { targets?.follower.routingChanged() } }
        }
    }

    deinit { stop() }

    /// Stops re-checking on routing changes and retrying; answers of checks in flight are dropped.
    public func stop() {
        let side = self.side
        if !monitor.onThread({ _, _ in side.end() }) { side.finish() }
    }

    /// One more follower of `target`: `known` gets the answer already known, if any
    /// (`TargetFollower.follow`), on the monitor's thread, before any later answer.
    public func follow(_ target: String, known: @escaping @Sendable (CheckResult) -> Void) {
        let side = side
        monitor.onThread { _, _ in
            guard let follower = side.targets?.follower else { return }
            let answer = follower.follow(target)
            side.known.withLock { if let answer { $0.answers[target] = answer }; $0.count = follower.count }
            if let answer { known(answer) }
        }
    }

    /// One follower fewer. Never waits.
    public func unfollow(_ target: String) {
        let side = side
        monitor.onThread { _, _ in
            guard let follower = side.targets?.follower else { return }
            follower.unfollow(target)
            side.known.withLock { $0.answers[target] = follower.answer(for: target); $0.count = follower.count }
        }
    }

    /// The last answer of a followed target, once it has one.
    public func answer(for target: String) -> CheckResult? { side.known.withLock { $0.answers[target] } }

    /// Distinct targets followed now.
    public var count: Int { side.known.withLock { $0.count } }

    /// The follower, touched on the monitor's thread only, and what other threads may read: the
    /// answers known and how many targets are followed.
    private final class ThreadSide: @unchecked Sendable {
        var targets: CoreTargets?
        let known = Mutex<(answers: [String: CheckResult], count: Int)>(([:], 0))
        private let ended: Mutex<(@Sendable () -> Void)?>
        init(_ ended: @escaping @Sendable () -> Void) { self.ended = Mutex(ended) }

        /// On the monitor's thread: drops the follower, then says so.
        func end() {
            targets = nil
            finish()
        }

        /// Runs `ended` the first time; from any thread.
        func finish() { ended.withLock { body in defer { body = nil }; return body }?() }
    }
}
