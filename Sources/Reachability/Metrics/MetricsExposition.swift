/// Everything the exposition shows at one moment: the state, the counters and who is speaking.
package struct MetricsSample: Sendable {
    package var snapshot: ReachabilitySnapshot
    package var mirror: MirrorCounters
    package var counters: MetricsCounters
    /// Watch objects served now (reachd); 0 in-process, where there are none.
    package var watches: Int
    /// What reachd holds for its callers besides watches (0 in-process).
    package var held = HeldForCallers()
    /// When the process started, in seconds since the Unix epoch.
    package var startTime: Double
    package var version: String
    /// The outage counters (reachd); nil in-process, where nothing keeps them.
    package var outage: OutageTotals?
    /// `[Units] Watch=`'s units in order, each with whether its own traffic is stalled (reachd):
    /// one series per configured unit, none without.
    package var unitStalls: [(unit: String, stalled: Bool)] = []

    package init(
        snapshot: ReachabilitySnapshot, mirror: MirrorCounters, counters: MetricsCounters = MetricsCounters(),
        watches: Int = 0, startTime: Double, version: String = BuildInfo.version, outage: OutageTotals? = nil
    ) {
        self.outage = outage
        self.snapshot = snapshot
        self.mirror = mirror
        self.counters = counters
        self.watches = watches
        self.startTime = startTime
        self.version = version
    }
}

/// What reachd holds for its callers now, by ledger: each reads 0 once they are all gone, so a
/// ledger that does not is a leak an operator (and a test) sees.
package struct HeldForCallers: Sendable, Equatable {
    /// CheckHost calls whose reply is still owed (`HostCheckCalls`).
    package var hostCheckCalls = 0
    /// Host checks the core runs (the calls', the watches' and the probe's), with their lookups.
    package var hostChecksRunning = 0
    /// Bus clients reachd keeps a record of, for what they hold (`Callers`).
    package var clients = 0

    package init(hostCheckCalls: Int = 0, hostChecksRunning: Int = 0, clients: Int = 0) {
        (self.hostCheckCalls, self.hostChecksRunning, self.clients) = (hostCheckCalls, hostChecksRunning, clients)
    }
}

/// reachd's version, as `reachd --version` and `reachd_build_info` give it.
package enum BuildInfo {
    package static let version = "0.1.0"
}

/// The Prometheus text exposition format (version 0.0.4) of a `MetricsSample`: what the
/// node_exporter textfile, `/metrics` and `reachctl metrics` all print. Pure.
///
/// Every series exists from the start (counters at 0), and the label values come from closed
/// sets (states, kinds, flags, reasons, verdicts) except `reachd_host_info`'s interface name, of
/// which there is one series at a time. Interfaces are counted by kind, never listed by name,
/// so a container host creating and deleting thousands of veths changes values, not series:
/// the series count is fixed (docs/fleets.md counts them).
package enum MetricsExposition {
    /// The Content-Type of the format (`/metrics` answers with it).
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    package static func render(_ sample: MetricsSample) -> String {
        var out = ExpositionText()
        renderHost(sample, into: &out)
        renderInterfaces(sample, into: &out)
        renderCounters(sample, into: &out)
        if let outage = sample.outage { renderOutage(outage, into: &out) }
        out.family("reachd_start_time_seconds", .gauge, "When reachd started, in seconds since the Unix epoch.")
        out.sample("reachd_start_time_seconds", [], sample.startTime)
        out.family("reachd_build_info", .gauge, "Always 1: the version of reachd.")
        out.sample("reachd_build_info", [("version", sample.version)], 1)
        return out.text
    }

    /// The host's answer: state, primary interface, flags, the probe's verdict, stalled.
    private static func renderHost(_ sample: MetricsSample, into out: inout ExpositionText) {
        let host = sample.snapshot.host
        out.family("reachd_host_state", .gauge, "The host's connectivity state (1 for the current one): online when the default route leaves through a ready link, local when only a link is ready, offline otherwise.")
        for state in HostState.allCases {
            out.sample("reachd_host_state", [("state", state.rawValue)], host.state == state ? 1 : 0)
        }
        let primary = sample.snapshot.interfaces.first { $0.name == host.primaryInterface }
        out.family("reachd_host_info", .gauge, "Always 1: the primary interface (the one the kernel's default route uses now; empty when none) and its kind.")
        out.sample("reachd_host_info", [("primary_interface", host.primaryInterface), ("kind", primary?.kind.rawValue ?? "")], 1)
        out.family("reachd_host_flag", .gauge, "The flags of the host's answer (the check of 0.0.0.0 and ::), 1 when set.")
        // radioOff is an interface's flag only: the host's answer never carries it.
        for (flag, name) in ReachabilityFlags.named where flag != .radioOff {
            out.sample("reachd_host_flag", [("flag", name)], host.flags.contains(flag) ? 1 : 0)
        }
        out.family("reachd_connectivity", .gauge, "The connectivity probe's verdict (1 for the current one); unknown when the probe is off.")
        for verdict in ConnectivityVerdict.allCases {
            out.sample("reachd_connectivity", [("verdict", verdict.rawValue)], host.connectivity.verdict == verdict ? 1 : 0)
        }

        // The portal API's session, never its URLs: a login URL carries a session token.
        let session = host.portalSession
        out.family("reachd_portal_captive", .gauge, "1 while the network's captive-portal API (RFC 8908) says the host is captive, 0 otherwise.")
        out.sample("reachd_portal_captive", [], session.captive ? 1 : 0)
        out.family("reachd_portal_ending", .gauge, "1 while the portal session ends within [Portal] EndingLead= (no-portal is false), 0 otherwise.")
        out.sample("reachd_portal_ending", [], session.ending ? 1 : 0)
        out.family("reachd_portal_session_end_seconds", .gauge, "When the portal session ends, as the API said, in seconds since the epoch; 0 when it said no time.")
        out.sample("reachd_portal_session_end_seconds", [], Double(session.ends) / 1e6)
        out.family("reachd_portal_bytes_remaining", .gauge, "The bytes the portal session has left, as the API said; -1 when it said none.")
        out.sample("reachd_portal_bytes_remaining", [], Double(session.bytesRemaining))

        out.family("reachd_stalled", .gauge, "1 while the host's own TCP traffic through its path has stopped flowing (passive stall detection: sent, retransmitted, nothing received), 0 otherwise.")
        out.sample("reachd_stalled", [], host.stalled ? 1 : 0)
        guard !sample.unitStalls.isEmpty else { return }
        out.family("reachd_unit_stalled", .gauge, "1 while the own TCP traffic of a unit of [Units] Watch= has stopped flowing (its cgroup's sockets, judged apart from the host's), 0 otherwise.")
        for (unit, stalled) in sample.unitStalls { out.sample("reachd_unit_stalled", [("unit", unit)], stalled ? 1 : 0) }
    }

    /// The interfaces by kind: present, ready, stalled (a fixed series count, whatever the links).
    private static func renderInterfaces(_ sample: MetricsSample, into out: inout ExpositionText) {
        var present = [Int](repeating: 0, count: InterfaceKind.allCases.count)
        var ready = present
        var stalled = present
        for interface in sample.snapshot.interfaces {
            let index = InterfaceKind.allCases.firstIndex(of: interface.kind) ?? 0
            present[index] += 1
            if interface.flags.contains(.reachable) { ready[index] += 1 }
            if interface.flags.contains(.stalled) { stalled[index] += 1 }
        }
        out.family("reachd_interfaces", .gauge, "Interfaces reachd sees (not ignored), by kind.")
        for (index, kind) in InterfaceKind.allCases.enumerated() {
            out.sample("reachd_interfaces", [("kind", kind.rawValue)], Double(present[index]))
        }
        out.family("reachd_interfaces_ready", .gauge, "Interfaces that are ready (up, with carrier and a usable address), by kind.")
        for (index, kind) in InterfaceKind.allCases.enumerated() {
            out.sample("reachd_interfaces_ready", [("kind", kind.rawValue)], Double(ready[index]))
        }
        out.family("reachd_interfaces_stalled", .gauge, "Interfaces whose own TCP traffic stopped flowing at the last stall poll, by kind.")
        for (index, kind) in InterfaceKind.allCases.enumerated() {
            out.sample("reachd_interfaces_stalled", [("kind", kind.rawValue)], Double(stalled[index]))
        }
    }

    /// What happened since start: signals, resyncs, announcements, checks, watches, probes, scrapes.
    private static func renderCounters(_ sample: MetricsSample, into out: inout ExpositionText) {
        let counters = sample.counters
        out.counter("reachd_changed_events_total", "Changed signals sent: changes of the host's answer.", counters.changedEvents)
        out.counter("reachd_netlink_overruns_total", "Times the netlink receive buffer overran (ENOBUFS); each is followed by a resync.", sample.mirror.overruns)
        out.counter("reachd_netlink_resyncs_total", "Full dumps of links, addresses and routes, the first one at start included.", sample.mirror.resyncs)
        out.family("reachd_announcements_held", .gauge, "Captive-portal URIs and NAT64 prefixes from router advertisements held now, over every link (at most 1 portal and 4 prefixes per link).")
        out.sample("reachd_announcements_held", [], Double(sample.mirror.announcementsHeld))
        out.counter("reachd_announcements_dropped_total", "Router advertisement announcements dropped because their link held as many as it may (more routers announcing than a link keeps).", sample.mirror.announcementsDropped)
        out.counter("reachd_gateway_resolutions_total", "Times a gateway whose ARP/ND resolution FAILED was resolved afresh (one empty datagram to it each).", sample.mirror.gatewayResolutionsAsked)

        out.family("reachd_host_checks_total", .counter, "Host checks (CheckHost, watches of host names, the connectivity probe's lookups) finished, by outcome and reason.")
        out.sample("reachd_host_checks_total", [("outcome", "reachable"), ("reason", "")], Double(counters.checksReachable))
        for (index, reason) in Reason.metricsOrder.enumerated() {
            out.sample("reachd_host_checks_total", [("outcome", "unreachable"), ("reason", reason.rawValue)], Double(counters.checksUnreachable[index]))
        }
        out.histogram("reachd_host_check_duration_seconds", "How long host checks took, from the request to the answer.", counters.checkDuration)
        out.counter("reachd_dns_deadline_hits_total", "Host checks whose DNS lookup had no answer before its deadline.", counters.dnsDeadlineHits)
        out.family("reachd_host_checks_refused_total", .counter, "CheckHost calls refused with LimitExceeded, by the limit: share_full (the user's share, or the reserve kept for the system), rate_limited (the user's rate of new DNS lookups), in_flight_cap (all callers together).")
        for (index, refusal) in CheckRefusal.allCases.enumerated() {
            out.sample("reachd_host_checks_refused_total", [("reason", refusal.rawValue)], Double(counters.checksRefused[index]))
        }
        out.counter("reachd_host_checks_abandoned_total", "CheckHost calls cancelled, with their DNS lookups, because their caller left the bus.", counters.checksAbandoned)

        out.family("reachd_watches", .gauge, "Watch objects served to D-Bus clients now.")
        out.sample("reachd_watches", [], Double(sample.watches))
        out.family("reachd_host_check_calls_in_flight", .gauge, "CheckHost calls whose reply is still owed.")
        out.sample("reachd_host_check_calls_in_flight", [], Double(sample.held.hostCheckCalls))
        out.family("reachd_host_checks_running", .gauge, "Host checks running now (CheckHost's, the watches', the probe's), each with its DNS lookup.")
        out.sample("reachd_host_checks_running", [], Double(sample.held.hostChecksRunning))
        out.family("reachd_bus_clients_holding", .gauge, "D-Bus clients holding watches or host checks now.")
        out.sample("reachd_bus_clients_holding", [], Double(sample.held.clients))
        out.counter("reachd_watches_refused_total", "Watch calls refused by MaxWatchesPerClient, MaxWatchesPerUser or MaxWatches.", counters.watchesRefused)

        out.family("reachd_connectivity_probes_total", .counter, "Connectivity probes finished, by verdict.")
        for (index, verdict) in ConnectivityVerdict.allCases.enumerated() where verdict != .unknown {
            out.sample("reachd_connectivity_probes_total", [("verdict", verdict.rawValue)], Double(counters.probeResults[index]))
        }
        out.counter("reachd_metrics_scrapes_refused_total", "Connections to the metrics socket closed unanswered because every slot was answering a request.", counters.scrapesRefused)
        out.family("reachd_metrics_connections_cut_off_total", .counter, "Connections to the metrics socket closed before the exchange ended, by reason: evicted (no request head yet when a newcomer came at capacity), head_deadline, deadline, drain_limit.")
        for (index, cut) in MetricsCutOff.allCases.enumerated() {
            out.sample("reachd_metrics_connections_cut_off_total", [("reason", cut.rawValue)], Double(counters.scrapesCutOff[index]))
        }
    }

    /// Label values as the format wants them: backslash, double quote and line feed escaped.
    package static func escapeLabelValue(_ value: String) -> String { escape(value, quotes: true) }

    /// HELP text escapes only backslash and line feed.
    package static func escape(_ value: String, quotes: Bool) -> String {
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"" where quotes: escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// A sample value: whole numbers without a fraction (`le="10"`, not `le="10.0"`).
    package static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

/// Builds the text: one `# HELP`/`# TYPE` header per family, then its samples.
package struct ExpositionText {
    package enum Kind: String { case gauge, counter, histogram }

    package var text = ""

    package mutating func family(_ name: String, _ kind: Kind, _ help: String) {
        text += "# HELP \(name) \(MetricsExposition.escape(help, quotes: false))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    package mutating func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(MetricsExposition.escapeLabelValue($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + MetricsExposition.format(value) + "\n"
    }

    package mutating func counter(_ name: String, _ help: String, _ value: UInt64) {
        family(name, .counter, help)
        sample(name, [], Double(value))
    }

    package mutating func histogram(_ name: String, _ help: String, _ histogram: MetricsHistogram) {
        family(name, .histogram, help)
        var cumulative: UInt64 = 0
        for (index, bound) in histogram.bounds.enumerated() {
            cumulative += histogram.counts[index]
            sample(name + "_bucket", [("le", MetricsExposition.format(bound))], Double(cumulative))
        }
        sample(name + "_bucket", [("le", "+Inf")], Double(histogram.count))
        sample(name + "_sum", [], histogram.sum)
        sample(name + "_count", [], Double(histogram.count))
    }
}
