import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// Follows the core and records each change of an answer, the host's and each uplink's, with
/// the layer that failed (`reachctl why`'s brokenLayer, from the same state): into a bounded
/// ring for `GetHistory` and, under journald, a structured journal entry. Per update it looks at
/// the host's answer and at the uplinks it has seen (at most `HistoryRing.defaultMaximumLanes`),
/// never at every link; an explanation costs two route lookups, already queued when asked.
final class History {
    private let state: SharedState
    private let journal: JournalEntry?
    private(set) var ring = HistoryRing()
    /// The interface the host was last online through: where an outage happened once no
    /// primary is left to name.
    private var lastPrimary = ""
    /// Uplinks seen stalled (their interface flags), by name.
    private var stalledUplinks: Set<String> = []
    /// Told each record kept, as it is kept (the outage clock counts the time between them).
    var recorded: (HistoryRecord) -> Void = { _ in }

    init(state: SharedState, journal: JournalEntry? = JournalEntry()) {
        self.state = state
        self.journal = journal
        Log.info(journal == nil
            ? "history: no journald socket (\(JournalEntry.socketPath)): keeping outages in memory only"
            : "history: outages go to the journal too (MESSAGE_ID=\(HistoryRecord.journalMessageID))")
    }

    /// How things stand when reachd starts: the first record of every lane.
    func start() {
        let snapshot = state.snapshot
        for status in snapshot.interfaces where status.flags.contains(.stalled) { stalledUplinks.insert(status.name) }
        record(snapshot.host, generation: snapshot.generation, touched: [], routingMoved: true)
    }

    /// logind said the host goes to sleep: until the resume nothing is watched, which is neither
    /// an outage nor online. Said on the host's lane, and on each uplink's that is down or
    /// degraded (its interval would otherwise run through the sleep).
    func sleeping() { unobserved(HistoryRecord.Condition.asleep) }

    /// The host is back: each lane's answer as it stands, whether or not it changed (a lane
    /// said asleep needs its answer again to end that).
    func resumed() {
        let snapshot = state.snapshot
        record(snapshot.host, generation: snapshot.generation, touched: [], routingMoved: true)
    }

    /// reachd stops: until the next reachd's first record, nothing is watched (the journal keeps
    /// this record; the memory goes with reachd).
    func stopped() { unobserved(HistoryRecord.Condition.stopped) }

    private func unobserved(_ reason: String) {
        let now = Self.wallMicroseconds()
        let generation = state.snapshot.generation
        let uplinks = ring.laneNames.filter { !$0.isEmpty && [.down, .degraded].contains(ring.latest($0)?.condition) }
        for lane in [""] + uplinks.sorted() {
            keep(HistoryRecord(time: now, lane: lane, condition: .unobserved, state: reason, reason: reason, generation: generation))
        }
    }

    func follow(_ update: CoreUpdate) {
        guard let change = update.change else { return }
        for status in change.changedInterfaces {
            if status.flags.contains(.stalled) { stalledUplinks.insert(status.name) } else { stalledUplinks.remove(status.name) }
        }
        for status in change.removedInterfaces { stalledUplinks.remove(status.name) }
        let touched = Set((change.changedInterfaces + change.removedInterfaces).map(\.name))
        record(change.host, generation: change.generation, touched: touched, routingMoved: update.routingMoved)
    }

    /// `touched`: the interfaces this update changed; with `routingMoved`, what may have moved
    /// the cause of an uplink that stays down. An explanation is asked only when the cheap
    /// facts say the answer may have changed: not on every update while offline.
    private func record(_ host: HostStatus, generation: UInt64, touched: Set<String>, routingMoved: Bool) {
        let now = Self.wallMicroseconds()
        if let record = hostRecord(host, time: now, generation: generation) { keep(record) }
        var uplinks = Set(host.availableInterfaces)
        for lane in ring.laneNames where !lane.isEmpty { uplinks.insert(lane) }
        for name in uplinks.sorted() {
            let available = host.availableInterfaces.contains(name)
            if !available, ring.latest(name)?.condition == .down, !touched.contains(name), !routingMoved { continue }
            keep(uplinkRecord(name, available: available, time: now, generation: generation))
        }
        if host.state == .online, !host.primaryInterface.isEmpty { lastPrimary = host.primaryInterface }
    }

    /// Keeps a record that changes its lane's answer, and sends it to the journal.
    private func keep(_ record: HistoryRecord) {
        if let latest = ring.latest(record.lane), latest.sameAnswer(as: record) { return }
        ring.append(record)
        journal?.send(record.journalFields)
        recorded(record)
    }

    /// nil when the host stays down for the same reason (nothing to ask the kernel again).
    private func hostRecord(_ host: HostStatus, time: UInt64, generation: UInt64) -> HistoryRecord? {
        var record = HistoryRecord(
            time: time, lane: "", condition: .up, state: host.state.rawValue, primary: host.primaryInterface, generation: generation)
        if host.state == .online {
            if host.stalled {
                record.condition = .degraded
                (record.cause, record.reason, record.interface) = (.traffic, "stalled", host.primaryInterface)
            } else if [.portal, .limited, .none].contains(host.connectivity.verdict) {
                record.condition = .degraded
                let reason = host.connectivity.verdict == .none ? "no-internet" : host.connectivity.verdict.rawValue
                (record.cause, record.reason, record.interface) = (.portal, reason, host.primaryInterface)
            }
            return record
        }
        record.condition = .down
        record.reason = host.pathFacts.reason?.rawValue ?? ""
        if let latest = ring.latest(""), latest.condition == .down, latest.state == record.state, latest.reason == record.reason,
            latest.primary == record.primary
        {
            return nil
        }
        let explanation = try? state.explain("").get()
        record.cause = explanation?.brokenLayer ?? Self.layer(of: host.pathFacts.reason)
        record.interface = host.primaryInterface.isEmpty ? lastPrimary : host.primaryInterface
        return record
    }

    /// An uplink is up while it carries a default route the host could use; else down, with the
    /// first broken layer of a path to the internet through it alone.
    private func uplinkRecord(_ name: String, available: Bool, time: UInt64, generation: UInt64) -> HistoryRecord {
        var record = HistoryRecord(time: time, lane: name, condition: .up, state: "up", interface: name, generation: generation)
        if available {
            if stalledUplinks.contains(name) {
                (record.condition, record.state, record.cause, record.reason) = (.degraded, "degraded", .traffic, "stalled")
            }
            return record
        }
        (record.condition, record.state) = (.down, "down")
        guard let explanation = state.explainUplink(name) else {
            (record.cause, record.reason) = (.link, "removed")
            return record
        }
        // Bound to the link, the lookup finds a path without a route: a lower layer that is
        // fine means the route is what went.
        switch explanation.brokenLayer {
        case let layer? where [.radio, .link, .address, .gateway].contains(layer):
            record.cause = layer
            record.reason = [.radio: Reason.radioOff, .link: .linkDown, .address: .noAddress, .gateway: .gatewayUnreachable][layer]?.rawValue ?? ""
        default:
            (record.cause, record.reason) = (.route, Reason.noRoute.rawValue)
        }
        return record
    }

    /// CLOCK_REALTIME in microseconds: what the journal stamps and `--since` compares.
    static func wallMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }

    /// The layer a host's Reason points at, for when the explanation names none.
    static func layer(of reason: Reason?) -> Explanation.LayerName? {
        switch reason {
        case .radioOff?: .radio
        case .linkDown?: .link
        case .noAddress?: .address
        case .gatewayUnreachable?: .gateway
        case .noRoute?, .policyBlocked?: .route
        case .firewallRefused?: .firewall
        case .dnsTimeout?, .dnsNotFound?, .dnsFailure?: .dns
        case .invalidTarget?, nil: nil
        }
    }
}
