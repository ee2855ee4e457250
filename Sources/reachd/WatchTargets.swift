import Reachability

/// The distinct targets of all watches, followed by the library's `TargetFollower` on the
/// daemon's loop (`CoreTargets`): one answer and at most one lookup per target however many
/// watches share it, backoff with jitter after DNS failures, a bounded number of lookups in
/// flight, everything asked again when the routing moves. This side publishes each answer on
/// the target's watches.
final class WatchTargets {
    private let bus: BusConnection
    /// The watches of each target, by object path.
    private var paths: [String: Set<String>] = [:]
    // Set once, in init (its answers come here).
    private var targets: CoreTargets!

    init(core: ReachabilityCore, bus: BusConnection, loop: EventLoop) {
        self.bus = bus
        targets = CoreTargets(core: core, loop: loop, settings: .init(lookups: 64, hostTimeout: .seconds(5)), owner: .shared) { [unowned self] in
            publish($0, $1, previous: $2)
        }
    }

    /// At start and on every reload: a check's deadline (`DefaultTimeout=`) and the lookups in
    /// flight (half of `MaxConcurrentLookups=`), from the next check and retry on.
    func configure(timeout: Duration, maxConcurrentLookups: Int) {
        targets.follower.settings = TargetFollower.Settings(lookups: maxConcurrentLookups, hostTimeout: timeout)
    }

    /// Distinct targets watched.
    var count: Int { targets.follower.count }

    /// The answer of a watched target (pending before the first).
    func answer(for target: String) -> CheckResult { targets.follower.answer(for: target) ?? CheckResult(target: target) }

    /// Adds `watch` to its target; the first watch of a target has it answered.
    func attach(_ watch: Watch) {
        paths[watch.target, default: []].insert(watch.path)
        targets.follower.follow(watch.target)
    }

    /// Removes `watch`; with the last watch of a target goes its lookup and its retry.
    func detach(_ watch: Watch) {
        guard paths[watch.target]?.remove(watch.path) != nil else { return }
        if paths[watch.target]?.isEmpty == true { paths.removeValue(forKey: watch.target) }
        targets.follower.unfollow(watch.target)
    }

    /// A routing change: every distinct target answered again, once for all its watches.
    func networkChanged() { targets.follower.routingChanged() }

    /// Publishes a target's new answer on every watch of it whose properties it changes.
    private func publish(_ target: String, _ result: CheckResult, previous old: CheckResult) {
        var names: [String] = []
        if old.flags != result.flags { names.append("Flags") }
        if old.interface != result.interface { names.append("Interface") }
        if old.reason != result.reason { names.append("Reason") }
        guard !names.isEmpty else { return }
        for path in paths[target] ?? [] {
            bus.emitPropertiesChanged(path: path, interface: ReachdContract.watchInterface, names: names)
        }
    }
}
