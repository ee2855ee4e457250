import Reachability

/// The distinct targets of all watches, followed by the library's `TargetFollower` on the
/// daemon's loop (`CoreTargets`): one answer and at most one lookup per target however many
/// watches share it, backoff with jitter after DNS failures, a bounded number of lookups in
/// flight, everything asked again when the routing moves. This side publishes each answer on
/// the target's watches.
final class WatchTargets {
    private let bus: BusConnection
    private let mirror: SharedMirror
    /// The watches of each target, by object path.
    private var paths: [String: Set<String>] = [:]
    /// The watches of each target for each user, and what they show: the target's one answer
    /// (one DNS lookup for everyone) with its addresses routed as that user's traffic is.
    private var views: [View: (paths: Set<String>, shown: CheckResult)] = [:]
    // Set once, in init (its answers come here).
    private var targets: CoreTargets!

    private struct View: Hashable {
        var target: String
        var uid: UInt32
    }

    init(core: ReachabilityCore, bus: BusConnection, loop: EventLoop) {
        self.bus = bus
        mirror = core.mirror
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

    /// The answer of a watched target for user `uid` (pending before the first).
    func answer(for target: String, uid: UInt32) -> CheckResult {
        views[View(target: target, uid: uid)]?.shown ?? routed(target, uid: uid)
    }

    /// The target's shared answer as user `uid`'s traffic is routed (`ip rule ... uidrange`):
    /// an address checked again with RTA_UID, a host's resolved addresses evaluated so; a
    /// pending or failed lookup stays as it is (DNS is the same for everyone).
    private func routed(_ target: String, uid: UInt32) -> CheckResult {
        if AddressTarget.looksLikeAddress(target) { return mirror.check(address: target, uid: uid) }
        let shared = targets.follower.answer(for: target) ?? CheckResult(target: target)
        guard !shared.addresses.isEmpty else { return shared }
        return mirror.evaluate(addresses: shared.addresses, target: target, uid: uid)
    }

    /// Adds `watch` to its target; the first watch of a target has it answered.
    func attach(_ watch: Watch) {
        paths[watch.target, default: []].insert(watch.path)
        targets.follower.follow(watch.target)
        let view = View(target: watch.target, uid: watch.uid)
        if views[view] == nil { views[view] = ([], routed(watch.target, uid: watch.uid)) }
        views[view]?.paths.insert(watch.path)
    }

    /// Removes `watch`; with the last watch of a target goes its lookup and its retry.
    func detach(_ watch: Watch) {
        guard paths[watch.target]?.remove(watch.path) != nil else { return }
        let view = View(target: watch.target, uid: watch.uid)
        views[view]?.paths.remove(watch.path)
        if views[view]?.paths.isEmpty == true { views.removeValue(forKey: view) }
        if paths[watch.target]?.isEmpty == true { paths.removeValue(forKey: watch.target) }
        targets.follower.unfollow(watch.target)
    }

    /// A routing change: every distinct target answered again, once for all its watches, and
    /// every user's view of it, since a rule may move one user's traffic alone.
    func networkChanged() {
        targets.follower.routingChanged()
        for view in views.keys { refresh(view) }
    }

    /// A target's new shared answer: every user's view of it, on the watches it changes.
    private func publish(_ target: String, _ result: CheckResult, previous old: CheckResult) {
        for view in views.keys where view.target == target { refresh(view) }
    }

    private func refresh(_ view: View) {
        guard let old = views[view] else { return }
        let result = routed(view.target, uid: view.uid)
        views[view]?.shown = result
        var names: [String] = []
        if old.shown.flags != result.flags { names.append("Flags") }
        if old.shown.interface != result.interface { names.append("Interface") }
        if old.shown.reason != result.reason { names.append("Reason") }
        guard !names.isEmpty else { return }
        for path in old.paths {
            bus.emitPropertiesChanged(path: path, interface: ReachdContract.watchInterface, names: names)
        }
    }
}
