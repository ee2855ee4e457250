import Reachability

/// The CheckHost calls in flight, each owned by its caller: its lookup counts against the
/// caller's Unix user (the resolver's fair shares and the per-user lookup rate), and when the
/// caller leaves the bus its checks are cancelled at once, their DNS lookups with them, so
/// lookups nobody waits for never hold a slot. Limits on calls in flight hold per user, with a
/// reserve only root has. DNS is everyone's (one cached lookup); the addresses it gives are routed
/// as the caller's traffic is (RTA_UID), or as the user CheckHostAsUser names.
final class HostCheckCalls {
    /// CheckHost calls in flight per Unix user (`[Limits] MaxHostChecks=`, `MaxHostChecksPerUser=`):
    /// from all callers together, the last quarter kept for root, and from one user other than root.
    private var ledger: QuotaLedger<UInt32>

    private let checks: any HostCheckStarting
    private let bus: BusConnection
    private let callers: Callers
    /// Counts refusals and abandoned checks (`reachd_host_checks_refused_total`, `..._abandoned_total`).
    private let metrics: DaemonMetrics
    /// Each caller's running requests, by the core's check id.
    private var running: [String: [UInt64: CheckHostCall]] = [:]

    init(checks: any HostCheckStarting, bus: BusConnection, callers: Callers, metrics: DaemonMetrics, configuration: Configuration) {
        ledger = QuotaLedger(Self.quota(configuration)) { $0 == 0 }
        self.checks = checks
        self.bus = bus
        self.callers = callers
        self.metrics = metrics
    }

    /// Starts the check of `host` for the caller of `message` once its Unix user is known, and
    /// replies when the check answers. `asUser`: routed as that user (CheckHostAsUser), which only
    /// root may choose freely.
    func start(_ host: String, timeout: Duration, asUser named: UInt32? = nil, call message: BusMessage) throws(BusError) -> BusReply {
        let request = CheckHostCall(call: OwnedBusMessage(retaining: message), host: host, timeout: timeout)
        try callers.withCaller(of: message) { [unowned self] caller in
            do throws(BusError) {
                let caller = try caller.get()
                self.run(request, caller, routedAs: try Callers.routedAs(named, caller: caller.uid))
            } catch {
                request.move(to: .replied)
                self.bus.reply(to: request.call.message, error: error)
            }
        }
        return .later
    }

    private func run(_ request: CheckHostCall, _ caller: Caller, routedAs: UInt32) {
        if let (which, refusal) = limit(caller.uid) {
            request.move(to: .replied)
            refuse(request, caller, which, refusal)
            if running[caller.name] == nil { callers.release(caller.name, .checks) }
            return
        }
        request.run(as: caller, routedAs: routedAs)
        ledger.take(caller.uid)
        // The core answers on the loop's thread; the box checks that it does.
        let box = LoopBound((self, request))
        let id = checks.checkHost(
            request.host, timeout: request.timeout, owner: LookupOwner(uid: caller.uid), routing: .asUser(request.routedAs)
        ) { outcome in
            box.value.0.answered(box.value.1, outcome)
        }
        // Answered at once (cache, /etc/hosts, no route to any nameserver): nothing to own.
        guard request.isRunning else {
            if running[caller.name] == nil { callers.release(caller.name, .checks) }
            return
        }
        request.move(to: .running(check: id))
        if running[caller.name] == nil {
            callers.onDeparture(of: caller.name, .checks) { [unowned self] in self.left(caller.name) }
        }
        running[caller.name, default: [:]][id] = request
    }

    /// Calls whose reply is still owed.
    var inFlightCount: Int { ledger.held }

    /// A reload: calls in flight keep their slots; new ones meet the new bounds.
    func configure(_ configuration: Configuration) { ledger.quota = Self.quota(configuration) }

    private static func quota(_ configuration: Configuration) -> Quota {
        Quota(total: configuration.maxHostChecks, perOwner: configuration.maxHostChecksPerUser)
    }

    /// A running request ends (`next`: replied or abandoned): its slot is given back, and the
    /// caller is let go when it holds no more.
    private func end(_ request: CheckHostCall, _ next: CheckHostCall.State) {
        let (caller, check) = (request.caller, request.state)
        request.move(to: next)
        ledger.release(caller.uid)
        guard case let .running(.some(id)) = check, running[caller.name]?.removeValue(forKey: id) != nil, running[caller.name]?.isEmpty == true
        else { return }
        running[caller.name] = nil
        callers.release(caller.name, .checks)
    }

    /// Which limit refuses a new call of `uid`, and why, or nil.
    private func limit(_ uid: UInt32) -> (CheckRefusal, String)? {
        let (quota, total, ofUser) = (ledger.quota, ledger.held, ledger.held(by: uid))
        switch ledger.refusal(for: uid) {
        case nil: return nil
        case .total: return (.inFlightCap, "reachd already has \(total) host checks in flight, the most it holds (MaxHostChecks=\(quota.total))")
        case .owner:
            return (.shareFull, "Unix user \(uid) already has \(ofUser) host checks in flight, the most one user may have (MaxHostChecksPerUser=\(quota.perOwner))")
        case .reserve:
            return (.shareFull, "users other than root already have \(ledger.heldByOthers) host checks in flight; the rest is kept for the system")
        }
    }

    /// Answers `LimitExceeded` and counts the refusal by its limit.
    private func refuse(_ request: CheckHostCall, _ caller: Caller, _ which: CheckRefusal, _ refusal: String) {
        Log.debug("CheckHost(\(request.host)) of \(caller.name) refused: \(refusal)")
        metrics.counters.recordRefusal(which)
        metrics.changed()
        bus.reply(to: request.call.message, error: BusError(name: ReachdContract.ErrorName.limitExceeded, message: refusal))
    }

    private func answered(_ request: CheckHostCall, _ outcome: Result<CheckResult, CheckCancelled>) {
        // Abandoned: the caller left and the check was cancelled; its slot is already back.
        guard request.isRunning else { return }
        end(request, .replied)
        let message = request.call.message
        switch outcome {
        case let .success(result):
            let elapsed = ContinuousClock.now - request.received
            do {
                try bus.reply(to: message) { reply throws(BusError) in
                    try ReachabilityService.appendHostReply(reply, result, elapsed: elapsed)
                }
            } catch {
                Log.warning("cannot reply to CheckHost(\(request.host)): \(error)")
            }
        case let .failure(cancelled):
            guard let refusal = cancelled.refusal else {
                return bus.reply(to: message, error: BusError(name: ReachdContract.ErrorName.timeout, message: "the check of \(request.host) was cancelled"))
            }
            // The core refuses a check only for the user's lookup rate.
            refuse(request, request.caller, .rateLimited, refusal)
        }
    }

    /// The caller left the bus: its checks are cancelled, their lookups and slots freed at once.
    private func left(_ sender: String) {
        guard let owned = running.removeValue(forKey: sender) else { return }
        for (id, request) in owned {
            request.move(to: .abandoned)
            ledger.release(request.caller.uid)
            checks.cancelHostCheck(id)
        }
        metrics.counters.checksAbandoned += UInt64(owned.count)
        metrics.changed()
        Log.debug("client \(sender) left: cancelled \(owned.count) host check(s)")
    }
}
