/// What reachd counts for its metrics (DESIGN.md "Metrics"): plain numbers bumped where the
/// events happen. Fixed-size storage indexed by enum position, so a bump never allocates; the
/// label sets are the enums' cases, known in advance, and so is every series.
public struct MetricsCounters: Sendable, Hashable {
    /// `Changed` signals sent (the host's answer changed).
    public var changedEvents: UInt64 = 0
    /// Host checks finished with the host reachable (`reachable`), by nothing else.
    public var checksReachable: UInt64 = 0
    /// Host checks finished unreachable, by `Reason` (in `Reason.metricsOrder`).
    public var checksUnreachable = [UInt64](repeating: 0, count: Reason.metricsOrder.count)
    /// The duration of every finished host check.
    public var checkDuration = MetricsHistogram(bounds: MetricsHistogram.checkBounds)
    /// Host checks whose DNS lookup ran into its deadline.
    public var dnsDeadlineHits: UInt64 = 0
    /// Watch calls refused by a limit (MaxWatchesPerClient, MaxWatchesPerUser, MaxWatches).
    public var watchesRefused: UInt64 = 0
    /// Verdicts of the connectivity probe, by `ConnectivityVerdict` (in `ConnectivityVerdict.allCases` order;
    /// `unknown` stays 0: a probe always ends in one of the others).
    public var probeResults = [UInt64](repeating: 0, count: ConnectivityVerdict.allCases.count)
    /// Connections to `/metrics` closed unanswered at capacity (`MetricsEndpoint.maximumConnections`):
    /// an idle one that made room, or the newcomer when every slot was answering.
    public var scrapesRefused: UInt64 = 0

    public init() {}

    /// One finished host check: its verdict and how long it took.
    public mutating func recordCheck(_ result: CheckResult, seconds: Double) {
        if let reason = result.reason, !result.isReachable {
            checksUnreachable[reason.metricsIndex] += 1
            if reason == .dnsTimeout { dnsDeadlineHits += 1 }
        } else {
            checksReachable += 1
        }
        checkDuration.observe(seconds)
    }

    public mutating func recordProbe(_ connectivity: ConnectivityVerdict) {
        probeResults[connectivity.metricsIndex] += 1
    }
}

/// A Prometheus histogram's state: a count per upper bound (not cumulative; the exposition
/// adds them up), the sum and the count.
public struct MetricsHistogram: Sendable, Hashable {
    /// Upper bounds in seconds, ascending; `+Inf` is implied.
    public let bounds: [Double]
    /// Observations per bucket: `counts[i]` for `bounds[i - 1] < v <= bounds[i]`, the last one above every bound.
    public private(set) var counts: [UInt64]
    public private(set) var sum: Double = 0
    public private(set) var count: UInt64 = 0

    /// From a route lookup answered from memory (well under 5 ms) to DNS at its default deadline
    /// of 5 s and the longest a caller may ask (300 s, in +Inf).
    public static let checkBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    public init(bounds: [Double]) {
        self.bounds = bounds
        counts = [UInt64](repeating: 0, count: bounds.count + 1)
    }

    public mutating func observe(_ value: Double) {
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
    public static let metricsOrder: [Reason] = [.noRoute, .linkDown, .noAddress, .dnsTimeout, .dnsNotFound, .dnsFailure, .invalidTarget]

    var metricsIndex: Int {
        switch self {
        case .noRoute: 0
        case .linkDown: 1
        case .noAddress: 2
        case .dnsTimeout: 3
        case .dnsNotFound: 4
        case .dnsFailure: 5
        case .invalidTarget: 6
        // Only the host's path facts give it so far, never a check: were one to, it counts as
        // the noRoute it refines, and the series stay as README's "Metrics" counts them.
        case .policyBlocked: 0
        }
    }
}

extension ConnectivityVerdict {
    var metricsIndex: Int {
        switch self {
        case .unknown: 0
        case .none: 1
        case .portal: 2
        case .limited: 3
        case .full: 4
        }
    }
}
