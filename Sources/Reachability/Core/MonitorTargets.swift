import Dispatch
import Synchronization

/// Targets followed in this process: a `TargetFollower` driven by a `ReachabilityMonitor` (its
/// checks, its `routingChanges()`) on a serial queue of its own, so answers come out in the
/// order they were found and a newer one is never overtaken by an older one. SystemConfiguration's
/// in-process backend and reachctl's in-process monitor follow targets through it.
public final class MonitorTargets: Sendable {
    /// Gets every answer of a followed target (repeats included), on the queue.
    public typealias Answered = @Sendable (_ target: String, _ result: CheckResult) -> Void

    private let queue = DispatchQueue(label: "org.reachd.targets")
    private let driver: Driver
    private let changes: Task<Void, Never>

    /// `ended` runs once when the monitor has stopped or after `stop()`.
    public init(
        monitor: ReachabilityMonitor, settings: TargetFollower.Settings,
        answered: @escaping Answered, ended: @escaping @Sendable () -> Void = {}
    ) {
        let driver = Driver(monitor: monitor, queue: queue, answered: answered)
        driver.follower = TargetFollower(settings: settings, driver: driver)
        self.driver = driver
        let stream = monitor.routingChanges()
        let queue = self.queue
        // Ends with the stream (the monitor finishes it when it stops) or at `stop()`.
        changes = Task {
            for await _ in stream {
                queue.async { if !driver.stopped { driver.follower.routingChanged() } }
            }
            ended()
        }
    }

    deinit { stop() }

    /// Stops re-checking on routing changes and retrying; answers of checks in flight are dropped.
    public func stop() {
        changes.cancel()
        queue.async { [driver] in driver.stopped = true }
    }

    /// One more follower of `target`: `known` gets the answer already known, if any
    /// (`TargetFollower.follow`), on the queue, so that no later answer overtakes it. Never call
    /// it from `answered`.
    public func follow(_ target: String, known: (CheckResult) -> Void) {
        queue.sync {
            guard !driver.stopped, let answer = driver.follower.follow(target) else { return }
            known(answer)
        }
    }

    /// One follower fewer. Never waits.
    public func unfollow(_ target: String) {
        queue.async { [driver] in driver.follower.unfollow(target) }
    }

    /// The last answer of a followed target, once it has one. Never call it from `answered`.
    public func answer(for target: String) -> CheckResult? {
        queue.sync { driver.follower.answer(for: target) }
    }

    /// Distinct targets followed now.
    public var count: Int { queue.sync { driver.follower.count } }

    /// The follower's side, used on the queue only.
    private final class Driver: TargetFollowerDriver, @unchecked Sendable {
        let monitor: ReachabilityMonitor
        let queue: DispatchQueue
        let answered: Answered
        // Set once, right after init.
        var follower: TargetFollower!
        var stopped = false
        /// Tells the newest timer arming from older ones still pending on the queue.
        var timerArming: UInt64 = 0

        init(monitor: ReachabilityMonitor, queue: DispatchQueue, answered: @escaping Answered) {
            self.monitor = monitor
            self.queue = queue
            self.answered = answered
        }

        var now: ContinuousClock.Instant { .now }

        func check(address: String) -> CheckResult { monitor.check(address: address) }

        func startHostCheck(_ name: String, timeout: Duration, done: @escaping (CheckResult?) -> Void) -> UInt64 {
            let done = HandOver(done)
            monitor.check(host: name, deadline: .now + timeout) { [queue] result in
                queue.async { done.take()(try? result.get()) }
            }
            return 0
        }

        /// The monitor's checks end by their deadline: an unfollowed name's answer is dropped then.
        func cancelHostCheck(_ id: UInt64) {}

        func scheduleTimer(at instant: ContinuousClock.Instant?) {
            timerArming += 1
            guard let instant else { return }
            let arming = timerArming
            queue.asyncAfter(deadline: .now() + DispatchTimeInterval(ContinuousClock.now.duration(to: instant))) { [self] in
                guard arming == timerArming, !stopped else { return }
                follower.timerFired()
            }
        }

        func answered(_ target: String, _ result: CheckResult, previous: CheckResult) {
            if !stopped { answered(target, result) }
        }
    }
}

extension DispatchTimeInterval {
    /// `duration` in whole microseconds; a negative one is zero.
    public init(_ duration: Duration) {
        self = .microseconds(Int(max(0, duration.wholeMicroseconds)))
    }
}
