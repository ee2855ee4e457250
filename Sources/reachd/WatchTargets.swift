import Reachability

/// The distinct targets of all watches, followed by the library's `TargetFollower` on the
/// daemon's loop (`CoreTargets`): one answer and at most one lookup per target however many
/// watches share it, backoff with jitter after DNS failures, a bounded number of lookups in
/// flight, everything asked again when the routing moves. This side publishes each answer on
/// the target's watches.
final class WatchTargets {
    private let bus: BusConnection
    private let mirror: SharedState
    /// The watches of each target, by object path.
    private var paths: [String: Set<String>] = [:]
    /// The watches of each target for each user, and what they show: the target's one answer
    /// (one DNS lookup for everyone) with its addresses routed as that user's traffic is. By
    /// target, so an answer reaches its own views without a walk over everyone's.
    private var views: [String: [UInt32: (paths: Set<String>, shown: CheckResult)]] = [:]
    // Set once, in init (its answers come here).
    private var targets: CoreTargets!
    /// Views a routing change has yet to route again, from `refreshHead`: `batch` a turn of the
    /// loop, the rest on `refreshTimer`, since each may be a route lookup and a signal and
    /// 2,000 at once held the loop.
    private var refreshes: [View] = []
    private var refreshHead = 0
    private var refreshTimer: (any LoopSource)?

    private struct View: Hashable {
        var target: String
        var uid: UInt32
    }

    init(checks: any HostCheckStarting, state: SharedState, bus: BusConnection, loop: EventLoop) {
        self.bus = bus
        mirror = state
        // The one lookup of a target is routed once for each user's view (`routed`), not also
        // as reachd's own traffic first.
        targets = CoreTargets(
            checks: checks, state: state, loop: loop, settings: .init(lookups: 64, hostTimeout: .seconds(5)), owner: .shared, routing: .none
        ) { [unowned self] in
            publish($0, $1, previous: $2)
        }
        refreshTimer = try? loop.addTimer(urgent: false) { [unowned self] in refreshSome() }
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
        views[target]?[uid]?.shown ?? routed(target, uid: uid)
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
        if views[watch.target]?[watch.uid] == nil {
            views[watch.target, default: [:]][watch.uid] = ([], routed(watch.target, uid: watch.uid))
        }
        views[watch.target]?[watch.uid]?.paths.insert(watch.path)
    }

    /// Removes `watch`; with the last watch of a target goes its lookup and its retry.
    func detach(_ watch: Watch) {
        guard paths[watch.target]?.remove(watch.path) != nil else { return }
        views[watch.target]?[watch.uid]?.paths.remove(watch.path)
        if views[watch.target]?[watch.uid]?.paths.isEmpty == true { views[watch.target]?.removeValue(forKey: watch.uid) }
        if views[watch.target]?.isEmpty == true { views.removeValue(forKey: watch.target) }
        if paths[watch.target]?.isEmpty == true { paths.removeValue(forKey: watch.target) }
        targets.follower.unfollow(watch.target)
    }

    /// A routing change: every distinct target answered again, once for all its watches, and
    /// every user's view of it, since a rule may move one user's traffic alone (a walk not
    /// finished when the routing moves again is replaced by the new one).
    func networkChanged() {
        targets.follower.routingChanged()
        refreshes = views.flatMap { target, byUser in byUser.keys.map { View(target: target, uid: $0) } }
        refreshHead = 0
        refreshSome()
    }

    private func refreshSome() {
        let end = min(refreshes.count, refreshHead + TargetFollower.batch)
        for view in refreshes[refreshHead..<end] { refresh(view) }
        refreshHead = end
        if refreshHead < refreshes.count {
            refreshTimer?.schedule(at: .now)
        } else {
            refreshes = []
            refreshHead = 0
        }
    }

    /// A target's new shared answer: every user's view of it, on the watches it changes.
    private func publish(_ target: String, _ result: CheckResult, previous old: CheckResult) {
        guard let byUser = views[target] else { return }
        for uid in byUser.keys { refresh(View(target: target, uid: uid)) }
    }

    private func refresh(_ view: View) {
        guard let old = views[view.target]?[view.uid] else { return }
        let result = routed(view.target, uid: view.uid)
        views[view.target]?[view.uid]?.shown = result
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
