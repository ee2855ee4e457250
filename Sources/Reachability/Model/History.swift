/// "When was I offline, for how long, and why?": each change of an answer (the host's, or one
/// uplink's) as reachd records it, with the layer that failed, and what those records make:
/// outages and degradations with their start, end and cause (`HistoryTimeline`). reachd keeps
/// the latest records in memory (`HistoryRing`) and sends each to the journal; `reachctl
/// history` reads both.
package struct HistoryRecord: Hashable, Sendable {
    /// How an answer stands after the change.
    package enum Condition: String, Hashable, Sendable, CaseIterable {
        /// Online (the host), or carrying a default route (an uplink).
        case up
        /// Online, but the traffic stalled or the probe found a portal or no internet.
        case degraded
        /// Not online (the host), or no longer carrying a default route (an uplink).
        case down
        /// Nobody watched: the host was asleep (reason `asleep`, from logind's warning to the
        /// resume) or reachd stopped (reason `stopped`, until the next reachd's first record).
        /// Neither an outage nor online: the lane's next record ends it.
        case unobserved

        /// The reasons an `unobserved` record gives.
        package static let asleep = "asleep"
        package static let stopped = "stopped"
    }

    /// Wall-clock microseconds since the Unix epoch (CLOCK_REALTIME), as the journal stamps.
    package var time: UInt64
    /// Whose answer: "" for the host, else the uplink's interface name.
    package var lane: String
    package var condition: Condition
    /// The host's State (online, local, offline); for an uplink, the condition's word.
    package var state: String
    /// The host's primary interface after the change, on the host's lane ("" when there is none, and on an uplink's lane).
    package var primary: String
    /// The host's `Reason` (noRoute, linkDown, gatewayUnreachable...), "removed" for an uplink
    /// that disappeared, "stalled", "portal", "limited" or "no-internet" for a degradation;
    /// "" when up.
    package var reason: String
    /// The first broken layer, `reachctl why`'s brokenLayer; nil when up.
    package var cause: Explanation.LayerName?
    /// The interface the cause lies on: the egress link (or the one the host was last online
    /// through when no link is left); "" when unknown.
    package var interface: String
    /// reachd's Generation when it happened (0 when it was recorded by an older reachd).
    package var generation: UInt64

    package init(
        time: UInt64, lane: String, condition: Condition, state: String, primary: String = "", reason: String = "",
        cause: Explanation.LayerName? = nil, interface: String = "", generation: UInt64 = 0
    ) {
        self.time = time
        self.lane = lane
        self.condition = condition
        self.state = state
        self.primary = primary
        self.reason = reason
        self.cause = cause
        self.interface = interface
        self.generation = generation
    }

    /// The same answer, whenever it was recorded: a record that repeats its lane's latest one
    /// (an interface moved without changing the verdict) is not a change worth keeping.
    package func sameAnswer(as other: HistoryRecord) -> Bool {
        lane == other.lane && condition == other.condition && state == other.state && primary == other.primary
            && reason == other.reason && cause == other.cause && interface == other.interface
    }
}

/// The latest records, bounded: `perLane` per lane (the host's and each uplink's), at most
/// `maximumLanes` uplink lanes (the one heard from least recently goes first). At the defaults
/// (1,024 records, 16 uplinks, about 150 bytes a record) it holds at most about 2.6 MB.
package struct HistoryRing: Sendable {
    package static let defaultPerLane = 1024
    package static let defaultMaximumLanes = 16

    package let perLane: Int
    package let maximumLanes: Int
    private var lanes: [String: Lane] = [:]

    /// One lane's records in a circular buffer: `next` is where the next one goes once full.
    private struct Lane: Sendable {
        var records: [HistoryRecord] = []
        var next = 0
        var latest: HistoryRecord? { records.isEmpty ? nil : records[(next + records.count - 1) % records.count] }
        var inOrder: [HistoryRecord] { Array(records[next...] + records[..<next]) }
    }

    package init(perLane: Int = defaultPerLane, maximumLanes: Int = defaultMaximumLanes) {
        precondition(perLane > 0 && maximumLanes >= 0, "a history ring holds at least one record per lane")
        self.perLane = perLane
        self.maximumLanes = maximumLanes
    }

    /// The lane's latest record, to tell whether a new one is a change.
    package func latest(_ lane: String) -> HistoryRecord? { lanes[lane]?.latest }

    /// Keeps `record`, dropping its lane's oldest when the lane is full. Constant time but for
    /// a new uplink lane beyond `maximumLanes` (a walk over at most that many lanes).
    package mutating func append(_ record: HistoryRecord) {
        if lanes[record.lane] == nil, !record.lane.isEmpty {
            let uplinks = lanes.filter { !$0.key.isEmpty }
            if uplinks.count >= maximumLanes {
                guard let stalest = uplinks.min(by: { ($0.value.latest?.time ?? 0) < ($1.value.latest?.time ?? 0) }) else { return }
                lanes.removeValue(forKey: stalest.key)
            }
        }
        var lane = lanes[record.lane] ?? Lane()
        lanes[record.lane] = nil  // unique, so the append below does not copy the buffer
        if lane.records.count < perLane {
            lane.records.append(record)
        } else {
            lane.records[lane.next] = record
            lane.next = (lane.next + 1) % perLane
        }
        lanes[record.lane] = lane
    }

    /// Every lane's records, oldest first, with the last record before `since` of each lane
    /// too: it tells how that lane stood when the period began.
    package func records(since: UInt64 = 0) -> [HistoryRecord] {
        var found: [HistoryRecord] = []
        for lane in lanes.values {
            let all = lane.inOrder
            let first = all.lastIndex { $0.time < since } ?? 0
            found += all[first...]
        }
        return found.sorted { ($0.time, $0.lane) < ($1.time, $1.lane) }
    }

    /// The lanes held: "" (the host) and the uplinks' names.
    package var laneNames: [String] { Array(lanes.keys) }

    /// How far back each lane reaches: the oldest record kept of the host's lane (nil: none).
    package var oldestHostRecord: UInt64? { lanes[""]?.inOrder.first?.time }
}

/// Records turned into what a user asks about: each outage (down) and degradation, with its
/// start, end (nil while it lasts), cause and reason, and a summary of the host's outages.
/// Pure: records and an instant in, intervals out.
package struct HistoryTimeline: Hashable, Sendable {
    package struct Interval: Hashable, Sendable {
        package var lane: String
        package var condition: HistoryRecord.Condition
        /// Wall-clock microseconds.
        package var start: UInt64
        /// nil while it lasts.
        package var end: UInt64?
        package var cause: Explanation.LayerName?
        package var reason: String
        package var interface: String
        /// The host's State during it ("local", "offline"; "online" for a degradation).
        package var state: String

        /// Microseconds, up to `now` while it lasts.
        package func duration(now: UInt64) -> UInt64 { (end ?? max(now, start)) - start }
    }

    package private(set) var intervals: [Interval]
    /// The period: from `since` (or the oldest record) to `now`, never after `now`, and `now`
    /// never after `HistoryRecord.latestTime`: every instant here is exact in a Double, so the
    /// SVG's arithmetic (and a sum of durations) cannot overflow, whatever the records said.
    package private(set) var since: UInt64
    package private(set) var now: UInt64

    /// The host's outages in the period: how many, their total and the longest, in microseconds
    /// (an ongoing one counts up to `now`; one that began before `since` counts from `since`).
    package var outageCount: Int { hostOutages.count }
    package var totalOffline: UInt64 { hostOutages.reduce(0) { $0 + clipped($1) } }
    package var longestOutage: UInt64 { hostOutages.map(clipped).max() ?? 0 }
    package var degradationCount: Int { intervals.count(where: { $0.lane.isEmpty && $0.condition == .degraded }) }
    /// The host's time unobserved in the period, in microseconds, by reason (`asleep`,
    /// `stopped`): time that is neither offline nor online.
    package func totalUnobserved(_ reason: String) -> UInt64 {
        intervals.filter { $0.lane.isEmpty && $0.condition == .unobserved && $0.reason == reason }.reduce(0) { $0 + clipped($1) }
    }

    private var hostOutages: [Interval] { intervals.filter { $0.lane.isEmpty && $0.condition == .down } }
    private func clipped(_ interval: Interval) -> UInt64 {
        let start = max(interval.start, since)
        return (interval.end ?? max(now, start)) > start ? (interval.end ?? now) - start : 0
    }

    /// The lanes that appear, the host's ("") first, then uplinks by name.
    package var lanes: [String] {
        let names = Set(intervals.map(\.lane))
        return ([""] + names.filter { !$0.isEmpty }.sorted())
    }

    /// Each lane's records in time order make its intervals: a record that is not `up` opens
    /// one (closing any of another condition or cause), an `up` record closes it. Intervals
    /// that ended before `since` (nil: the oldest record) are left out. Records may come from
    /// several reachd runs (the journal): an interval still open when the next run's first
    /// record says `up` ends there. A record dated after `now` is skipped: it was made while
    /// the clock ran ahead (set wrong, then corrected), and kept it would end or open intervals
    /// that have not happened; it never stops the records after it from counting.
    package init(records: [HistoryRecord], since: UInt64? = nil, now: UInt64) {
        let now = min(now, HistoryRecord.latestTime)
        let past = records.filter { $0.time <= now }
        self.now = now
        let since = min(since ?? past.lazy.map(\.time).min() ?? now, now)
        self.since = since
        var open: [String: Interval] = [:]
        var closed: [Interval] = []
        for record in past.sorted(by: { ($0.time, $0.generation) < ($1.time, $1.generation) }) {
            let current = open[record.lane]
            if record.condition == .up {
                if var ended = current {
                    ended.end = record.time
                    closed.append(ended)
                    open[record.lane] = nil
                }
                continue
            }
            if let current, current.condition == record.condition, current.cause == record.cause, current.reason == record.reason {
                continue  // the same trouble, another detail changed (the primary, the State)
            }
            if var ended = current {
                ended.end = record.time
                closed.append(ended)
            }
            open[record.lane] = Interval(
                lane: record.lane, condition: record.condition, start: record.time, end: nil, cause: record.cause,
                reason: record.reason, interface: record.interface, state: record.state)
        }
        intervals = (closed + open.values)
            .filter { ($0.end ?? UInt64.max) >= since }
            .sorted { ($0.start, $0.lane) < ($1.start, $1.lane) }
    }
}
