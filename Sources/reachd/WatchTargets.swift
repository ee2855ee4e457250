import Reachability

/// One distinct watched target and the watches that share it: one answer, at most one host
/// check in flight, at most one pending retry.
final class WatchedTarget {
    let target: String
    let isAddress: Bool
    /// The watches on this target, by object path.
    var watches: [String: Watch] = [:]
    var result: CheckResult
    /// The host check in flight, if any (`WatchTargets.starting` while checkHost has not returned).
    var pendingCheck: UInt64?
    /// Waiting in line for a lookup slot (`WatchTargets.maxInFlight`), since `queuedAt`.
    var queued = false
    var queuedAt: ContinuousClock.Instant = .now
    /// False once its last watch went: a queued or in-flight check of it is then forgotten.
    var isWatched = true
    /// The delay before the next attempt after another failure, before jitter.
    var retryDelay = WatchTargets.firstRetry
    /// When the retry heap asks it again: its heap entries with another instant are stale.
    var retryAt: ContinuousClock.Instant?

    init(_ target: String) {
        self.target = target
        isAddress = AddressTarget.looksLikeAddress(target)
        result = CheckResult(target: target)
    }
}

/// The distinct targets of all watches and when each is asked. Thousands of watches on one
/// name cost one lookup per round; thousands of names whose DNS is dead cost a bounded number
/// of lookups at a time and a heap operation per retry, never a walk over every watch.
///
/// A host whose lookup timed out or failed is asked again after 1 s, then twice as long each
/// time up to 5 min, each delay shifted by up to 20% either way so that names which failed
/// together do not come back together. DNS that returns without any network change (a server
/// that restarts) is noticed; a dead one costs one query every few minutes per name. A network
/// change asks every host again at once and starts its backoff afresh.
final class WatchTargets {
    static let firstRetry: Duration = .seconds(1)
    static let lastRetry: Duration = .seconds(300)
    static let jitter = 0.2
    /// `pendingCheck` while `checkHost` has not returned yet (check ids start at 1).
    static let starting: UInt64 = 0

    private let core: ReachabilityCore
    private let bus: BusConnection
    private let loop: EventLoop
    /// A host check's deadline (`DefaultTimeout=`).
    private var timeout: Duration = .seconds(5)
    private var maxConcurrentLookups = 64
    private var targets: [String: WatchedTarget] = [:]
    private var retries = DeadlineHeap<WatchedTarget>()
    private var retryTimer: EventSource?
    /// Host targets waiting for a lookup slot, oldest first from `readyHead`. Those before
    /// `overdueHead` have been told that DNS did not answer in time (see `answerOverdue`).
    private var ready: [WatchedTarget] = []
    private var readyHead = 0
    private var overdueHead = 0
    /// Host checks of watches in flight now.
    private var inFlight = 0
    /// `startReady` is running: a check answered at once must not start the queue again inside it.
    private var draining = false

    init(core: ReachabilityCore, bus: BusConnection, loop: EventLoop) {
        self.core = core
        self.bus = bus
        self.loop = loop
    }

    func configure(timeout: Duration, maxConcurrentLookups: Int) {
        self.timeout = timeout
        self.maxConcurrentLookups = maxConcurrentLookups
    }

    /// Host checks watches may have in flight at once: half the resolver's lookups, so watches on
    /// a dead DNS server neither fill the resolver's queue (where they would time out unasked)
    /// nor keep CheckHost callers waiting behind them.
    var maxInFlight: Int { max(1, maxConcurrentLookups / 2) }

    /// Distinct targets watched.
    var count: Int { targets.count }

    /// The shared target for `name`: the watched one, or a new one that `attach` registers.
    func target(for name: String) -> WatchedTarget {
        targets[name] ?? WatchedTarget(name)
    }

    /// Adds `watch` to its target; the first watch of a target has it answered.
    func attach(_ watch: Watch) {
        let target = watch.shared
        target.watches[watch.path] = watch
        guard target.watches.count == 1 else { return }
        targets[target.target] = target
        evaluate(target, announce: false)
    }

    /// Removes `watch`; with the last watch of a target goes its lookup and its retry.
    func detach(_ watch: Watch) {
        let target = watch.shared
        target.watches.removeValue(forKey: watch.path)
        guard target.watches.isEmpty, targets[target.target] === target else { return }
        targets.removeValue(forKey: target.target)
        target.isWatched = false
        target.retryAt = nil
        if let pending = target.pendingCheck, pending != Self.starting { core.cancelHostCheck(pending) }
        scheduleTimer()
    }

    /// A network change: addresses are answered again, hosts asked again (through the cache,
    /// so DNS is asked only when an answer expired) with their backoff started afresh. One walk
    /// over the distinct targets.
    func networkChanged() {
        for target in targets.values {
            if target.isAddress {
                evaluate(target, announce: true)
                continue
            }
            target.retryDelay = Self.firstRetry
            target.retryAt = nil
            ask(target)
        }
        scheduleTimer()
    }

    private func evaluate(_ target: WatchedTarget, announce: Bool) {
        if target.isAddress {
            update(target, core.mirror.check(address: target.target), announce: announce)
        } else {
            ask(target)
        }
    }

    /// Starts a lookup of `target` now, or queues it while `maxInFlight` run.
    private func ask(_ target: WatchedTarget) {
        guard target.pendingCheck == nil, !target.queued else { return }
        if inFlight < maxInFlight {
            start(target)
        } else {
            target.queued = true
            target.queuedAt = .now
            ready.append(target)
        }
    }

    private func start(_ target: WatchedTarget) {
        target.retryAt = nil
        inFlight += 1
        let box = UncheckedSendable(target)
        let targets = UncheckedSendable(self)
        // The answer may come at once (cache, localhost, no reachable DNS server), before
        // checkHost returns: mark the check as started first, so the completion can clear it.
        target.pendingCheck = Self.starting
        let id = core.checkHost(target.target, timeout: timeout) { outcome in
            targets.value.finished(box.value, outcome)
        }
        if target.pendingCheck == Self.starting { target.pendingCheck = id }
    }

    private func finished(_ target: WatchedTarget, _ outcome: Result<CheckResult, CheckCancelled>) {
        target.pendingCheck = nil
        inFlight -= 1
        if target.isWatched, case let .success(result) = outcome {
            update(target, result, announce: true)
            if result.reason == .dnsTimeout || result.reason == .dnsFailure {
                let at = ContinuousClock.now + Self.jittered(target.retryDelay)
                target.retryAt = at
                retries.insert(at, target)
                if retries.count > 2 * targets.count + 64 { retries.compact(isCurrent: Self.isRetry) }
                target.retryDelay = min(target.retryDelay * 2, Self.lastRetry)
            } else {
                target.retryDelay = Self.firstRetry
            }
            if result.reason == .dnsTimeout { answerOverdue() }
        }
        startReady()
        scheduleTimer()
    }

    /// DNS is timing out, and targets have waited longer than a check's deadline for a slot:
    /// they are answered dnsTimeout now, as a CheckHost of them would have been, instead of
    /// showing no answer for minutes while thousands of names wait for a dead server. They keep
    /// their place and are still asked in turn. Queued in time order, so the walk stops at the
    /// first recent one and never passes a target twice.
    private func answerOverdue() {
        let due = ContinuousClock.now - timeout
        overdueHead = max(overdueHead, readyHead)
        while overdueHead < ready.count, ready[overdueHead].queuedAt <= due {
            let target = ready[overdueHead]
            overdueHead += 1
            guard target.queued, target.isWatched, target.result.reason != .dnsTimeout else { continue }
            var result = CheckResult(target: target.target, reason: .dnsTimeout)
            result.message = "no DNS answer before the deadline: the lookups ahead of this name timed out"
            update(target, result, announce: true)
        }
    }

    /// Starts queued targets while slots are free, oldest first.
    private func startReady() {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while inFlight < maxInFlight, readyHead < ready.count {
            let target = ready[readyHead]
            readyHead += 1
            target.queued = false
            if target.isWatched { ask(target) }
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

    /// Asks the targets whose retry is due, and arms the timer for the next one.
    private func retryDue() {
        let now = ContinuousClock.now
        while let (at, target) = retries.first, at <= now {
            retries.removeFirst()
            guard Self.isRetry(at, target) else { continue }
            target.retryAt = nil
            if target.isWatched { ask(target) }
        }
        scheduleTimer()
    }

    private func scheduleTimer() {
        retries.prune(isCurrent: Self.isRetry)
        guard let next = retries.first?.instant else {
            retryTimer?.disable()
            return
        }
        if retryTimer == nil {
            retryTimer = try? loop.timer(at: 0) { [unowned self] in self.retryDue() }
        }
        retryTimer?.schedule(at: next.monotonicMicroseconds)
    }

    private static func isRetry(_ at: ContinuousClock.Instant, _ target: WatchedTarget) -> Bool {
        target.retryAt == at
    }

    /// `delay` shifted by up to `jitter` of itself, either way.
    static func jittered(_ delay: Duration) -> Duration {
        delay * Double.random(in: (1 - jitter)...(1 + jitter))
    }

    /// Publishes a target's new answer on every watch of it whose properties it changes.
    private func update(_ target: WatchedTarget, _ result: CheckResult, announce: Bool) {
        let old = target.result
        target.result = result
        guard announce else { return }
        var names: [String] = []
        if old.flags != result.flags { names.append("Flags") }
        if old.interface != result.interface { names.append("Interface") }
        if old.reason != result.reason { names.append("Reason") }
        guard !names.isEmpty else { return }
        for path in target.watches.keys {
            bus.emitPropertiesChanged(path: path, interface: Watch.interface, names: names)
        }
    }
}
