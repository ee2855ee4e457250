import Foundation
import Testing
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import Reachability

/// `reachctl history` against the real kernel and a real reachd on a private bus: outages of
/// different causes (carrier lost at the far end of a veth, the default route deleted, a
/// gateway that stopped answering ARP), each listed with its cause and its duration within a
/// second of the time the fault lasted, on the host's lane and the uplink's; the SVG read back
/// as XML with a bar for each. And the journal: a real systemd-journald in a mount namespace of
/// its own, reachd's entries read back by journalctl and, after reachd restarted with an empty
/// memory, by `reachctl history`.
@Suite(rootOnly)
struct HistoryDaemonTests {
    typealias Scenario = DaemonBusTests.Scenario

    static func wallMicroseconds() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1_000_000) }

    /// `reachctl history --json` through reachd, and its intervals.
    /// `more` names the journal to read; without, an empty one (this machine's own journal may
    /// hold another reachd's records).
    static func history(_ harness: DaemonHarness, _ more: [String]? = nil) throws -> (json: [String: Any], intervals: [[String: Any]]) {
        let empty = try makeScratchDirectory("reachd-history-empty")
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let more = more ?? ["--journal-directory", empty]
        let result = try reachctl(["history", "--json", "--bus-address", harness.address, "--daemon"] + more)
        let json = (try? result.json()) ?? ["stderr": result.stderr, "status": result.status]
        return (json, json["intervals"] as? [[String: Any]] ?? [])
    }

    /// The fault `make` holds from `break` to `mend` (their wall-clock instants measured around
    /// them), waiting for reachd to see each end.
    static func fault(
        _ harness: DaemonHarness, until state: String, _ breakIt: () throws -> Void, hold: Duration = .milliseconds(1500),
        _ mend: () throws -> Void
    ) async throws -> (start: UInt64, end: UInt64) {
        let client = try harness.connect()
        let start = wallMicroseconds()
        try breakIt()
        try await eventually("State \(state)") { (try? DaemonHarness.property(client, "State") as String) == state }
        try await Task.sleep(for: hold)
        let end = wallMicroseconds()
        try mend()
        try await eventually("online again") { (try? DaemonHarness.property(client, "State") as String) == "online" }
        return (start, end)
    }

    static func expectOutage(
        _ intervals: [[String: Any]], lane: String, cause: String, around window: (start: UInt64, end: UInt64),
        within slack: UInt64 = 1_000_000, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let found = intervals.first { $0["lane"] as? String == lane && $0["cause"] as? String == cause && $0["kind"] as? String == "outage" }
        guard let found, let start = found["startUSec"] as? UInt64, let duration = found["durationUSec"] as? UInt64 else {
            Issue.record("no \(cause) outage on \(lane): \(intervals)", sourceLocation: sourceLocation)
            return
        }
        let expected = window.end - window.start
        #expect(start + slack >= window.start && start <= window.start + slack, "\(lane) \(cause) starts at \(start), fault at \(window.start)", sourceLocation: sourceLocation)
        #expect(duration + slack >= expected && duration <= expected + slack, "\(lane) \(cause): \(duration) us for a fault of \(expected) us", sourceLocation: sourceLocation)
        #expect(found["ongoing"] as? Bool == false, sourceLocation: sourceLocation)
    }

    @Test func flapsOfThreeCauses_areListedWithTheirCauseAndDuration_andDrawnInTheSVG() async throws {
        let scenario = try Scenario()
        try scenario.ns.waitForCarrier("up0")
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        // Not under journald: reachd says so and keeps the history in memory.
        if !FileManager.default.fileExists(atPath: JournalEntry.socketPath) {
            #expect(harness.daemonErrorLines.contains { $0.contains("no journald socket") }, "\(harness.daemonErrorLines)")
        }

        let carrier = try await Self.fault(harness, until: "offline", { try scenario.carrier(false) }) { try scenario.carrier(true) }
        let route = try await Self.fault(harness, until: "local", { try scenario.ns.ip("route del default via 192.0.2.1") }) {
            try scenario.ns.ip("route add default via 192.0.2.1 dev up0 metric 100")
        }
        // Nobody owns 192.0.2.1 any more: ARP for it goes unanswered (probes every 100 ms), and
        // one datagram toward the internet makes the kernel resolve the gateway and give up.
        _ = try scenario.ns.exec("/usr/sbin/sysctl", ["-qw", "net.ipv4.neigh.up0.retrans_time_ms=100"])
        let send = { _ = try scenario.ns.exec("/usr/bin/python3", ["-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('193.0.14.129', 9))"]) }
        // The fault ends once the datagram has made the kernel resolve the gateway again: the
        // end is bounded from the datagram's send, which follows python's start.
        var sent: UInt64 = 0
        let gateway = try await Self.fault(harness, until: "local", {
            try scenario.far.ip("addr del 192.0.2.1/24 dev up0p")
            try scenario.ns.ip("neigh flush dev up0")
            try send()
        }) {
            try scenario.far.ip("addr add 192.0.2.1/24 dev up0p")
            try send()
            sent = Self.wallMicroseconds()
        }

        let (json, intervals) = try Self.history(harness)
        #expect(json["source"] as? String == "reachd+journal", "\(json)")
        Self.expectOutage(intervals, lane: "host", cause: "link", around: carrier)
        Self.expectOutage(intervals, lane: "host", cause: "route", around: route)
        Self.expectOutage(intervals, lane: "up0", cause: "link", around: carrier)
        Self.expectOutage(intervals, lane: "up0", cause: "route", around: route)
        // The gateway's fault shows once ARP gives up (a few probes after the send): its start
        // lags the fault's, its end does not lag the datagram that ends it.
        let failed = intervals.first { $0["lane"] as? String == "host" && $0["cause"] as? String == "gateway" }
        #expect(failed?["reason"] as? String == "gatewayUnreachable", "\(intervals)")
        if let end = failed?["endUSec"] as? UInt64 {
            #expect(end >= gateway.end && end <= sent + 1_000_000, "ended at \(end): mend from \(gateway.end), datagram sent by \(sent)")
        }
        #expect(intervals.contains { $0["lane"] as? String == "up0" && $0["cause"] as? String == "gateway" }, "\(intervals)")
        let hostOutages = intervals.filter { $0["lane"] as? String == "host" }
        #expect(hostOutages.count == 3, "\(hostOutages)")
        let summary = json["summary"] as? [String: Any]
        #expect(summary?["outages"] as? Int == 3)
        let total = hostOutages.compactMap { $0["durationUSec"] as? Int }.reduce(0, +)
        #expect(summary?["offlineUSec"] as? Int == total)

        // The table and its summary line.
        let empty = try makeScratchDirectory("reachd-history-empty")
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let text = try reachctl(["history", "--bus-address", harness.address, "--daemon", "--journal-directory", empty])
        #expect(text.status == 0 && text.stdout.contains("host: 3 outages") && text.stdout.contains("gatewayUnreachable"), "\(text)")

        // The SVG: XML, with a bar for every outage, coloured by its cause.
        let svg = try reachctl(["history", "--svg", "--bus-address", harness.address, "--daemon", "--journal-directory", empty])
        #expect(svg.status == 0, "\(svg.stderr)")
        let document = try XMLDocument(xmlString: svg.stdout)
        func bars(_ lane: String) throws -> [String] {
            try document.nodes(forXPath: "//*[local-name()='rect'][@class='outage'][@data-lane='\(lane)']/@data-cause").map { $0.stringValue ?? "" }
        }
        #expect(try bars("host") == ["link", "route", "gateway"])
        #expect(try bars("up0") == ["link", "route", "gateway"])
        // And busctl, a client that is not ours: a record per change.
        let call = try harness.busctl(["call", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "GetHistory", "t", "0"])
        #expect(call.status == 0 && call.stdout.hasPrefix("ta(tssssssst) ") && call.stdout.contains("\"link\""), "\(call)")
    }

    @Test func withoutReachd_andWithoutAJournal_itSaysSo_andFails() throws {
        let result = try reachctl(["history", "--bus-address", "unix:path=/nonexistent/reachd-history-bus", "--journal-directory", "/nonexistent/journal"])
        #expect(result.status == 255, "\(result)")
        #expect(result.stderr.contains("reachd is not available") && result.stderr.contains("cannot open the journal in /nonexistent/journal"), "\(result.stderr)")
        let refused = try reachctl(["history", "--since", "whenever"])
        #expect(refused.status == 255 && refused.stderr.contains("invalid --since 'whenever'"), "\(refused)")
    }

    // MARK: the journal

    /// systemd-journald in a mount namespace of its own (a tmpfs on /run), its sockets and files
    /// bind-mounted from `directory`: `sockets/socket` is its native socket, `journal/` its files.
    /// It refuses to start without a cgroup file system, which the suite's fresh sysfs lacks:
    /// cgroup2 is mounted there, in its namespace only. Its rate limit is off (the forged floods
    /// of HistoryJournalAttackTests are all to be written), and its socket is open to every user.
    final class Journald {
        let directory: String
        let process: ChildProcess
        var files: String { directory + "/journal" }
        var sockets: String { directory + "/sockets" }

        init() throws {
            directory = try makeScratchDirectory("reachd-history-journal")
            for sub in ["/journal", "/sockets", "/netns"] { try FileManager.default.createDirectory(atPath: directory + sub, withIntermediateDirectories: true) }
            chmod(directory, 0o755)
            let script = """
                set -e
                mount -t tmpfs tmpfs /run
                mount -t cgroup2 cgroup2 /sys/fs/cgroup
                mkdir -p /run/systemd/journal /run/log/journal /run/systemd/journald.conf.d
                printf '[Journal]\\nRateLimitBurst=0\\n' > /run/systemd/journald.conf.d/unlimited.conf
                mount --bind "$1/sockets" /run/systemd/journal
                mount --bind "$1/journal" /run/log/journal
                exec /lib/systemd/systemd-journald
                """
            process = try ChildProcess("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", directory])
        }

        func ready() async throws {
            try await eventually("journald's socket; \(process.errorLines)") { FileManager.default.fileExists(atPath: self.sockets + "/socket") }
        }

        /// reachd as the harness starts it, but in a mount namespace where journald's socket is
        /// /run/systemd/journal/socket (and /run/netns the test's).
        func reachd(_ harness: DaemonHarness, _ namespace: TestNamespace) throws -> ChildProcess {
            let script = """
                set -e
                mount --rbind /run/netns "$1/netns"
                mount -t tmpfs tmpfs /run
                mkdir -p /run/systemd/journal /run/netns
                mount --rbind "$1/netns" /run/netns
                mount --bind "$1/sockets" /run/systemd/journal
                shift
                exec "$@"
                """
            var environment = ProcessInfo.processInfo.environment
            for key in ["WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM"] { environment.removeValue(forKey: key) }
            environment["NOTIFY_SOCKET"] = harness.notify.path
            return try ChildProcess(
                "/usr/bin/unshare",
                ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", directory, productPath("reachd"),
                 "--bus-address", harness.address, "--netns", namespace.name, "--config-dir", harness.configDirectory],
                environment: environment)
        }

        func stop() {
            process.kill()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test func theJournal_keepsEachChangeWithItsFields_andReachctlReadsItBack_afterReachdRestarted() async throws {
        let journald = try Journald()
        defer { journald.stop() }
        try await journald.ready()
        let scenario = try Scenario()
        try scenario.ns.waitForCarrier("up0")
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        var reachd = try journald.reachd(harness, scenario.ns)
        defer { reachd.kill() }
        try await harness.ready()
        #expect(reachd.errorLines.contains { $0.contains("outages go to the journal too") }, "\(reachd.errorLines)")

        let carrier = try await Self.fault(harness, until: "offline", { try scenario.carrier(false) }) { try scenario.carrier(true) }

        // journalctl, a reader that is not ours, finds the entries by MESSAGE_ID with their fields.
        var entries: [[String: Any]] = []
        try await eventually("journalctl shows the outage: \(entries)") {
            let run = try ChildProcess("/usr/bin/journalctl", ["-D", journald.files, "--no-pager", "-o", "json", "MESSAGE_ID=\(HistoryRecord.journalMessageID)"])
                .finish(timeout: .seconds(10))
            entries = run.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            return entries.contains { $0["REACHD_CAUSE_LAYER"] as? String == "link" && $0["REACHD_LANE"] as? String == "" }
                && entries.last { $0["REACHD_LANE"] as? String == "" }?["REACHD_CONDITION"] as? String == "up"
        }
        let down = try #require(entries.first { $0["REACHD_CAUSE_LAYER"] as? String == "link" && $0["REACHD_LANE"] as? String == "" })
        #expect(down["REACHD_STATE"] as? String == "offline" && down["REACHD_REASON"] as? String == "linkDown" && down["REACHD_INTERFACE"] as? String == "up0", "\(down)")
        #expect(down["REACHD_CONDITION"] as? String == "down" && (down["REACHD_GENERATION"] as? String).flatMap(UInt64.init) != nil, "\(down)")
        #expect((down["MESSAGE"] as? String)?.hasPrefix("host offline: link layer (linkDown) on up0") == true, "\(down)")
        #expect(down["PRIORITY"] as? String == "4")

        // reachd restarts: its memory begins anew, the journal still has the outage.
        reachd.signal(SIGTERM)
        _ = reachd.waitForExit(timeout: .seconds(5))
        reachd = try journald.reachd(harness, scenario.ns)
        try await eventually("the new reachd answers") { (try? Self.history(harness).json["source"]) != nil }
        let (json, intervals) = try Self.history(harness, ["--journal-directory", journald.files])
        #expect(json["source"] as? String == "reachd+journal", "\(json)")
        Self.expectOutage(intervals, lane: "host", cause: "link", around: carrier)
        Self.expectOutage(intervals, lane: "up0", cause: "link", around: carrier)
        // The time it was stopped is its own interval (issue 46), ended by the new reachd's first record.
        let stopped = intervals.filter { $0["lane"] as? String == "host" && $0["kind"] as? String == "stopped" }
        #expect(stopped.count == 1 && stopped.first?["ongoing"] as? Bool == false && stopped.first?["cause"] is NSNull, "\(intervals)")
        #expect(((json["summary"] as? [String: Any])?["stoppedUSec"] as? UInt64 ?? 0) > 0, "\(json)")

        // Without reachd, the journal alone.
        reachd.kill()
        _ = reachd.waitForExit(timeout: .seconds(5))
        let alone = try reachctl(["history", "--json", "--bus-address", harness.address, "--journal-directory", journald.files])
        #expect(alone.status == 0 && alone.stderr.contains("reading the journal only"), "\(alone)")
        let fromJournal = try alone.json()
        #expect(fromJournal["source"] as? String == "journal")
        Self.expectOutage(fromJournal["intervals"] as? [[String: Any]] ?? [], lane: "host", cause: "link", around: carrier)
    }
}
