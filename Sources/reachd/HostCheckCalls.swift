import Reachability

/// The CheckHost calls in flight, each owned by its caller: its lookup counts against the
/// caller's Unix user (the resolver's fair shares and the per-user lookup rate), and when the
/// caller leaves the bus its checks are cancelled at once, their DNS lookups with them, so
/// lookups nobody waits for never hold a slot. Limits on calls in flight hold per user, with a
/// reserve only root has. DNS is everyone's (one cached lookup); the addresses it gives are routed
/// as the caller's traffic is (RTA_UID), or as the user CheckHostAsUser names.
final class HostCheckCalls {
    /// CheckHost calls in flight (`[Limits] MaxHostChecks=`, `MaxHostChecksPerUser=`): from all
    /// callers together, the last quarter kept for root, and from one user other than root.
    private var inFlight: Quota

    private let checks: any HostCheckStarting
    private let bus: BusConnection
    private let callers: Callers
    /// Counts refusals and abandoned checks (`reachd_host_checks_refused_total`, `..._abandoned_total`).
    private let metrics: DaemonMetrics
    /// Each caller's checks in flight, by the core's check id.
    private var calls: [String: [UInt64: Pending]] = [:]
    private var perUser: [UInt32: Int] = [:]
    private var unprivileged = 0
    private var total = 0

    /// One call in flight.
    private final class Pending {
        let call: OwnedBusMessage
        let host: String
        /// The caller's Unix user: its shares and limits.
        let uid: UInt32
        /// The user whose routing answers: the caller's, or the one root named.
        let routedAs: UInt32
        let received: ContinuousClock.Instant
        var sender: String { call.message.sender ?? "" }
        var id: UInt64?
        var answered = false
        /// Its caller left: no reply goes out (nobody would read it).
        var abandoned = false

        init(call: OwnedBusMessage, host: String, uid: UInt32, routedAs: UInt32, received: ContinuousClock.Instant) {
            self.call = call
            self.host = host
            self.uid = uid
            self.routedAs = routedAs
            self.received = received
        }
    }

    init(checks: any HostCheckStarting, bus: BusConnection, callers: Callers, metrics: DaemonMetrics, configuration: Configuration) {
        inFlight = Self.quota(configuration)
        self.checks = checks
        self.bus = bus
        self.callers = callers
        self.metrics = metrics
    }

    /// Starts the check of `host` for the caller of `message` once its Unix user is known, and
    /// replies when the check answers. `asUser`: routed as that user (CheckHostAsUser), which only
    /// root may choose freely.
    func start(_ host: String, timeout: Duration, asUser named: UInt32? = nil, call message: BusMessage) throws(BusError) -> BusReply {
        let call = OwnedBusMessage(retaining: message)
        let received = ContinuousClock.now
        try callers.withUser(of: message) { [unowned self] uid in
            do throws(BusError) {
                let uid = try uid.get()
                let routedAs = try Callers.routedAs(named, caller: uid)
                self.check(Pending(call: call, host: host, uid: uid, routedAs: routedAs, received: received), timeout: timeout)
            } catch {
                self.bus.reply(to: call.message, error: error)
            }
        }
        return .later
    }

    private func check(_ pending: Pending, timeout: Duration) {
        let sender = pending.sender
        if let (which, refusal) = limit(pending.uid) {
            refuse(pending, which, refusal)
            if calls[sender] == nil { callers.release(sender, .checks) }
            return
        }
        count(pending.uid, +1)
        // The core answers on the loop's thread; the box checks that it does.
        let box = LoopBound((self, pending))
        let id = checks.checkHost(
            pending.host, timeout: timeout, owner: LookupOwner(uid: pending.uid), routing: .asUser(pending.routedAs)
        ) { outcome in
            box.value.0.answered(box.value.1, outcome)
        }
        // Answered at once (cache, /etc/hosts, no route to any nameserver): nothing to own.
        guard !pending.answered else {
            if calls[sender] == nil { callers.release(sender, .checks) }
            return
        }
        pending.id = id
        if calls[sender] == nil {
            callers.onDeparture(of: sender, .checks) { [unowned self] in self.left(sender) }
        }
        calls[sender, default: [:]][id] = pending
    }

    /// Calls whose reply is still owed.
    var inFlightCount: Int { total }

    /// A reload: calls in flight keep their slots; new ones meet the new bounds.
    func configure(_ configuration: Configuration) { inFlight = Self.quota(configuration) }

    private static func quota(_ configuration: Configuration) -> Quota {
        Quota(total: configuration.maxHostChecks, perOwner: configuration.maxHostChecksPerUser)
    }

    private func count(_ uid: UInt32, _ step: Int) {
        total += step
        guard uid != 0 else { return }
        unprivileged += step
        perUser[uid, default: 0] += step
        if perUser[uid] == 0 { perUser[uid] = nil }
    }

    /// Which limit refuses a new call of `uid`, and why, or nil.
    private func limit(_ uid: UInt32) -> (CheckRefusal, String)? {
        let ofUser = perUser[uid] ?? 0
        switch inFlight.refusal(system: uid == 0, held: total, ofOwner: ofUser, byOthers: unprivileged) {
        case nil: return nil
        case .total: return (.inFlightCap, "reachd already has \(total) host checks in flight, the most it holds (MaxHostChecks=\(inFlight.total))")
        case .owner:
            return (.shareFull, "Unix user \(uid) already has \(ofUser) host checks in flight, the most one user may have (MaxHostChecksPerUser=\(inFlight.perOwner))")
        case .reserve:
            return (.shareFull, "users other than root already have \(unprivileged) host checks in flight; the rest is kept for the system")
        }
    }

    /// Answers `LimitExceeded` and counts the refusal by its limit.
    private func refuse(_ pending: Pending, _ which: CheckRefusal, _ refusal: String) {
        Log.debug("CheckHost(\(pending.host)) of \(pending.sender) refused: \(refusal)")
        metrics.counters.recordRefusal(which)
        metrics.changed()
        bus.reply(to: pending.call.message, error: BusError(name: ReachdContract.ErrorName.limitExceeded, message: refusal))
    }

    private func answered(_ pending: Pending, _ outcome: Result<CheckResult, CheckCancelled>) {
        pending.answered = true
        count(pending.uid, -1)
        if let id = pending.id, calls[pending.sender]?.removeValue(forKey: id) != nil, calls[pending.sender]?.isEmpty == true {
            calls[pending.sender] = nil
            callers.release(pending.sender, .checks)
        }
        guard !pending.abandoned else { return }
        let message = pending.call.message
        switch outcome {
        case let .success(result):
            let elapsed = ContinuousClock.now - pending.received
            do {
                try bus.reply(to: message) { reply throws(BusError) in
                    try ReachabilityService.appendHostReply(reply, result, elapsed: elapsed)
                }
            } catch {
                Log.warning("cannot reply to CheckHost(\(pending.host)): \(error)")
            }
        case let .failure(cancelled):
            guard let refusal = cancelled.refusal else {
                return bus.reply(to: message, error: BusError(name: ReachdContract.ErrorName.timeout, message: "the check of \(pending.host) was cancelled"))
            }
            // The core refuses a check only for the user's lookup rate.
            refuse(pending, .rateLimited, refusal)
        }
    }

    /// The caller left the bus: its checks are cancelled, their lookups and slots freed at once.
    private func left(_ sender: String) {
        guard let owned = calls.removeValue(forKey: sender) else { return }
        for (id, pending) in owned {
            pending.abandoned = true
            checks.cancelHostCheck(id)
        }
        metrics.counters.checksAbandoned += UInt64(owned.count)
        metrics.changed()
        Log.debug("client \(sender) left: cancelled \(owned.count) host check(s)")
    }
}
