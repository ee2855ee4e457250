/// What a `TargetFollower` drives, on the one loop (thread, queue) the follower lives on.
package protocol TargetFollowerDriver: AnyObject {
    /// The clock the timer runs on.
    var now: ContinuousClock.Instant { get }
    /// An address's answer now; never waits.
    func check(address: String) -> CheckResult
    /// Starts a check of host `name` that answers within `timeout`. `done` runs once, on the
    /// follower's loop, with the answer, or nil when the check was cancelled; it may run before
    /// this returns. The id is for `cancelHostCheck`.
    func startHostCheck(_ name: String, timeout: Duration, done: @escaping (CheckResult?) -> Void) -> UInt64
    func cancelHostCheck(_ id: UInt64)
    /// Arms the one timer for `at`, replacing the previous arming, or disarms it (nil). When it
    /// fires, the driver calls `timerFired()`.
    func scheduleTimer(at: ContinuousClock.Instant?)
    /// A followed target was answered (again): `previous` is the answer before, the pending
    /// `CheckResult(target:)` before the first. Repeats are possible; the driver drops them.
    func answered(_ target: String, _ result: CheckResult, previous: CheckResult)
}

/// Follows targets for any number of followers: one answer and at most one host check in flight
/// per distinct target, however many follow it; every target asked again when the routing facts
/// move. Thousands of names whose DNS is dead cost a bounded number of lookups at a time
/// (`Settings.maxInFlight`) and a heap operation per retry, never a walk over every target.
/// Work for many targets at once (a routing change, names overdue when DNS times out) is done
/// `batch` targets per turn of the loop, the rest on the timer armed for now: each answer may
/// become a D-Bus signal, and 2,000 of them in one turn held reachd's loop for 200 ms.
///
/// A host whose lookup timed out or failed is asked again after `firstRetry`, then twice as long
/// each time up to `lastRetry`, each delay shifted by up to `jitter` of itself either way so that
/// names which failed together do not come back together. A routing change asks every host again
/// at once and starts its backoff afresh; one that comes while a host's check is in flight has it
/// asked once more when that check ends (a burst of changes costs two lookups, not one per change).
///
/// Loop-agnostic and not thread-safe: every call, and every `done` of a check, on the driver's
/// loop. `CoreTargets` drives it on a core's loop: sd-event in reachd, the monitor's thread in-process.
package final class TargetFollower {
    package struct Settings: Sendable {
        /// Host checks in flight at once; more wait in line, oldest first.
        package var maxInFlight: Int
        /// The deadline of a host check (`DefaultTimeout=`).
        package var hostTimeout: Duration
        package var firstRetry: Duration = .seconds(1)
        package var lastRetry: Duration = .seconds(300)
        package var jitter = 0.2
        /// Where the jitter comes from (a fixed value in tests).
        package var random: @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }

        /// `maxInFlight` is half of the resolver's `lookups` at once, so followed targets on a dead
        /// DNS server neither fill the resolver's queue (where they would time out unasked) nor
        /// keep one-off host checks waiting behind them.
        package init(lookups: Int, hostTimeout: Duration) {
            maxInFlight = max(1, lookups / 2)
            self.hostTimeout = hostTimeout
        }

        /// `delay` shifted by up to `jitter` of itself, either way.
        package func jittered(_ delay: Duration) -> Duration { delay * random((1 - jitter)...(1 + jitter)) }
    }

    /// One distinct followed target.
    private final class Target {
        let name: String
        let isAddress: Bool
        var followers = 1
        /// nil before the first answer.
        var result: CheckResult?
        /// The host check in flight (`starting` while `startHostCheck` has not returned).
        var pendingCheck: UInt64?
        /// The routing moved while its check was in flight: asked once more when it ends.
        var askAgain = false
        /// Waiting in line for a lookup slot, since `queuedAt`.
        var queued = false
        var queuedAt = ContinuousClock.Instant.now
        var retryDelay: Duration
        /// Its live retry entry in the heap; older entries are skipped.
        var retryToken: UInt64?

        init(_ name: String, retry: Duration) {
            self.name = name
            isAddress = AddressTarget.looksLikeAddress(name)
            retryDelay = retry
        }

        var isFollowed: Bool { followers > 0 }
    }

    /// `pendingCheck` while `startHostCheck` has not returned.
    private static let starting = UInt64.max

    /// A change (a reload) applies from the next check and retry on.
    package var settings: Settings
    private unowned let driver: any TargetFollowerDriver
    private var targets: [String: Target] = [:]
    private var retries = DeadlineHeap<(target: Target, token: UInt64)>()
    private var nextToken: UInt64 = 0
    private var armedAt: ContinuousClock.Instant?
    /// Hosts waiting for a lookup slot, oldest first from `readyHead`. Those before
    /// `overdueHead` have been told that DNS did not answer in time (`answerOverdue`).
    private var ready: [Target] = []
    private var readyHead = 0
    private var overdueHead = 0
    private var inFlight = 0
    /// `startReady` is running: a check answered at once must not start the line again inside it.
    private var draining = false
    /// Targets a routing change has yet to look at again, from `revisitHead`.
    private var revisits: [Target] = []
    private var revisitHead = 0
    /// Names in line are overdue beyond the last batch `answerOverdue` answered.
    private var overdueLeft = false
    /// Targets answered per turn of the loop when many are due at once (reachd's watches route
    /// their users' views again as many per turn).
    package static let batch = 64

    /// `driver` outlives the follower (it usually owns it).
    package init(settings: Settings, driver: any TargetFollowerDriver) {
        self.settings = settings
        self.driver = driver
    }

    /// Distinct targets followed.
    package var count: Int { targets.count }
    /// Host checks in flight now.
    package var checksInFlight: Int { inFlight }

    /// The answer of a followed target; nil before the first, and when nobody follows it.
    package func answer(for target: String) -> CheckResult? { targets[target]?.result }

    /// One more follower of `name`. The first has it checked: an address at once, returned
    /// (without `answered`), a host through `answered`. A later follower gets the answer already
    /// known, if any, returned.
    @discardableResult
    package func follow(_ name: String) -> CheckResult? {
        if let target = targets[name] {
            target.followers += 1
            return target.result
        }
        let target = Target(name, retry: settings.firstRetry)
        targets[name] = target
        if target.isAddress {
            target.result = driver.check(address: name)
            return target.result
        }
        ask(target)
        return nil
    }

    /// One follower fewer; with the last go the target's check and retry.
    package func unfollow(_ name: String) {
        guard let target = targets[name] else { return }
        target.followers -= 1
        guard !target.isFollowed else { return }
        targets.removeValue(forKey: name)
        target.retryToken = nil
        if let pending = target.pendingCheck, pending != Self.starting { driver.cancelHostCheck(pending) }
        scheduleTimer()
    }

    /// The routing facts moved: addresses are answered again, hosts asked again (through the
    /// cache, so DNS is asked only when an answer expired) with their backoff started afresh.
    /// A walk not finished when the routing moves again is replaced: the new one has every target.
    package func routingChanged() {
        revisits = Array(targets.values)
        revisitHead = 0
        revisitSome()
        scheduleTimer()
    }

    /// Looks again at the next `batch` targets of the routing change's walk.
    private func revisitSome() {
        var looked = 0
        while looked < Self.batch, revisitHead < revisits.count {
            let target = revisits[revisitHead]
            revisitHead += 1
            guard target.isFollowed else { continue }
            looked += 1
            if target.isAddress {
                update(target, driver.check(address: target.name))
                continue
            }
            target.retryDelay = settings.firstRetry
            target.retryToken = nil
            if target.pendingCheck != nil { target.askAgain = true }
            ask(target)
        }
        if revisitHead == revisits.count {
            revisits = []
            revisitHead = 0
        }
    }

    /// Work is left for the next turn of the loop.
    private var workLeft: Bool { revisitHead < revisits.count || overdueLeft }

    /// The timer armed through `scheduleTimer(at:)` fired: asks the hosts whose retry is due, and
    /// goes on with work left from the last turn.
    package func timerFired() {
        armedAt = nil
        let now = driver.now
        while let first = retries.first, first.instant <= now {
            retries.removeFirst()
            guard Self.isLive(first.instant, first.key) else { continue }
            first.key.target.retryToken = nil
            ask(first.key.target)
        }
        revisitSome()
        if overdueLeft { answerOverdue() }
        scheduleTimer()
    }

    /// Starts a lookup of `target` now, or puts it in line while `maxInFlight` run.
    private func ask(_ target: Target) {
        guard target.pendingCheck == nil, !target.queued else { return }
        if inFlight < settings.maxInFlight {
            start(target)
        } else {
            target.queued = true
            target.queuedAt = driver.now
            ready.append(target)
        }
    }

    private func start(_ target: Target) {
        target.retryToken = nil
        target.askAgain = false
        inFlight += 1
        // The answer may come at once (cache, localhost, no reachable DNS server), before
        // startHostCheck returns: mark the check as started first, so that `done` can clear it.
        target.pendingCheck = Self.starting
        let id = driver.startHostCheck(target.name, timeout: settings.hostTimeout) { [weak self] result in
            self?.finished(target, result)
        }
        if target.pendingCheck == Self.starting { target.pendingCheck = id }
    }

    private func finished(_ target: Target, _ result: CheckResult?) {
        target.pendingCheck = nil
        inFlight -= 1
        if target.isFollowed, let result {
            update(target, result)
            if target.askAgain {
                target.retryDelay = settings.firstRetry
                ask(target)
            } else if result.reason == .dnsTimeout || result.reason == .dnsFailure {
                retry(target, at: driver.now + settings.jittered(target.retryDelay))
                target.retryDelay = min(target.retryDelay * 2, settings.lastRetry)
            } else {
                target.retryDelay = settings.firstRetry
            }
            if result.reason == .dnsTimeout { answerOverdue() }
        }
        startReady()
        scheduleTimer()
    }

    private func retry(_ target: Target, at instant: ContinuousClock.Instant) {
        nextToken += 1
        target.retryToken = nextToken
        retries.insert(instant, (target, nextToken))
    }

    /// DNS is timing out, and targets have waited longer than a check's deadline for a slot:
    /// they are answered dnsTimeout now, as a check of them would have been, instead of showing
    /// no answer for minutes while thousands of names wait for a dead server. They keep their
    /// place and are still asked in turn. In line in time order, so the walk stops at the first
    /// recent one and never passes a target twice.
    private func answerOverdue() {
        let due = driver.now - settings.hostTimeout
        overdueHead = max(overdueHead, readyHead)
        var answered = 0
        overdueLeft = false
        while overdueHead < ready.count, ready[overdueHead].queuedAt <= due {
            guard answered < Self.batch else {
                overdueLeft = true
                return
            }
            let target = ready[overdueHead]
            overdueHead += 1
            guard target.queued, target.isFollowed, target.result?.reason != .dnsTimeout else { continue }
            answered += 1
            var result = CheckResult(target: target.name, reason: .dnsTimeout)
            result.message = "no DNS answer before the deadline: the lookups ahead of this name timed out"
            update(target, result)
        }
    }

    /// Starts targets in line while slots are free, oldest first.
    private func startReady() {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while inFlight < settings.maxInFlight, readyHead < ready.count {
            let target = ready[readyHead]
            readyHead += 1
            target.queued = false
            if target.isFollowed { ask(target) }
        }
        // Drop the consumed prefix once it is all there is, or large enough to be worth a copy.
        if readyHead == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
            overdueHead = 0
        } else if readyHead >= 1024 {
            ready.removeFirst(readyHead)
            overdueHead = max(0, overdueHead - readyHead)
            readyHead = 0
        }
    }

    /// Arms the driver's timer for the earliest live retry, or now while work is left, when that moved.
    private func scheduleTimer() {
        retries.prune(isCurrent: Self.isLive)
        if retries.count > 2 * targets.count + 64 { retries.compact(isCurrent: Self.isLive) }
        let next = workLeft ? driver.now : retries.first?.instant
        guard next != armedAt else { return }
        armedAt = next
        driver.scheduleTimer(at: next)
    }

    /// A retry entry is live while its target is followed and has not been given a newer one.
    private static func isLive(_: ContinuousClock.Instant, _ key: (target: Target, token: UInt64)) -> Bool {
        key.target.retryToken == key.token && key.target.isFollowed
    }

    private func update(_ target: Target, _ result: CheckResult) {
        let previous = target.result ?? CheckResult(target: target.name)
        target.result = result
        driver.answered(target.name, result, previous: previous)
    }
}
