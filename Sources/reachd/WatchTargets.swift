import Reachability

/// The distinct targets of all watches, followed by the library's `TargetFollower` on the
/// daemon's loop: one answer and at most one lookup per target however many watches share it,
/// backoff with jitter after DNS failures, a bounded number of lookups in flight, everything
/// asked again when the routing moves (TargetFollower.swift). This side is the thin driver:
/// the loop's timer, the core's checks, and each answer published on the target's watches.
final class WatchTargets: TargetFollowerDriver {
    private let core: ReachabilityCore
    private let bus: BusConnection
    private let loop: EventLoop
    // Set once, right after init (the follower needs this driver).
    private var follower: TargetFollower!
    /// The watches of each target, by object path.
    private var paths: [String: Set<String>] = [:]
    private var retryTimer: EventSource?

    init(core: ReachabilityCore, bus: BusConnection, loop: EventLoop) {
        self.core = core
        self.bus = bus
        self.loop = loop
        follower = TargetFollower(settings: TargetFollower.Settings(lookups: 64, hostTimeout: .seconds(5)), driver: self)
    }

    /// At start and on every reload: a check's deadline (`DefaultTimeout=`) and the lookups in
    /// flight (half of `MaxConcurrentLookups=`), from the next check and retry on.
    func configure(timeout: Duration, maxConcurrentLookups: Int) {
        follower.settings = TargetFollower.Settings(lookups: maxConcurrentLookups, hostTimeout: timeout)
    }

    /// Distinct targets watched.
    var count: Int { follower.count }

    /// The answer of a watched target (pending before the first).
    func answer(for target: String) -> CheckResult { follower.answer(for: target) ?? CheckResult(target: target) }

    /// Adds `watch` to its target; the first watch of a target has it answered.
    func attach(_ watch: Watch) {
        paths[watch.target, default: []].insert(watch.path)
        follower.follow(watch.target)
    }

    /// Removes `watch`; with the last watch of a target goes its lookup and its retry.
    func detach(_ watch: Watch) {
        guard paths[watch.target]?.remove(watch.path) != nil else { return }
        if paths[watch.target]?.isEmpty == true { paths.removeValue(forKey: watch.target) }
        follower.unfollow(watch.target)
    }

    /// A routing change: every distinct target answered again, once for all its watches.
    func networkChanged() { follower.routingChanged() }

    // MARK: TargetFollowerDriver

    var now: ContinuousClock.Instant { .now }

    func check(address: String) -> CheckResult { core.mirror.check(address: address) }

    func startHostCheck(_ name: String, timeout: Duration, done: @escaping (CheckResult?) -> Void) -> UInt64 {
        // The core answers on this loop (its own thread): `done` never crosses.
        let done = UncheckedSendable(done)
        return core.checkHost(name, timeout: timeout) { outcome in done.value(try? outcome.get()) }
    }

    func cancelHostCheck(_ id: UInt64) { core.cancelHostCheck(id) }

    func scheduleTimer(at instant: ContinuousClock.Instant?) {
        guard let instant else { return retryTimer?.disable() ?? () }
        if retryTimer == nil {
            retryTimer = try? loop.timer(at: 0) { [unowned self] in follower.timerFired() }
        }
        retryTimer?.schedule(at: instant.monotonicMicroseconds)
    }

    /// Publishes a target's new answer on every watch of it whose properties it changes.
    func answered(_ target: String, _ result: CheckResult, previous old: CheckResult) {
        var names: [String] = []
        if old.flags != result.flags { names.append("Flags") }
        if old.interface != result.interface { names.append("Interface") }
        if old.reason != result.reason { names.append("Reason") }
        guard !names.isEmpty else { return }
        for path in paths[target] ?? [] {
            bus.emitPropertiesChanged(path: path, interface: Watch.interface, names: names)
        }
    }
}
