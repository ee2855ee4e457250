import Reachability

/// The connectivity probes (`[Connectivity]`): one for the host's path and one per uplink other
/// than the primary (`Uplink`), by ifindex; idle, with no timer and no uplink probe, when off.
final class Probes {
    private let parts: ProbeParts
    private let loop: EventLoop
    private let exchanges: HTTPExchanges
    private let metrics: DaemonMetrics
    private var settings: ConnectivitySettings
    private let host: InternetProbe
    private var uplinks: [Int32: InternetProbe] = [:]
    /// Stall polls in a row that found the host's path stalled (see `stallPolled`).
    private var stalledPolls = 0

    init(parts: ProbeParts, loop: EventLoop, exchanges: HTTPExchanges, metrics: DaemonMetrics, settings: ConnectivitySettings) {
        self.parts = parts
        self.loop = loop
        self.exchanges = exchanges
        self.metrics = metrics
        self.settings = settings
        host = InternetProbe(parts: parts, loop: loop, exchanges: exchanges, metrics: metrics)
        host.configure(settings)
        reconcile()
    }

    /// A stall poll: while the host's path is stalled, the probe runs at once (so Connectivity
    /// follows within seconds, not at the next Interval=), then once per back-off step: at the
    /// 1st, 2nd, 4th, 8th... poll in a row that finds it stalled. Off, nothing is sent.
    func stallPolled(_ report: StallReport) {
        guard parts.host.stalled else {
            stalledPolls = 0
            return
        }
        stalledPolls += 1
        guard settings.isEnabled, stalledPolls & (stalledPolls - 1) == 0 else { return }
        Log.info("traffic stalled on \(parts.host.primaryInterface): running the connectivity probe now")
        host.validate { _ in }
    }

    /// The core's follower: a path that moved is judged afresh (`networkChanged` leaves the
    /// others be, so a probe's own verdict passing by does not start it over).
    func follow(_ update: CoreUpdate) {
        host.networkChanged()
        reconcile()
    }

    /// A network's portal API answered (`PortalSessions.answered`): a path whose network now
    /// speaks for itself stops being probed, even when the answer moved nothing clients see.
    func portalAPIAnswered() {
        host.networkChanged()
        for probe in uplinks.values { probe.networkChanged() }
    }

    /// The host goes to sleep: every verdict is forgotten until the resume.
    func suspending() {
        host.suspending()
        for probe in uplinks.values { probe.suspending() }
    }

    /// The host resumed from sleep: every probe judges its path again, now.
    func resumed() {
        host.resumed()
        for probe in uplinks.values { probe.resumed() }
    }

    /// A reload: every probe takes the new settings.
    func configure(_ settings: ConnectivitySettings) {
        self.settings = settings
        host.configure(settings)
        for probe in uplinks.values { probe.configure(settings) }
        reconcile()
    }

    /// When each Unix user other than root last made the host's probe run (`validate`).
    private var askedBy: [UInt32: ContinuousClock.Instant] = [:]

    /// `Validate` for the caller's Unix user. Root probes now (see `InternetProbe.validate`).
    /// Another user is answered from the last verdict while it is younger than `Interval=`, and
    /// makes the probe run at most once per `Interval=`: `Validate` in a loop once raised the
    /// probe to 5 requests per 10 s, where reachd.conf(5) promises one per interval while good.
    func validate(for uid: UInt32, _ reply: @escaping (ConnectivityStatus) -> Void) {
        guard uid != 0, settings.isEnabled, let age = host.restingVerdictAge else { return host.validate(reply) }
        let now = ContinuousClock.now
        let askedRecently = askedBy[uid].map { now - $0 < settings.interval } ?? false
        if age < settings.interval || askedRecently { return reply(host.status) }
        askedBy = askedBy.filter { now - $0.value < settings.interval }
        askedBy[uid] = now
        host.validate(reply)
    }

    /// Starts a probe for each uplink that is not the primary, and retires those of links that
    /// stopped being one (or became the primary, which the host's probe judges). Off: none.
    /// One pass over the default routes per change (`NetworkState.uplinks`).
    private func reconcile() {
        let wanted = settings.isEnabled
            ? parts.state.withState { state in
                Dictionary(state.uplinks().filter { $0.name != state.host.primaryInterface }.map { ($0.index, $0.name) }) { first, _ in first }
            }
            : [:]
        for (index, probe) in uplinks where wanted[index] != probe.pathName {
            uplinks.removeValue(forKey: index)
            probe.retire()
        }
        for probe in uplinks.values { probe.networkChanged() }
        for (index, name) in wanted where uplinks[index] == nil {
            let probe = InternetProbe(parts: parts, loop: loop, exchanges: exchanges, metrics: metrics, path: .uplink(index: index, name: name))
            uplinks[index] = probe
            probe.configure(settings)
        }
    }
}
