import Foundation
import Testing
@testable import Reachability

/// issue 13: the exposition every metrics output prints, and `[Metrics]` in reachd.conf.
@Suite struct MetricsExpositionTests {
    static func interface(_ index: Int32, _ name: String, _ kind: InterfaceKind, ready: Bool) -> InterfaceStatus {
        InterfaceStatus(index: index, name: name, kind: kind, flags: ready ? [.reachable] : [.connectionRequired], addresses: [])
    }

    static func sample(interfaces: [InterfaceStatus], primary: String = "eth0") -> MetricsSample {
        var counters = MetricsCounters()
        counters.changedEvents = 3
        counters.recordCheck(CheckResult(target: "example.org", flags: .reachable), seconds: 0.004)
        counters.recordCheck(CheckResult(target: "slow.example", reason: .dnsTimeout), seconds: 5.2)
        counters.recordProbe(.full)
        counters.watchesRefused = 2
        let host = HostStatus(flags: [.reachable, .isWired], state: .online, primaryInterface: primary,
                              connectivity: ConnectivityStatus(verdict: .full))
        return MetricsSample(
            snapshot: ReachabilitySnapshot(generation: 7, host: host, interfaces: interfaces),
            mirror: MirrorCounters(overruns: 1, resyncs: 2), counters: counters, watches: 5,
            startTime: 1_795_000_000.5, version: "9.8.7")
    }

    static let typical = [
        interface(1, "lo", .loopback, ready: true), interface(2, "eth0", .wired, ready: true),
        interface(3, "wlan0", .wifi, ready: false),
    ]

    static func lines(_ text: String) -> Set<String> { Set(text.split(separator: "\n").map(String.init)) }

    @Test func theSampleShowsTheStateAndCountersUnderStableNames() {
        let text = MetricsExposition.render(Self.sample(interfaces: Self.typical))
        let lines = Self.lines(text)
        for expected in [
            #"reachd_host_state{state="online"} 1"#, #"reachd_host_state{state="offline"} 0"#,
            #"reachd_host_info{primary_interface="eth0",kind="wired"} 1"#,
            #"reachd_host_flag{flag="reachable"} 1"#, #"reachd_host_flag{flag="isWiFi"} 0"#,
            #"reachd_connectivity{verdict="full"} 1"#, #"reachd_connectivity{verdict="unknown"} 0"#,
            #"reachd_interfaces{kind="wired"} 1"#, #"reachd_interfaces{kind="wifi"} 1"#, #"reachd_interfaces{kind="vpn"} 0"#,
            #"reachd_interfaces_ready{kind="wired"} 1"#, #"reachd_interfaces_ready{kind="wifi"} 0"#,
            "reachd_changed_events_total 3", "reachd_netlink_overruns_total 1", "reachd_netlink_resyncs_total 2",
            #"reachd_host_checks_total{outcome="reachable",reason=""} 1"#,
            #"reachd_host_checks_total{outcome="unreachable",reason="dnsTimeout"} 1"#,
            #"reachd_host_checks_total{outcome="unreachable",reason="noRoute"} 0"#,
            #"reachd_host_check_duration_seconds_bucket{le="0.005"} 1"#,
            #"reachd_host_check_duration_seconds_bucket{le="5"} 1"#,
            #"reachd_host_check_duration_seconds_bucket{le="10"} 2"#,
            #"reachd_host_check_duration_seconds_bucket{le="+Inf"} 2"#,
            "reachd_host_check_duration_seconds_count 2", "reachd_host_check_duration_seconds_sum 5.204",
            "reachd_dns_deadline_hits_total 1", "reachd_watches 5", "reachd_watches_refused_total 2",
            #"reachd_connectivity_probes_total{verdict="full"} 1"#, #"reachd_connectivity_probes_total{verdict="none"} 0"#,
            "reachd_start_time_seconds 1795000000.5", #"reachd_build_info{version="9.8.7"} 1"#,
            "# TYPE reachd_host_check_duration_seconds histogram", "# TYPE reachd_changed_events_total counter",
            "# TYPE reachd_host_state gauge",
        ] {
            #expect(lines.contains(expected), "missing \(expected) in\n\(text)")
        }
        // `unknown` is what no probe ends in: no series for it.
        #expect(!text.contains(#"reachd_connectivity_probes_total{verdict="unknown"}"#))
        #expect(text.hasSuffix("\n"))
    }

    /// Label values escape backslash, double quote and line feed (Linux allows the first two in
    /// interface names); nothing else is touched.
    @Test func labelValuesAreEscaped() {
        #expect(MetricsExposition.escapeLabelValue(#"a\b"c"# + "\nd") == #"a\\b\"c\nd"#)
        #expect(MetricsExposition.escapeLabelValue("wlp0s20f3-é") == "wlp0s20f3-é")
        let odd = #"we"ird\"#
        let text = MetricsExposition.render(Self.sample(interfaces: [Self.interface(2, odd, .wired, ready: true)], primary: odd))
        #expect(text.contains(#"reachd_host_info{primary_interface="we\"ird\\",kind="wired"} 1"#), "\(text)")
    }

    /// Interfaces are counted by kind: a thousand veths change values, never the series.
    @Test func theSeriesStayTheSameHoweverManyInterfacesComeAndGo() {
        func series(_ text: String) -> [String] {
            text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0[..<$0.lastIndex(of: " ")!]) }
        }
        let few = series(MetricsExposition.render(Self.sample(interfaces: Self.typical)))
        let veths = (0..<1000).map { (index: Int) in Self.interface(Int32(100 + index), "veth\(index)", .virtual, ready: index % 2 == 0) }
        let many = MetricsExposition.render(Self.sample(interfaces: Self.typical + veths))
        #expect(series(many) == few)
        #expect(many.contains(#"reachd_interfaces{kind="virtual"} 1000"#))
        #expect(many.contains(#"reachd_interfaces_ready{kind="virtual"} 500"#))
        // The figure docs/fleets.md gives.
        #expect(few.count == 103, "\(few.count) series")
    }

    /// promtool, Prometheus' own linter, accepts the format, names, help and types.
    @Test func promtoolAcceptsTheExposition() throws {
        let odd = "a\\b\"c\nd"
        let text = MetricsExposition.render(Self.sample(interfaces: Self.typical + [Self.interface(9, odd, .vpn, ready: true)], primary: odd))
        let result = try Self.promtoolCheckMetrics(text)
        #expect(result.status == 0, "\(result)")
    }

    /// `promtool check metrics` on `text`: exit status and what it said.
    static func promtoolCheckMetrics(_ text: String) throws -> DaemonHarness.Output {
        let directory = try makeScratchDirectory("promtool")
        defer { removeTree(directory) }
        try text.write(toFile: directory + "/in.prom", atomically: false, encoding: .utf8)
        return try DaemonHarness.execute("/bin/sh", ["-c", "exec promtool check metrics < \"$1\"", "sh", directory + "/in.prom"])
    }

    /// The alert rules load in promtool and name metrics the exposition has (AlertRulesTests
    /// runs their unit tests and checks every name).
    @Test func theAlertRulesPassPromtool() throws {
        let rules = MetricsEndpointTests.packaging + "/reachd-alerts.yml"
        let check = try DaemonHarness.execute("/usr/bin/promtool", ["check", "rules", rules])
        #expect(check.status == 0 && check.stdout.contains("SUCCESS: \(AlertRulesTests.expectedAlerts.count + AlertRulesTests.recordingRules.count) rules found"), "\(check)")
        let text = try String(contentsOfFile: rules, encoding: .utf8)
        let exposition = MetricsExposition.render(Self.sample(interfaces: Self.typical))
        for name in ["reachd_host_state", "reachd_stalled", "reachd_connectivity", "reachd_netlink_overruns_total",
                     "reachd_changed_events_total", "reachd_dns_deadline_hits_total", "reachd_build_info"] {
            #expect(text.contains(name) && exposition.contains("\n\(name)"), "\(name)")
        }
    }

    // MARK: /metrics requests

    @Test func requestHeadsAreParsedAndAnswered() {
        func parse(_ text: String) -> MetricsHTTP.Request { MetricsHTTP.parse(Array(text.utf8)) }
        #expect(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n") == .incomplete)
        #expect(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == .head(method: "GET", path: "/metrics"))
        #expect(parse("GET /metrics?x=1 HTTP/1.0\n\n") == .head(method: "GET", path: "/metrics"))
        #expect(parse("GET metrics HTTP/1.1\r\n\r\n") == .refused(status: 400, reason: "not an HTTP/1.x request line"))
        #expect(parse("GET /metrics SPDY/3\r\n\r\n") == .refused(status: 400, reason: "not an HTTP/1.x request line"))
        let huge = "GET /metrics HTTP/1.1\r\nX: " + String(repeating: "a", count: MetricsHTTP.maximumHead)
        #expect(parse(huge) == .refused(status: 431, reason: "request head over 8192 bytes"))
        #expect(parse(huge + "\r\n\r\n") == .refused(status: 431, reason: "request head over 8192 bytes"))

        func answer(_ request: MetricsHTTP.Request) -> String {
            String(decoding: MetricsHTTP.response(to: request) { "m 1\n" }, as: UTF8.self)
        }
        #expect(answer(.head(method: "GET", path: "/metrics")) == "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: 4\r\nConnection: close\r\n\r\nm 1\n")
        #expect(answer(.head(method: "HEAD", path: "/metrics")).hasSuffix("Content-Length: 4\r\nConnection: close\r\n\r\n"))
        #expect(answer(.head(method: "GET", path: "/")).hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        #expect(answer(.head(method: "DELETE", path: "/metrics")).contains("405 Method Not Allowed\r\n"))
        #expect(answer(.head(method: "DELETE", path: "/metrics")).contains("\r\nAllow: GET, HEAD\r\n"))
        // The exposition is rendered only for a scrape.
        var rendered = false
        _ = MetricsHTTP.response(to: .head(method: "POST", path: "/metrics")) { rendered = true; return "" }
        #expect(!rendered)
    }

    // MARK: [Metrics]

    @Test func metricsSectionSetsTheTextfile() {
        var configuration = Configuration.default
        let errors = Configuration.parse("[Metrics]\nTextfileDirectory=/var/lib/prometheus/node-exporter\nTextfileInterval=30s\n", file: "t.conf", into: &configuration)
        #expect(errors == [])
        #expect(configuration.metrics.textfileDirectory == "/var/lib/prometheus/node-exporter")
        #expect(configuration.metrics.textfileInterval == .seconds(30))
        // mergedText round-trips it.
        var again = Configuration.default
        #expect(Configuration.parse(configuration.mergedText, file: "merged", into: &again) == [])
        #expect(again.metrics == configuration.metrics)
        #expect(Configuration.default.metrics.textfileDirectory == nil)
    }

    @Test(arguments: [
        ("TextfileDirectory=var/lib/x", "t.conf:2: [Metrics] TextfileDirectory: 'var/lib/x' is not an absolute path; expected a directory such as /var/lib/prometheus/node-exporter"),
        ("TextfileDirectory=/var/../etc", "t.conf:2: [Metrics] TextfileDirectory: '/var/../etc' has a . or .. component; give the directory's plain absolute path"),
        ("TextfileInterval=1s", "t.conf:2: [Metrics] TextfileInterval: duration '1s' is out of range: must be from 5s to 60m"),
        ("Textfile=/x", "t.conf:2: [Metrics] Textfile: unknown key; valid keys are TextfileDirectory, TextfileInterval"),
    ])
    func badMetricsValuesAreNamedWithFileAndLine(line: String, message: String) {
        var configuration = Configuration.default
        let errors = Configuration.parse("[Metrics]\n\(line)\n", file: "t.conf", into: &configuration)
        #expect(errors.map(\.description) == [message])
    }
}
