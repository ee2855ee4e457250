import Synchronization

/// Targets followed in this process: `CoreTargets` on a `ReachabilityMonitor`'s own thread, the
/// one its core runs on, so answers come out in the order they were found, a newer one is never
/// overtaken by an older one, and nothing else runs. SystemConfiguration's in-process backend
/// and reachctl's in-process monitor follow targets through it.
///
/// Callers only count followers per target; the thread follows a target while it has any and
/// catches up in one pass however many calls came meanwhile, so a burst of references made and
/// dropped costs no more than the targets it names.
package final class MonitorTargets: Sendable {
    /// Gets every answer of a followed target (repeats included), on the monitor's thread,
    /// outside the lock: it may follow and unfollow, or drop a reference whose deinit does.
    package typealias Answered = @Sendable (_ target: String, _ result: CheckResult) -> Void

    private let monitor: ReachabilityMonitor
    private let side: ThreadSide

    /// `ended` runs once when the monitor has stopped or after `stop()`.
    package init(
        monitor: ReachabilityMonitor, settings: TargetFollower.Settings,
        answered: @escaping Answered, ended: @escaping @Sendable () -> Void = {}
    ) {
        self.monitor = monitor
        side = ThreadSide(answered, ended)
        let side = side
        monitor.onStop { side.end() }
        monitor.onThread { core, loop in
            let targets = CoreTargets(checks: core, state: core.shared, loop: loop, settings: settings) { target, result, _ in side.publish(target, result) }
            side.targets = targets
            core.follow { [weak targets] update in if update.routingMoved { targets?.follower.routingChanged() } }
        }
    }

    deinit { stop() }

    /// Stops re-checking on routing changes and retrying; answers of checks in flight are dropped.
    package func stop() {
        let side = self.side
        if !monitor.onThread({ _, _ in side.end() }) { side.finish() }
    }

    /// One more follower of `target`: `known` gets the answer already known, if any, before this
    /// returns and before any later answer; the first follower's answers come to `answered`.
    /// `known` runs under the lock: it must not call this type, nor drop a reference whose
    /// deinit does.
    package func follow(_ target: String, known: (CheckResult) -> Void) {
        change(target) { wanted, answer in
            wanted += 1
            if let answer { known(answer) }
            return wanted == 1
        }
    }

    /// One follower fewer. Never waits.
    package func unfollow(_ target: String) {
        change(target) { wanted, _ in
            wanted -= 1
            return wanted == 0
        }
    }

    /// Counts a follower in or out; when `body` says the target starts or stops being followed,
    /// the thread is asked to catch up (once for all the calls until it does).
    private func change(_ target: String, _ body: (inout Int, CheckResult?) -> Bool) {
        let first = side.shared.withLock { shared -> Bool in
            var wanted = shared.wanted[target] ?? 0
            let moved = body(&wanted, shared.answers[target])
            shared.wanted[target] = wanted > 0 ? wanted : nil
            guard moved else { return false }
            shared.dirty.append(target)
            return shared.dirty.count == 1
        }
        let side = self.side
        if first { monitor.onThread { _, _ in side.catchUp() } }
    }

    /// The last answer of a followed target, once it has one.
    package func answer(for target: String) -> CheckResult? { side.shared.withLock { $0.answers[target] } }

    /// Distinct targets followed now.
    package var count: Int { side.shared.withLock { $0.wanted.count } }

    /// The follower and what it follows, on the monitor's thread only; and under a lock, what
    /// callers want followed and the answers known.
    private final class ThreadSide: @unchecked Sendable {
        struct Shared {
            /// Followers per target.
            var wanted: [String: Int] = [:]
            var answers: [String: CheckResult] = [:]
            /// Targets that started or stopped being wanted since the thread last caught up.
            var dirty: [String] = []
        }
        let shared = Mutex(Shared())
        var targets: CoreTargets?
        private var followed: Set<String> = []
        private let answered: Answered
        private let ended: Mutex<(@Sendable () -> Void)?>

        init(_ answered: @escaping Answered, _ ended: @escaping @Sendable () -> Void) {
            self.answered = answered
            self.ended = Mutex(ended)
        }

        /// Follows what is wanted and lets go of the rest.
        func catchUp() {
            let dirty = shared.withLock { shared in defer { shared.dirty = [] }; return shared.dirty }
            guard let follower = targets?.follower else { return }
            for target in dirty {
                let wanted = shared.withLock { $0.wanted[target] != nil }
                guard wanted != followed.contains(target) else { continue }
                if wanted {
                    followed.insert(target)
                    if let answer = follower.follow(target) { publish(target, answer) }
                } else {
                    followed.remove(target)
                    follower.unfollow(target)
                    shared.withLock { $0.answers[target] = nil }
                }
            }
        }

        /// Records the answer under the lock, then hands it on outside it. A `known` answer is
        /// still never older than a later one: `follow` hands it under the lock, so it is either
        /// this answer (handed again here: a repeat) or one before it, handed before this was
        /// recorded; and answers are published one at a time, on this thread. Outside the lock,
        /// because `answered` runs the callers' code, which may drop the last reference to one
        /// of theirs and so unfollow (SCNetworkReachability's deinit): under the lock that was a
        /// recursive lock of `shared`, a trap.
        func publish(_ target: String, _ result: CheckResult) {
            shared.withLock { $0.answers[target] = result }
            answered(target, result)
        }

        /// On the monitor's thread: drops the follower, then says so.
        func end() {
            targets = nil
            finish()
        }

        /// Runs `ended` the first time; from any thread.
        func finish() { ended.withLock { body in defer { body = nil }; return body }?() }
    }
}
