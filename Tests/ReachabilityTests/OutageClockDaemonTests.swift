import Foundation
import Testing
@testable import Reachability

/// issue 46 against the real kernel and a real reachd on a private bus: a gateway that stops
/// answering ARP for some seconds reads as that many offline seconds of cause gateway, read after
/// the outage; a restart of reachd neither resets the counters nor counts the outage twice, and
/// the time it was stopped is unobserved; a suspend (logind's signals, from a stand-in logind)
/// is unobserved, not offline; a hostile state file is refused with one journal line.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/python3"), "needs python3-gi"))
struct OutageClockDaemonTests {
    typealias Scenario = DaemonBusTests.Scenario

    /// A fresh directory for the state file, and reachd's option naming it.
    static func stateFile() throws -> (directory: String, path: String, arguments: [String]) {
        let directory = try makeScratchDirectory("reachd-outage-clock")
        let path = directory + "/outage-clock"
        return (directory, path, ["--outage-clock", path])
    }

    static func metrics(_ harness: DaemonHarness) throws -> String {
        try ReachabilityClient(bus: .address(harness.address)).metrics()
    }

    static func value(_ text: String, _ series: String) -> Double { MetricsDaemonTests.value(text, series) ?? -1 }

    /// How long the fault lasted, from just before `breakIt` to just after `mend`, held `hold`
    /// once the host's State was seen to be `state`: what reachd saw lies within it (a loaded
    /// machine delays what the test sees, not reachd's timestamps).
    static func outage(
        _ harness: DaemonHarness, _ state: String, hold: Duration, _ breakIt: () throws -> Void, during: () async throws -> Void = {},
        _ mend: () throws -> Void
    ) async throws -> Double {
        let client = try harness.connect()
        let start = ContinuousClock.now
        try breakIt()
        try await eventually("State \(state); \(harness.diagnostics)") { (try? DaemonHarness.property(client, "State") as String) == state }
        try await during()
        try await Task.sleep(for: hold)
        try mend()
        let span = ContinuousClock.now - start
        try await eventually("online again") { (try? DaemonHarness.property(client, "State") as String) == "online" }
        return Double(span.components.seconds) + Double(span.components.attoseconds) / 1e18
    }

    @Test func aGatewayOutageReadsAsItsSeconds_andARestartNeitherResetsNorCountsTwice() async throws {
        let scenario = try Scenario()
        try scenario.ns.waitForCarrier("up0")
        let state = try Self.stateFile()
        defer { removeTree(state.directory) }
        let harness = try DaemonHarness(scenario.ns, arguments: state.arguments)
        defer { harness.shutdown() }
        try await harness.ready()
        let gateway = #"reachd_offline_seconds_total{cause="gateway"}"#
        #expect(Self.value(try Self.metrics(harness), gateway) == 0)

        // Nobody owns 192.0.2.1 any more: ARP for it goes unanswered (probes every 100 ms), and
        // one datagram toward the internet makes the kernel resolve the gateway and give up.
        _ = try scenario.ns.exec("/usr/sbin/sysctl", ["-qw", "net.ipv4.neigh.up0.retrans_time_ms=100"])
        let send = { _ = try scenario.ns.exec("/usr/bin/python3", ["-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('193.0.14.129', 9))"]) }
        let fault = try await Self.outage(harness, "local", hold: .seconds(5), {
            try scenario.far.ip("addr del 192.0.2.1/24 dev up0p")
            try scenario.ns.ip("neigh flush dev up0")
            try send()
        }) {
            try scenario.far.ip("addr add 192.0.2.1/24 dev up0p")
            try send()
        }
        let after = try Self.metrics(harness)
        let counted = Self.value(after, gateway)
        #expect(counted >= 5 && counted <= fault + 0.05, "counted \(counted) s of a gateway fault of \(fault) s held 5 s")
        // To the record: the history's outage, timed by the same changes.
        let outage = try HistoryDaemonTests.history(harness).intervals.first { $0["lane"] as? String == "host" && $0["cause"] as? String == "gateway" }
        let recorded = Double(outage?["durationUSec"] as? UInt64 ?? 0) / 1e6
        #expect(abs(counted - recorded) < 0.05, "counted \(counted) s, the history's outage \(recorded) s")
        #expect(Self.value(after, #"reachd_outages_total{cause="gateway"}"#) == 1)
        #expect(Self.value(after, #"reachd_uplink_down_seconds_total{kind="virtual",cause="gateway"}"#) >= 5, "\(after)")
        #expect(Self.value(after, #"reachd_unobserved_seconds_total{reason="asleep"}"#) == 0)

        // Stopped for a minute (issue 46): not offline, not reset, the outage not counted again.
        harness.stopDaemon()
        let file = try String(contentsOfFile: state.path, encoding: .utf8)
        #expect(file.hasPrefix(OutageLedgerFile.header + "\n") && file.contains("offline gateway "), "\(file)")
        try await Task.sleep(for: .seconds(60))
        try harness.startDaemon()
        try await eventually("reachd back; \(harness.diagnostics)") { (try? Self.metrics(harness)) != nil }
        let restarted = try Self.metrics(harness)
        #expect(abs(Self.value(restarted, gateway) - counted) < 0.01, "\(restarted)")
        #expect(Self.value(restarted, #"reachd_outages_total{cause="gateway"}"#) == 1)
        let stopped = Self.value(restarted, #"reachd_unobserved_seconds_total{reason="stopped"}"#)
        #expect(stopped >= 60 && stopped < 62, "stopped \(stopped) s")
        #expect(harness.daemonErrorLines.contains { $0.contains("outage clock: carried on from \(state.path)") }, "\(harness.daemonErrorLines)")
    }

    /// Offline through a suspend of a minute (issue 46): the time between logind's two signals
    /// is asleep, the rest offline.
    @Test func aSuspendIsUnobserved_notOffline() async throws {
        let scenario = try Scenario()
        try scenario.ns.waitForCarrier("up0")
        let harness = try DaemonHarness(scenario.ns, arguments: ["--outage-clock", "none"])
        defer { harness.shutdown() }
        try await harness.ready()
        let logind = SleepResumeTests.logind.replacingOccurrences(of: "GLib.timeout_add(300,", with: "GLib.timeout_add(60000,")
        #expect(logind != SleepResumeTests.logind)
        let fault = try await Self.outage(harness, "offline", hold: .seconds(1), { try scenario.carrier(false) }, during: {
            let sleeper = try ChildProcess("/usr/bin/python3", ["-c", logind, harness.address])
            defer { sleeper.kill() }
            try await eventually("logind's resume; \(sleeper.errorLines); \(harness.diagnostics)", timeout: .seconds(80)) {
                harness.daemonErrorLines.contains { $0.contains("the host resumed from sleep (logind)") }
            }
        }) { try scenario.carrier(true) }
        let text = try Self.metrics(harness)
        let asleep = Self.value(text, #"reachd_unobserved_seconds_total{reason="asleep"}"#)
        let offline = Self.value(text, #"reachd_offline_seconds_total{cause="link"}"#)
        #expect(asleep > 59.8 && asleep < 61.5, "asleep \(asleep) s of a 60 s suspend")
        #expect(offline >= 1 && offline + asleep <= fault + 0.05, "offline \(offline) s and asleep \(asleep) s of a fault of \(fault) s")
        #expect(Self.value(text, #"reachd_outages_total{cause="link"}"#) == 1)

        // The history keeps the sleep apart: an interval of its own, not offline.
        let (json, intervals) = try HistoryDaemonTests.history(harness)
        let slept = intervals.filter { $0["lane"] as? String == "host" && $0["kind"] as? String == "asleep" }
        let sleptSeconds = Double(slept.first?["durationUSec"] as? UInt64 ?? 0) / 1e6
        #expect(slept.count == 1 && abs(sleptSeconds - asleep) < 0.3, "\(intervals)")
        let summary = json["summary"] as? [String: Any] ?? [:]
        let offlineSeconds = Double(summary["offlineUSec"] as? UInt64 ?? 0) / 1e6
        #expect(abs(offlineSeconds - offline) < 0.05, "history offline \(offlineSeconds) s, counter \(offline) s: \(json)")
    }

    /// A hostile state file costs one journal line and itself: the counters start from zero, and
    /// the file is replaced by reachd's own.
    @Test func aHostileStateFileIsRefusedWithOneLine() async throws {
        let scenario = try Scenario()
        try scenario.ns.waitForCarrier("up0")
        let state = try Self.stateFile()
        defer { removeTree(state.directory) }
        try "reachd outage clock 1\nwritten 1000\noffline gateway -50\n".write(toFile: state.path, atomically: true, encoding: .utf8)
        let harness = try DaemonHarness(scenario.ns, arguments: state.arguments)
        defer { harness.shutdown() }
        try await harness.ready()
        let refusals = harness.daemonErrorLines.filter { $0.contains("outage clock: refusing") }
        #expect(refusals.count == 1 && refusals[0].contains("line 3 'offline gateway -50': -50.0 seconds, negative"), "\(harness.daemonErrorLines)")
        #expect(Self.value(try Self.metrics(harness), #"reachd_offline_seconds_total{cause="gateway"}"#) == 0)
        try await eventually("reachd's own file") {
            ((try? String(contentsOfFile: state.path, encoding: .utf8)) ?? "").contains("host up")
        }
    }

    /// The state file is written at changes, but at most once per 30 s: a flap right after the
    /// start's write is held back and written once the 30 s are over, by a timer that exists only
    /// then; while nothing changes, nothing wakes reachd.
    @Test func theFileIsWrittenAtMostEvery30s_andNothingWakesWhileIdle() async throws {
        let scenario = try Scenario()
        try scenario.ns.waitForCarrier("up0")
        let state = try Self.stateFile()
        defer { removeTree(state.directory) }
        let harness = try DaemonHarness(scenario.ns, arguments: state.arguments)
        defer { harness.shutdown() }
        try await harness.ready()
        let pid = try #require(harness.daemon?.pid)
        func written() -> Date? { (try? FileManager.default.attributesOfItem(atPath: state.path))?[.modificationDate] as? Date }
        try await eventually("the start's write") { written() != nil }
        let first = try #require(written())

        // Idle with the clock on: stall detection's baseline poll comes a second after ready, later
        // on a loaded machine; idle from the first second in which reachd did not wake.
        try await Task.sleep(for: StallWatch.baselineDelay + .milliseconds(700))
        var settled = MetricsDaemonTests.wakeUps(pid)
        for _ in 0..<10 {
            try await Task.sleep(for: .seconds(1))
            let now = MetricsDaemonTests.wakeUps(pid)
            if now == settled { break }
            settled = now
        }
        let before = MetricsDaemonTests.wakeUps(pid)
        try await Task.sleep(for: .seconds(3))
        #expect(MetricsDaemonTests.wakeUps(pid) == before, "reachd woke up while idle")

        // Every write seen, by its time: none may follow another within 30 s. Under load the
        // steps below may take longer than 30 s themselves, so the flap's write is waited for by
        // its content, not as the next write after the first.
        var writes: [Date] = [first]
        func look() -> String {
            if let now = written(), now != writes.last { writes.append(now) }
            return (try? String(contentsOfFile: state.path, encoding: .utf8)) ?? ""
        }
        let client = try harness.connect()
        let beforeFlap = Date()
        try scenario.carrier(false)
        try await eventually("offline") { _ = look(); return (try? DaemonHarness.property(client, "State") as String) == "offline" }
        try scenario.carrier(true)
        try await eventually("online again") { _ = look(); return (try? DaemonHarness.property(client, "State") as String) == "online" }
        if Date().timeIntervalSince(writes.last ?? first) < 29, Date().timeIntervalSince(beforeFlap) < 29 {
            #expect(written() == writes.last, "two changes within 30 s of the last write are held back")
        }
        try await eventually("the held write with the flap", timeout: .seconds(70), every: .milliseconds(100)) {
            look().contains("outages link 1")
        }
        let gaps = zip(writes, writes.dropFirst()).map { $1.timeIntervalSince($0) }
        #expect(writes.count >= 2 && gaps.allSatisfy { $0 >= 29.5 }, "writes \(gaps) s apart")
        let text = look()
        #expect(text.contains("offline link ") && text.contains("outages link 1") && text.contains("host up"), "\(text)")
    }
}
