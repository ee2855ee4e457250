/// What reachd counts for its metrics (docs/fleets.md): plain numbers bumped where the
/// events happen. Fixed-size storage indexed by enum position, so a bump never allocates; the
/// label sets are the enums' cases, known in advance, and so is every series.
package struct MetricsCounters: Sendable, Hashable {
    /// `Changed` signals sent (the host's answer changed).
    package var changedEvents: UInt64 = 0
    /// Host checks finished with the host reachable (`reachable`), by nothing else.
    package var checksReachable: UInt64 = 0
    /// Host checks finished unreachable, by `Reason` (in `Reason.metricsOrder`).
    package var checksUnreachable = [UInt64](repeating: 0, count: Reason.metricsOrder.count)
    /// The duration of every finished host check.
    package var checkDuration = MetricsHistogram(bounds: MetricsHistogram.checkBounds)
    /// Host checks whose DNS lookup ran into its deadline.
    package var dnsDeadlineHits: UInt64 = 0
    /// Watch calls refused by a limit (MaxWatchesPerClient, MaxWatchesPerUser, MaxWatches).
    package var watchesRefused: UInt64 = 0
    /// Verdicts of the connectivity probe, by `ConnectivityVerdict` (in `ConnectivityVerdict.allCases` order;
    /// `unknown` stays 0: a probe always ends in one of the others).
    package var probeResults = [UInt64](repeating: 0, count: ConnectivityVerdict.allCases.count)
    /// Connections to `/metrics` refused at capacity (`MetricsEndpoint.maximumConnections`): the
    /// newcomer, closed unanswered because every slot was answering a request.
    package var scrapesRefused: UInt64 = 0
    /// CheckHost calls refused by a limit, by `CheckRefusal` (in `CheckRefusal.allCases` order).
    package var checksRefused = [UInt64](repeating: 0, count: CheckRefusal.allCases.count)
    /// CheckHost calls cancelled, their DNS lookups with them, because their caller left the bus.
    package var checksAbandoned: UInt64 = 0
    /// Connections to `/metrics` reachd closed before the exchange ended, by `MetricsCutOff`
    /// (in `MetricsCutOff.allCases` order).
    package var scrapesCutOff = [UInt64](repeating: 0, count: MetricsCutOff.allCases.count)

    package init() {}

    /// One finished host check: its verdict and how long it took.
    package mutating func recordCheck(_ result: CheckResult, seconds: Double) {
        if let reason = result.reason, !result.isReachable {
            checksUnreachable[reason.metricsIndex] += 1
            if reason == .dnsTimeout { dnsDeadlineHits += 1 }
        } else {
            checksReachable += 1
        }
        checkDuration.observe(seconds)
    }

    package mutating func recordRefusal(_ refusal: CheckRefusal) {
        checksRefused[refusal.metricsIndex] += 1
    }

    package mutating func recordCutOff(_ cut: MetricsCutOff) {
        scrapesCutOff[cut.metricsIndex] += 1
    }

    package mutating func recordProbe(_ connectivity: ConnectivityVerdict) {
        probeResults[connectivity.metricsIndex] += 1
    }
}

/// A Prometheus histogram's state: a count per upper bound (not cumulative; the exposition
/// adds them up), the sum and the count.
package struct MetricsHistogram: Sendable, Hashable {
    /// Upper bounds in seconds, ascending; `+Inf` is implied.
    package let bounds: [Double]
    /// Observations per bucket: `counts[i]` for `bounds[i - 1] < v <= bounds[i]`, the last one above every bound.
    package private(set) var counts: [UInt64]
    package private(set) var sum: Double = 0
    package private(set) var count: UInt64 = 0

    /// From a route lookup answered from memory (well under 5 ms) to DNS at its default deadline
    /// of 5 s and the longest a caller may ask (300 s, in +Inf).
    package static let checkBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    package init(bounds: [Double]) {
        self.bounds = bounds
        counts = [UInt64](repeating: 0, count: bounds.count + 1)
    }

    package mutating func observe(_ value: Double) {
        var index = bounds.count
        for (i, bound) in bounds.enumerated() where value <= bound {
            index = i
            break
        }
        counts[index] += 1
        sum += value
        count += 1
    }
}

extension Reason {
    /// The order of the `reason` label's values; a switch, so indexing allocates nothing.
    package static let metricsOrder: [Reason] = [.noRoute, .linkDown, .noAddress, .dnsTimeout, .dnsNotFound, .dnsFailure, .invalidTarget]

    package var metricsIndex: Int {
        switch self {
        case .noRoute: 0
        case .linkDown: 1
        case .noAddress: 2
        case .dnsTimeout: 3
        case .dnsNotFound: 4
        case .dnsFailure: 5
        case .invalidTarget: 6
        // A check refused by a kill switch counts as the noRoute it refines (it was one before
        // checks told them apart), so the series stay as docs/fleets.md counts them.
        case .policyBlocked: 0
        // Likewise host-only: a radio switched off is a link down, for the series.
        case .radioOff: 1
        // A dead gateway is a route that cannot carry traffic: noRoute, for the series.
        case .gatewayUnreachable: 0
        // Only reachctl says it (reachd cannot read the ruleset): never a daemon's check.
        case .firewallRefused: 0
        }
    }
}

extension ConnectivityVerdict {
    package var metricsIndex: Int {
        switch self {
        case .unknown: 0
        case .none: 1
        case .portal: 2
        case .limited: 3
        case .full: 4
        }
    }
}

/// Which limit refused a host check (`reachd_host_checks_refused_total{reason}`); the D-Bus
/// error is `LimitExceeded` for each, its message says which.
package enum CheckRefusal: String, CaseIterable, Sendable {
    /// The caller's Unix user holds its share of the checks in flight, or the users other than
    /// root together hold all but the reserve kept for the system.
    case shareFull = "share_full"
    /// The user's rate of new DNS lookups (`LookupsPerUserPerSecond=`, `LookupBurstPerUser=`).
    case rateLimited = "rate_limited"
    /// reachd holds as many checks in flight as it ever does, from everyone together.
    case inFlightCap = "in_flight_cap"

    package var metricsIndex: Int {
        switch self {
        case .shareFull: 0
        case .rateLimited: 1
        case .inFlightCap: 2
        }
    }
}

/// Why reachd closed a `/metrics` connection before the exchange ended
/// (`reachd_metrics_connections_cut_off_total{reason}`).
package enum MetricsCutOff: String, CaseIterable, Sendable {
    /// It had not sent a whole request head when a newcomer arrived at capacity: the oldest
    /// such connection makes room.
    case evicted
    /// It had not sent a whole request head within the head deadline (2 s).
    case headDeadline = "head_deadline"
    /// It had not taken its answer, or closed after it, within the deadline (5 s).
    case deadline
    /// It kept sending past the answer more than the lingering close reads (64 KiB).
    case drainLimit = "drain_limit"

    package var metricsIndex: Int {
        switch self {
        case .evicted: 0
        case .headDeadline: 1
        case .deadline: 2
        case .drainLimit: 3
        }
    }
}
