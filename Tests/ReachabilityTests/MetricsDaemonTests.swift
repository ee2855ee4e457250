import Foundation
import Testing
@testable import Reachability

/// issue 13: reachd's metrics, read the ways operators read them: the node_exporter textfile,
/// GetMetrics through `reachctl metrics`, and (MetricsEndpointTests) /metrics; each checked by
/// promtool, and each following a real carrier flap of the kernel.
@Suite(rootOnly, .serialized)
struct MetricsDaemonTests {
    static func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// The value of one sample line (`name{labels}`), nil when absent.
    static func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    static func modificationTime(_ path: String) -> timespec? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mtim : nil
    }

    @Test func theTextfileFollowsAFlapAtomicallyAndPassesPromtool() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let directory = try makeScratchDirectory("metrics-textfile")
        defer { removeTree(directory) }
        let harness = try DaemonHarness(
            scenario.ns, config: "[Metrics]\nTextfileDirectory=\(directory)\nTextfileInterval=5s\n[Limits]\nMaxWatchesPerClient=1\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let path = directory + "/reachd.prom"
        let online = #"reachd_host_state{state="online"}"#
        try await eventually("the textfile says online") { Self.value(Self.read(path), online) == 1 }
        let first = Self.read(path)
        let check = try MetricsExpositionTests.promtoolCheckMetrics(first)
        #expect(check.status == 0, "\(check)\n\(first)")
        #expect(Self.value(first, #"reachd_host_info{primary_interface="up0",kind="virtual"}"#) == 1, "\(first)")
        // node_exporter runs as another user: the file is world-readable despite UMask=0077.
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o644)
        let changedBefore = try #require(Self.value(first, "reachd_changed_events_total"))

        try scenario.carrier(false)
        try await eventually("the textfile says not online, within the coalescing second") {
            let text = Self.read(path)
            return Self.value(text, online) == 0 && Self.value(text, #"reachd_interfaces_ready{kind="virtual"}"#) == 0
        }
        try scenario.carrier(true)
        try await eventually("online again") {
            let text = Self.read(path)
            return Self.value(text, online) == 1 && Self.value(text, #"reachd_interfaces_ready{kind="virtual"}"#) == 1
        }
        let after = Self.read(path)
        #expect(try #require(Self.value(after, "reachd_changed_events_total")) >= changedBefore + 2, "\(after)")
        // Only the file itself: the temporary one is renamed over it, never left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["reachd.prom"])

        // The heartbeat rewrites it with nothing changed.
        let stamp = try #require(Self.modificationTime(path))
        try await eventually("a heartbeat write within TextfileInterval=5s", timeout: .seconds(8)) {
            guard let now = Self.modificationTime(path) else { return false }
            return now.tv_sec != stamp.tv_sec || now.tv_nsec != stamp.tv_nsec
        }

        // A host check and a refused watch are counted where they happen.
        let localhost = try reachctl(["check", "localhost", "--daemon", "--bus-address", harness.address])
        #expect(localhost.status == 0, "\(localhost)")
        let client = try harness.connect()
        _ = try DaemonHarness.watch(client, "192.0.2.1")
        #expect(throws: (any Error).self) { try DaemonHarness.watch(client, "192.0.2.7") }
        try await eventually("the check and the watches in the textfile") {
            let text = Self.read(path)
            return Self.value(text, #"reachd_host_checks_total{outcome="reachable",reason=""}"#) == 1
                && Self.value(text, "reachd_host_check_duration_seconds_count") == 1
                && Self.value(text, "reachd_watches") == 1 && Self.value(text, "reachd_watches_refused_total") == 1
        }

        // GetMetrics through reachctl: the same families, and promtool agrees.
        let daemon = try reachctl(["metrics", "--daemon", "--bus-address", harness.address])
        #expect(daemon.status == 0, "\(daemon)")
        #expect(Self.value(daemon.stdout, online) == 1, "\(daemon.stdout)")
        #expect(try MetricsExpositionTests.promtoolCheckMetrics(daemon.stdout).status == 0)
        #expect(Set(Self.series(daemon.stdout)) == Set(Self.series(after)))
        // In-process (--netns): the same format from the library.
        let local = try reachctl(["metrics", "--netns", scenario.ns.name])
        #expect(local.status == 0, "\(local)")
        #expect(Self.value(local.stdout, online) == 1, "\(local.stdout)")
        #expect(try MetricsExpositionTests.promtoolCheckMetrics(local.stdout).status == 0)
        #expect(try reachctl(["metrics", "--json", "--netns", scenario.ns.name]).status == 255)

        // A clean stop removes the file: numbers nobody updates would read as the truth.
        harness.daemon?.signal(SIGTERM)
        _ = try await harness.daemon?.exit(timeout: .seconds(10))
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// A host check whose DNS goes into a black hole counts as a DNS deadline hit and an
    /// unreachable check for dnsTimeout, with a duration of at least its deadline.
    @Test func aDNSDeadlineHitIsCounted() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let blackHole = try DNSBlackHole(in: scenario.far, address: "192.0.2.1")
        defer { withExtendedLifetime(blackHole) {} }
        let directory = try makeScratchDirectory("metrics-dns")
        defer { removeTree(directory) }
        try "nameserver 192.0.2.1\noptions timeout:5 attempts:1\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        let harness = try DaemonHarness(scenario.ns, resolvConf: directory + "/resolv.conf")
        defer { harness.shutdown() }
        try await harness.ready()
        let timedOut = try DaemonHarness.jsonData(try harness.busctlCall("CheckHost", "su", "slow.test", "300"))
        #expect(timedOut.count == 5 && timedOut[3] as? String == "dnsTimeout", "\(timedOut)")
        let text = try ReachabilityClient(bus: .address(harness.address)).metrics()
        #expect(Self.value(text, "reachd_dns_deadline_hits_total") == 1, "\(text)")
        #expect(Self.value(text, #"reachd_host_checks_total{outcome="unreachable",reason="dnsTimeout"}"#) == 1)
        #expect(Self.value(text, #"reachd_host_check_duration_seconds_bucket{le="0.25"}"#) == 0)
        #expect(Self.value(text, #"reachd_host_check_duration_seconds_bucket{le="+Inf"}"#) == 1)
        #expect(try #require(Self.value(text, "reachd_host_check_duration_seconds_sum")) >= 0.3)
    }

    /// `[Metrics]` follows a reload (SIGHUP): the file appears, moves to another directory,
    /// and goes when the key is removed; a bad directory is refused by file:line and the running
    /// configuration kept.
    @Test func theTextfileFollowsReloads() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let first = try makeScratchDirectory("metrics-reload-a")
        let second = try makeScratchDirectory("metrics-reload-b")
        defer { removeTree(first); removeTree(second) }
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = try #require(harness.daemon)
        #expect(try FileManager.default.contentsOfDirectory(atPath: first).isEmpty)

        try harness.writeConfig("[Metrics]\nTextfileDirectory=\(first)\n")
        daemon.signal(SIGHUP)
        try await eventually("reachd.prom in the first directory") { Self.value(Self.read(first + "/reachd.prom"), "reachd_watches") == 0 }

        try harness.writeConfig("[Metrics]\nTextfileDirectory=\(second)\n")
        daemon.signal(SIGHUP)
        try await eventually("moved to the second directory") {
            FileManager.default.fileExists(atPath: second + "/reachd.prom") && !FileManager.default.fileExists(atPath: first + "/reachd.prom")
        }

        try harness.writeConfig("[Metrics]\nTextfileDirectory=relative/dir\n")
        daemon.signal(SIGHUP)
        try daemon.waitForErrorLine(containing: "reachd.conf:2: [Metrics] TextfileDirectory: 'relative/dir' is not an absolute path")
        #expect(FileManager.default.fileExists(atPath: second + "/reachd.prom"), "the running configuration is kept")

        try harness.writeConfig("")
        daemon.signal(SIGHUP)
        try await eventually("gone with the key") { !FileManager.default.fileExists(atPath: second + "/reachd.prom") }
    }

    /// Container-host churn: 300 veth pairs (600 links) come and go. The values follow, the
    /// series (names and label sets) of GetMetrics and of the textfile stay the same ones.
    @Test func vethChurnChangesValuesNotSeries() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let directory = try makeScratchDirectory("metrics-churn")
        defer { removeTree(directory) }
        let harness = try DaemonHarness(scenario.ns, config: "[Metrics]\nTextfileDirectory=\(directory)\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try ReachabilityClient(bus: .address(harness.address))
        let path = directory + "/reachd.prom"
        let virtual = #"reachd_interfaces{kind="virtual"}"#
        let before = try client.metrics()
        let series = Self.labelledSeries(before)
        let virtualBefore = try #require(Self.value(before, virtual))

        try OverrunTests.burst(scenario.ns, pairs: 300, prefix: "ch")
        try await eventually("600 more virtual links counted", timeout: .seconds(60)) {
            Self.value(try client.metrics(), virtual) == virtualBefore + 600
        }
        let during = try client.metrics()
        #expect(Self.labelledSeries(during) == series)
        try await eventually("the textfile counts them too") { Self.value(Self.read(path), virtual) == virtualBefore + 600 }
        #expect(Self.labelledSeries(Self.read(path)) == series)

        let deletions = (0..<300).map { "link del ch\($0)" }.joined(separator: "\n") + "\n"
        try deletions.write(toFile: directory + "/batch", atomically: true, encoding: .utf8)
        _ = try scenario.ns.ip("-batch \(directory)/batch")
        try await eventually("the links gone again", timeout: .seconds(60)) {
            Self.value(try client.metrics(), virtual) == virtualBefore
        }
        #expect(Self.labelledSeries(try client.metrics()) == series)
        // The figure docs/fleets.md gives: the in-process 103 and the outage counters' 62.
        #expect(series.count == 165, "\(series.count) series")
    }

    /// Every sample's name with its labels (not its value).
    static func labelledSeries(_ text: String) -> Set<String> {
        Set(text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0[..<$0.lastIndex(of: " ")!]) })
    }

    /// Off by default: no file, no timer (no wake-ups while idle), no listening socket.
    @Test func offByDefaultThereIsNoFileNoSocketAndNoWakeUp() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let pid = try #require(harness.daemon?.pid)
        // The host is online, so stall detection takes its baseline poll a second after ready,
        // and the next one 20 s later: the window sits between the two.
        try await Task.sleep(for: StallWatch.baselineDelay + .milliseconds(700))
        let before = Self.wakeUps(pid)
        try await Task.sleep(for: .seconds(3))
        #expect(Self.wakeUps(pid) == before, "reachd woke up while idle")
        #expect(!harness.daemonErrorLines.contains { $0.contains("metrics") }, "\(harness.daemonErrorLines)")
        let sockets = try DaemonHarness.execute("/bin/sh", ["-c", "ss -Hltnp; ip netns exec \(scenario.ns.name) ss -Hltnp"])
        #expect(!sockets.stdout.contains("pid=\(pid),"), "\(sockets.stdout)")
    }

    /// Voluntary context switches of every thread of `pid`: each is a wake-up from a wait.
    static func wakeUps(_ pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let status = read("/proc/\(pid)/task/\(task)/status")
            let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
            return total + (line.flatMap { Int($0.split(separator: "\t").last ?? "") } ?? 0)
        }
    }

    static func series(_ text: String) -> [String] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let name = line[..<line.lastIndex(of: " ")!]
            return String(name.prefix { $0 != "{" })
        }
    }
}
