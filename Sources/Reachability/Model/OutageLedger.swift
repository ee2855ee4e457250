/// Why time was lost, as the outage counters label it: the first broken layer of the host's or an
/// uplink's answer (`Explanation.LayerName`), or `unknown` when no layer was named. A closed set,
/// so the counters' series stay bounded whatever the network does.
package enum OutageCause: String, Hashable, Sendable, CaseIterable {
    case radio, link, address, gateway, route, dns, traffic, portal, unknown

    package init(_ layer: Explanation.LayerName?) {
        self = layer.flatMap { OutageCause(rawValue: $0.rawValue) } ?? .unknown
    }

    /// What a degradation can be: the traffic stalled, or the probe met a portal (or no internet).
    package static let degradations: [OutageCause] = [.traffic, .portal]
    /// What takes an uplink down (`History`'s uplink records name no other layer).
    package static let uplinkCauses: [OutageCause] = [.radio, .link, .address, .gateway, .route]
}

/// Time the outage counters could not watch: the host slept, or reachd did not run.
package enum UnobservedReason: String, Hashable, Sendable, CaseIterable {
    case asleep, stopped
}

/// What the outage counters read at one instant: seconds by cause, outages by cause, unobserved
/// seconds. Only ever grows (a restart carries it on through the state file).
package struct OutageTotals: Hashable, Sendable {
    package struct UplinkKey: Hashable, Sendable {
        package var kind: InterfaceKind
        package var cause: OutageCause
        package init(kind: InterfaceKind, cause: OutageCause) {
            self.kind = kind
            self.cause = cause
        }
    }

    /// Seconds the host was not online, by cause.
    package var offline: [OutageCause: Double] = [:]
    /// Seconds the host was online but stalled (traffic) or behind a portal or without the internet (portal).
    package var degraded: [OutageCause: Double] = [:]
    /// Seconds an uplink carried no default route, by its kind and cause (summed over uplinks).
    package var uplinkDown: [UplinkKey: Double] = [:]
    /// Outages of the host: times it went from online (or degraded) to not online, by cause.
    package var outages: [OutageCause: UInt64] = [:]
    package var unobserved: [UnobservedReason: Double] = [:]

    package init() {}
}

/// The outage counters' accounting, pure: each change of the host's or an uplink's answer and
/// each sleep comes in with its instant, and the time since the change before goes to what was
/// true meanwhile. Time accrues by timestamps, read when asked (`totals(at:)`), so nothing needs
/// to wake up while nothing changes.
///
/// Instants pair CLOCK_BOOTTIME (which runs on while the host sleeps) with how far it is ahead of
/// CLOCK_MONOTONIC (which stops meanwhile): what the gap gained between two instants is time the
/// host slept, counted as unobserved even when logind never said so. Between logind's two
/// `PrepareForSleep` signals, everything is unobserved.
package struct OutageLedger: Sendable {
    package struct Instant: Hashable, Sendable {
        /// CLOCK_BOOTTIME, microseconds.
        package var boot: UInt64
        /// CLOCK_BOOTTIME minus CLOCK_MONOTONIC, microseconds: the time slept since boot.
        package var suspended: UInt64
        package init(boot: UInt64, suspended: UInt64 = 0) {
            self.boot = boot
            self.suspended = suspended
        }
    }

    /// How the host's answer stands.
    package enum HostStanding: Hashable, Sendable {
        case up
        case degraded(OutageCause)
        case down(OutageCause)
    }

    /// At most this many uplinks are followed down at once; more (a container host's veths do
    /// not get here: only uplinks that once carried a default route do) are not counted.
    package static let maximumUplinks = 64

    /// Less than this gained by CLOCK_BOOTTIME on CLOCK_MONOTONIC is no sleep: the two clocks are
    /// read one after the other, so their difference moves by a microsecond or so between any two
    /// readings. No suspend of a host lasts less.
    package static let sleepThreshold = 0.5

    package private(set) var totals: OutageTotals
    private var host: HostStanding?
    /// Uplinks down now, by interface name (in memory only: the counters carry kinds, not names).
    private var uplinksDown: [String: OutageTotals.UplinkKey] = [:]
    /// Between logind's PrepareForSleep(true) and (false).
    private var asleep = false
    /// Accrued up to here; nil before the first change.
    private var last: Instant?
    /// The host was down when the previous run last wrote the counters: the same outage going
    /// on at start is not a new one.
    private var carriedDown: Bool

    package init(totals: OutageTotals = OutageTotals(), hostWasDown: Bool = false) {
        self.totals = totals
        carriedDown = hostWasDown
    }

    /// Whether the host's answer is down now (what the state file carries to the next run).
    package var hostDown: Bool {
        if case .down? = host { return true }
        return host == nil && carriedDown
    }

    /// The totals as they stand at `now`, with the time since the last change accrued.
    package func totals(at now: Instant) -> OutageTotals {
        var copy = self
        copy.advance(to: now)
        return copy.totals
    }

    /// The host's answer changed at `now`.
    package mutating func host(_ standing: HostStanding, at now: Instant) {
        advance(to: now)
        if case let .down(cause) = standing {
            let wasDown: Bool
            if case .down? = host { wasDown = true } else { wasDown = host == nil && carriedDown }
            if !wasDown { totals.outages[cause, default: 0] += 1 }
        }
        carriedDown = false
        host = standing
    }

    /// An uplink went down (with its kind and cause) or came back (`down` nil) at `now`.
    package mutating func uplink(_ name: String, down: OutageTotals.UplinkKey?, at now: Instant) {
        advance(to: now)
        guard let down else {
            uplinksDown[name] = nil
            return
        }
        guard uplinksDown[name] != nil || uplinksDown.count < Self.maximumUplinks else { return }
        uplinksDown[name] = down
    }

    /// logind said the host goes to sleep.
    package mutating func sleeping(at now: Instant) {
        advance(to: now)
        asleep = true
    }

    /// The host resumed (logind's word, or the clocks').
    package mutating func resumed(at now: Instant) {
        advance(to: now)
        asleep = false
    }

    /// reachd did not run for `seconds` (from the state file's last write to this start).
    package mutating func stopped(seconds: Double) {
        guard seconds > 0, seconds.isFinite else { return }
        totals.unobserved[.stopped, default: 0] += seconds
    }

    /// Gives the time since `last` to what stood meanwhile: to `asleep` what the host slept
    /// (all of it between logind's signals), the rest to the host's and the uplinks' answers.
    private mutating func advance(to now: Instant) {
        defer { last = now }
        guard let last, now.boot > last.boot else { return }
        let elapsed = Double(now.boot - last.boot) / 1_000_000
        let gained = now.suspended > last.suspended ? Double(now.suspended - last.suspended) / 1_000_000 : 0
        let slept = gained >= Self.sleepThreshold ? gained : 0
        let unobserved = asleep ? elapsed : min(slept, elapsed)
        if unobserved > 0 { totals.unobserved[.asleep, default: 0] += unobserved }
        let watched = elapsed - unobserved
        guard watched > 0 else { return }
        switch host {
        case let .down(cause)?: totals.offline[cause, default: 0] += watched
        case let .degraded(cause)?: totals.degraded[cause, default: 0] += watched
        case .up?, nil: break
        }
        for key in uplinksDown.values { totals.uplinkDown[key, default: 0] += watched }
    }
}
