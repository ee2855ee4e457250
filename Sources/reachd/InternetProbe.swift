import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// What a probe uses of the core, and nothing more: its verdicts go in as inputs, its lookups
/// start as host checks, and the path it judges is read from the state (the state's host is the
/// update's while followers are told, and the latest input's between updates, so a probe reads
/// back the verdict it just recorded).
struct ProbeParts {
    unowned let inputs: any CoreInputs
    unowned let checks: any HostCheckStarting
    let state: SharedState

    var host: HostStatus { state.withState { $0.host } }
}

/// The opt-in connectivity probe (`[Connectivity]` in reachd.conf, issue 11): asks a known HTTP(S)
/// server through the host's path whether the internet answers, and feeds the verdict to the
/// Engine as one more fact. On reachd's loop, never blocking: the name goes through the same
/// resolver as CheckHost, the request (to the address found, from the path's source address)
/// through libcurl on `HTTPExchanges`' thread, and one timer carries both the probe's deadline
/// and the next probe.
///
/// Only where the network says nothing: while the path's network answers through its own
/// captive-portal API (RFC 8908, `PortalSessions`), nothing is sent to the probe's server; the
/// API's word stands, and the verdict says why there is none.
///
/// When: at start, when the host's path changes (state, primary or underlying interface, the
/// kernel's internet route with its gateway and source), on request (`Validate`), and on the
/// timer: the full interval after a good answer, 1 s after a bad one, doubling up to the
/// interval, each with +-20% jitter. At most one probe in flight; none while the host has no
/// route (the verdict is then `none` without traffic). Off: no timer, no traffic, `unknown`.
///
/// One instance judges one path: the host's (the primary, routed as the kernel routes it), or
/// one `Uplink` by itself: its request bound to that link (SO_BINDTODEVICE, no privilege needed)
/// and sent from that link's own address, so a second uplink is judged without moving traffic.
/// The name is resolved as the host resolves it.
final class InternetProbe {
    enum Path: Equatable {
        case host
        case uplink(index: Int32, name: String)
    }

    /// Where its verdicts go, its lookups start, and the path's facts are read.
    private let parts: ProbeParts
    private let loop: EventLoop
    private unowned let exchanges: HTTPExchanges
    private unowned let metrics: DaemonMetrics
    let path: Path
    /// An uplink's last verdict (the host's lives in the Engine's host status).
    private var uplinkStatus = ConnectivityStatus.unknown
    /// Off until `configure` gives the settings.
    private var settings = ConnectivitySettings()
    private var timer: (any LoopSource)?
    private var attempt: Attempt?
    private var pathKey: PathKey?
    private var retryDelay = ConnectivitySettings.firstRetry
    private var nextProbe: ContinuousClock.Instant?
    /// Callers of Validate waiting for the probe in flight.
    private var waiters: [(ConnectivityStatus) -> Void] = []
    private var random = SystemRandomNumberGenerator()
    /// When the last probe ended.
    private var lastVerdict: ContinuousClock.Instant?

    /// What identifies the path being judged: a change re-probes at once.
    private struct PathKey: Hashable {
        var state: HostState
        var primary: String
        var underlying: String
        var v4: Route?
        var v6: Route?
        /// The uplink judged, as the Engine sees it now (nil for the host's path).
        var uplink: Uplink?
        /// The host path's link that `Probe=no` keeps the probe off (a reload can change it).
        var unprobed: String?
        /// The link whose captive-portal API answers for the path: the probe keeps quiet.
        var answeringAPI: String?
    }

    /// One probe in flight: resolving, then exchanging.
    private final class Attempt {
        let deadline: ContinuousClock.Instant
        var check: UInt64?
        var exchange: UInt64?
        init(deadline: ContinuousClock.Instant) { self.deadline = deadline }
        func cancel(_ checks: any HostCheckStarting, _ exchanges: HTTPExchanges) {
            if let check { checks.cancelHostCheck(check) }
            if let exchange { exchanges.cancel(exchange) }
            (check, exchange) = (nil, nil)
        }
    }

    init(parts: ProbeParts, loop: EventLoop, exchanges: HTTPExchanges, metrics: DaemonMetrics, path: Path = .host) {
        self.parts = parts
        self.loop = loop
        self.exchanges = exchanges
        self.metrics = metrics
        self.path = path
    }

    /// The uplink's link name; nil for the host's path.
    var pathName: String? {
        if case let .uplink(_, name) = path { return name }
        return nil
    }

    /// How the log names the path: `connectivity` for the host's, `connectivity via eth1`.
    private var logPrefix: String {
        if case let .uplink(_, name) = path { return "connectivity via \(name)" }
        return "connectivity"
    }

    /// The verdict this probe last recorded.
    private var currentStatus: ConnectivityStatus {
        path == .host ? parts.host.connectivity : uplinkStatus
    }

    /// The uplink stopped being one (or the probe was turned off): its verdict is forgotten.
    func retire() {
        stop()
        record(.unknown)
    }

    /// At start and after a reload: begins (or stops) probing with `settings`.
    func configure(_ settings: ConnectivitySettings) {
        let changed = settings != self.settings
        self.settings = settings
        guard changed || attempt == nil && nextProbe == nil else { return }
        stop()
        guard let url = settings.url else {
            record(.unknown)
            return
        }
        if path == .host { Log.info("connectivity: probing \(url) (every \(DurationText.format(settings.interval)) while good, timeout \(DurationText.format(settings.timeout)))") }
        probeAfresh(currentPathKey(), reason: "start")
    }

    /// After every change of the network: a new path is judged afresh, at once.
    func networkChanged() {
        guard settings.isEnabled else { return }
        let key = currentPathKey()
        guard key != pathKey else { return }
        probeAfresh(key, reason: "the path changed")
    }

    /// The host goes to sleep (logind says so before it does): the verdict is about a network
    /// the host may not wake up on, so it is dropped now, and an answer asked for early after the
    /// resume, before reachd has heard of it, cannot be the old one either.
    func suspending() {
        guard settings.isEnabled else { return }
        asleep = true
        record(ConnectivityStatus(detail: "not judged since the host went to sleep"))
    }

    /// Between logind's warning of the sleep and the resume: `Validate` answers without probing,
    /// since a verdict made then would be one from before the sleep again.
    private var asleep = false

    /// The host resumed from sleep: the verdict is from before it (another network, perhaps), so
    /// it is dropped at once, and the path judged again with the retries started afresh. Until
    /// the new verdict, connectivity is unknown: `reachctl wait --internet` run by a timer that
    /// fires on resume waits for this network's answer instead of passing on the old one.
    func resumed() {
        guard settings.isEnabled else { return }
        asleep = false
        record(ConnectivityStatus(detail: "judging again after the host resumed from sleep"))
        probeAfresh(currentPathKey(), reason: "the host resumed from sleep")
    }

    /// Judges the path `key` now, with the retries started afresh.
    private func probeAfresh(_ key: PathKey, reason: String) {
        pathKey = key
        retryDelay = ConnectivitySettings.firstRetry
        cancelAttempt()
        probe(reason: reason)
    }

    /// How old the last verdict is, while no probe runs; nil before the first verdict, or while
    /// one runs (`validate` then joins it, which costs no request).
    var restingVerdictAge: Duration? { attempt == nil ? lastVerdict.map { .now - $0 } : nil }

    /// The verdict there is, without probing.
    var status: ConnectivityStatus { currentStatus }

    /// `Validate`: probes now (or joins the probe in flight) and answers with its verdict.
    func validate(_ reply: @escaping (ConnectivityStatus) -> Void) {
        guard settings.isEnabled else { return reply(.probeOff) }
        if asleep { return reply(currentStatus) }
        // Callers asking in a loop get the fresh verdict, not a probe each.
        if attempt == nil, let last = lastVerdict, ContinuousClock.now - last < .seconds(2) {
            return reply(currentStatus)
        }
        waiters.append(reply)
        if attempt == nil { probe(reason: "asked") }
    }

    private func stop() {
        cancelAttempt()
        timer?.disable()
        nextProbe = nil
        let pending = waiters
        waiters = []
        for waiter in pending { waiter(currentStatus) }
    }

    private func cancelAttempt() {
        attempt?.cancel(parts.checks, exchanges)
        attempt = nil
    }

    private func currentPathKey() -> PathKey {
        parts.state.withState { state in
            if case let .uplink(index, name) = path {
                let uplink = state.uplinks().first { $0.index == index }
                return PathKey(
                    state: uplink == nil ? .offline : .online, primary: name, underlying: "", uplink: uplink,
                    answeringAPI: state.portalAPIAnswers(through: [name]))
            }
            return PathKey(
                state: state.host.state, primary: state.host.primaryInterface, underlying: state.host.underlyingInterface,
                v4: state.internetRoute(family: .ipv4), v6: state.internetRoute(family: .ipv6),
                unprobed: state.unprobedHostInterface(),
                answeringAPI: state.portalAPIAnswers(through: [state.host.primaryInterface, state.host.underlyingInterface]))
        }
    }

    // MARK: one probe

    private func probe(reason: String) {
        guard let url = settings.url else { return }
        nextProbe = nil
        let reachable = path == .host ? parts.host.state == .online : pathKey?.uplink != nil
        guard reachable else {
            // No route: nothing could answer, and nothing is sent. The next path change re-probes.
            finish(ProbeExpectation.failed("no route to the internet"), schedule: false)
            return
        }
        if path == .host, let name = parts.state.withState({ $0.unprobedHostInterface() }) {
            // The administrator keeps the probe off this link: nothing is sent, nothing is judged.
            finish(ConnectivityStatus(detail: "not probed: \(name) has Probe=no"), schedule: false, counted: false)
            return
        }
        if let name = pathKey?.answeringAPI {
            // The network said: its API's answer stands, and no third party hears of the host.
            finish(ConnectivityStatus(detail: "not probed: the captive-portal API of \(name)'s network answers"), schedule: false, counted: false)
            return
        }
        let attempt = Attempt(deadline: .now + settings.timeout)
        self.attempt = attempt
        arm(attempt.deadline)
        if IPAddress(url.host) != nil {
            connect(attempt, to: parts.state.check(address: url.host))
            return
        }
        // Completions run on the loop's thread (HostChecks); the box checks that they do.
        let box = LoopBound((probe: self, attempt: attempt))
        attempt.check = parts.checks.checkHost(url.host, timeout: settings.timeout) { outcome in
            guard case let .success(result) = outcome else { return }  // cancelled: the attempt is gone
            box.value.probe.resolved(result, for: box.value.attempt)
        }
    }

    private func resolved(_ result: CheckResult, for attempt: Attempt) {
        guard attempt === self.attempt else { return }
        attempt.check = nil
        connect(attempt, to: result)
    }

    private func connect(_ attempt: Attempt, to result: CheckResult) {
        guard let url = settings.url else { return }
        guard let address = result.addresses.first, result.flags.contains(.reachable) else {
            let why = result.reason.map { "\(url.host): \($0.rawValue)" + (result.message.map { " (\($0))" } ?? "") } ?? "\(url.host): no address"
            return finish(ProbeExpectation.failed(why))
        }
        var binding = HTTPQuestion.Binding.routed
        if case let .uplink(_, name) = path {
            guard let source = pathKey?.uplink?.sources[address.family] else {
                return finish(ProbeExpectation.failed("\(name) has no \(address.family.name) address to send from"))
            }
            binding = .linkAddress(name, source)
        } else if let source = result.source, source.family == address.family {
            binding = .source(source)
        }
        let question = HTTPQuestion(
            url: url.description, binding: binding,
            resolved: IPAddress(url.host) == nil ? HTTPQuestion.Resolved(host: url.host, port: url.port, address: address) : nil,
            protocols: url.isSecure ? "https" : "http", redirects: 0, timeout: attempt.deadline - .now,
            maximumBody: ProbeExpectation.maximumBody,
            // No cache on the way may answer for the server.
            headers: ["Accept: */*", "Cache-Control: no-cache"])
        do {
            attempt.exchange = try exchanges.ask(question) { [weak self] answer in
                guard let self, attempt === self.attempt else { return }
                attempt.exchange = nil
                switch answer {
                case let .success(response): self.finish(self.settings.expectation.judge(response, from: url))
                case let .failure(failure) where failure.timedOut: self.finish(self.timedOut)
                case let .failure(failure): self.finish(ProbeExpectation.failed(failure.description))
                }
            }
        } catch {
            finish(ProbeExpectation.failed(error.description))
        }
    }

    private var timedOut: ConnectivityStatus { ProbeExpectation.failed("no answer within \(DurationText.format(settings.timeout))") }

    /// The timer: the probe's deadline while one is in flight, else the next probe.
    private func fired() {
        if let attempt, attempt.deadline <= .now {
            finish(timedOut)
        } else if let nextProbe, nextProbe <= .now {
            probe(reason: "the interval passed")
        } else if let due = attempt?.deadline ?? nextProbe {
            arm(due)
        }
    }

    /// `counted`: the verdict came from a probe (metrics count probes, not decisions not to send one).
    private func finish(_ status: ConnectivityStatus, schedule: Bool = true, counted: Bool = true) {
        cancelAttempt()
        lastVerdict = .now
        let previous = currentStatus
        if status.verdict != previous.verdict || status.portal != previous.portal {
            let portal = status.portal.isEmpty ? "" : " at \(status.portal)"
            Log.event(.probe, "\(logPrefix): \(status.verdict.rawValue)\(portal) (\(status.detail))")
        }
        if counted { metrics.counters.recordProbe(status.verdict) }
        record(status)
        let pending = waiters
        waiters = []
        for waiter in pending { waiter(status) }
        guard schedule, settings.isEnabled else {
            timer?.disable()
            return
        }
        let delay: Duration
        if status.verdict == .full {
            delay = settings.interval
            retryDelay = ConnectivitySettings.firstRetry
        } else {
            delay = min(retryDelay, settings.interval)
            retryDelay = min(retryDelay * 2, settings.interval)
        }
        // +-20%, so a fleet that lost its uplink together does not probe in step.
        let jitter = Double.random(in: 0.8...1.2, using: &random)
        nextProbe = .now + delay * jitter
        arm(nextProbe!)
    }

    private func record(_ status: ConnectivityStatus) {
        switch path {
        case .host: parts.inputs.record(connectivity: status)
        case let .uplink(index, _):
            uplinkStatus = status
            parts.inputs.record(uplink: index, connectivity: status.verdict)
        }
    }

    private func arm(_ instant: ContinuousClock.Instant) {
        do {
            if timer == nil { timer = try loop.addTimer(urgent: false) { [unowned self] in self.fired() } }
            timer?.schedule(at: instant)
        } catch {
            Log.warning("\(logPrefix): cannot arm a timer: \(error)")
        }
    }
}
