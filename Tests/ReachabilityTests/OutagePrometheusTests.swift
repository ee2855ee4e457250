import Foundation
import Testing
@testable import Reachability

/// issue 46, as a fleet sees it: a real Prometheus beyond the gateway scrapes reachd's /metrics
/// every 5 s; the gateway fails for 120 s, and every scrape fails meanwhile (the scraper is the
/// far side of the very link that broke); 30 s after the gateway returns, Prometheus' own
/// `increase()` over 10 minutes reads the whole outage, with its cause, from the samples after it.
@Suite(rootOnly, .serialized, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/prometheus"), "needs prometheus"))
struct OutagePrometheusTests {
    static let port = 9849
    static let prometheusPort = 9090

    /// reachd as reachd-metrics.socket starts it, but with the listening socket inside the
    /// namespace it watches, on its uplink's address: a shell cannot bind there, so a Python
    /// wrapper binds it as fd 3, sets LISTEN_* to its own pid and becomes reachd.
    static func activatedInside(_ scenario: DaemonBusTests.Scenario, _ harness: DaemonHarness) throws -> ChildProcess {
        let wrapper = """
            import os, socket, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("192.0.2.2", \(port)))
            s.listen(64)
            # The socket may be fd 3 already: dup2 onto itself would leave it close-on-exec.
            if s.fileno() == 3:
                os.set_inheritable(3, True)
            else:
                os.dup2(s.fileno(), 3)
            env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES="\(MetricsEndpointTestsNames.metrics)")
            os.execve(sys.argv[1], sys.argv[1:], env)
            """
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "JOURNAL_STREAM"] {
            environment.removeValue(forKey: key)
        }
        environment["NOTIFY_SOCKET"] = harness.notify.path
        return try ChildProcess("/usr/sbin/ip", [
            "netns", "exec", scenario.ns.name, "/usr/bin/python3", "-c", wrapper, productPath("reachd"),
            "--bus-address", harness.address, "--netns", scenario.ns.name, "--config-dir", harness.configDirectory, "--outage-clock", "none",
        ], environment: environment)
    }

    /// The first sample of `promql` as Prometheus in `far` answers it (at `time`, Unix seconds,
    /// when given): its value and its timestamp; nil when there is none.
    static func query(_ far: TestNamespace, _ promql: String, at time: Double? = nil) -> (value: Double, time: Double)? {
        var arguments = ["-s", "--max-time", "5", "--get", "--data-urlencode", "query=\(promql)"]
        if let time { arguments += ["--data-urlencode", "time=\(time)"] }
        guard let body = try? far.exec("/usr/bin/curl", arguments + ["http://127.0.0.1:\(prometheusPort)/api/v1/query"]),
              let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
              let pair = result.first?["value"] as? [Any], pair.count == 2,
              let stamp = pair[0] as? Double, let text = pair[1] as? String, let value = Double(text)
        else { return nil }
        return (value, stamp)
    }

    @Test(.timeLimit(.minutes(10))) func aPrometheusBeyondTheGatewayReadsTheOutageAfterIt() async throws {
        let scenario = try DaemonBusTests.Scenario()
        try scenario.ns.waitForCarrier("up0")
        try scenario.far.ip("link set lo up")
        let directory = try makeScratchDirectory("outage-prometheus")
        defer { removeTree(directory) }
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let reachd = try Self.activatedInside(scenario, harness)
        defer { reachd.kill() }
        do {
            try await harness.ready()
        } catch {
            Issue.record("reachd: \(reachd.errorLines.prefix(40))")
            throw error
        }

        try """
            global:
              scrape_interval: 5s
              scrape_timeout: 4s
              evaluation_interval: 5s
            scrape_configs:
              - job_name: reachd
                static_configs:
                  - targets: ['192.0.2.2:\(Self.port)']
            """.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        let prometheus = try ChildProcess("/usr/sbin/ip", [
            "netns", "exec", scenario.far.name, "/usr/bin/prometheus", "--config.file=\(directory)/prometheus.yml",
            "--storage.tsdb.path=\(directory)/data", "--web.listen-address=127.0.0.1:\(Self.prometheusPort)",
        ])
        defer { prometheus.kill() }
        let gateway = #"reachd_offline_seconds_total{cause="gateway"}"#
        do {
            try await eventually("Prometheus scrapes reachd", timeout: .seconds(60)) {
                Self.query(scenario.far, #"up{job="reachd"}"#)?.value == 1 && Self.query(scenario.far, gateway)?.value == 0
            }
            // Two samples before the outage: the counter's first value is 0, so increase() has
            // nothing to extrapolate before it.
            try await Task.sleep(for: .seconds(6))

            // Nobody owns 192.0.2.1 any more: ARP for it goes unanswered (probes every 100 ms),
            // and one datagram toward the internet makes the kernel resolve the gateway and give
            // up; the scraper, whose address that was, reaches reachd no more.
            _ = try scenario.ns.exec("/usr/sbin/sysctl", ["-qw", "net.ipv4.neigh.up0.retrans_time_ms=100"])
            let send = { _ = try scenario.ns.exec("/usr/bin/python3", ["-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('193.0.14.129', 9))"]) }
            let client = try harness.connect()
            try scenario.far.ip("addr del 192.0.2.1/24 dev up0p")
            try scenario.ns.ip("neigh flush dev up0")
            try send()
            try await eventually("State local") { (try? DaemonHarness.property(client, "State") as String) == "local" }
            try await Task.sleep(for: .seconds(60))
            // Every scrape of the last minute failed.
            #expect(Self.query(scenario.far, #"max_over_time(up{job="reachd"}[55s])"#)?.value == 0)
            try await Task.sleep(for: .seconds(60))
            try scenario.far.ip("addr add 192.0.2.1/24 dev up0p")
            try send()
            try await eventually("online again") { (try? DaemonHarness.property(client, "State") as String) == "online" }
            let counted = try #require(MetricsDaemonTests.value(try ReachabilityClient(bus: .address(harness.address)).metrics(), gateway))
            try await Task.sleep(for: .seconds(30))

            // At the last scrape's time, so that increase() extrapolates nothing after it either.
            let last = try #require(Self.query(scenario.far, "timestamp(\(gateway))"))
            let increase = try #require(Self.query(scenario.far, "increase(\(gateway)[10m])", at: last.value))
            #expect(abs(increase.value - 120) <= 3, "increase() read \(increase.value) s of a 120 s gateway outage")
            #expect(abs(increase.value - counted) < 0.5, "Prometheus read \(increase.value) s, reachd counted \(counted) s")
            #expect(Self.query(scenario.far, #"reachd_outages_total{cause="gateway"}"#)?.value == 1)
            #expect(Self.query(scenario.far, #"increase(reachd_unobserved_seconds_total[10m])"#)?.value == 0)
        } catch {
            Issue.record("prometheus: \(prometheus.errorLines.suffix(20).joined(separator: "\n"))\nreachd: \(reachd.errorLines.suffix(20))")
            throw error
        }
    }
}
