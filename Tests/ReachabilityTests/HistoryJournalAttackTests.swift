import Foundation
import Testing
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import Reachability

/// Issue 48 item 3 and issue 51 item 4, as attacks on a real journal: a real systemd-journald
/// (HistoryDaemonTests.Journald), a real reachd writing to it, and the real reachctl reading it
/// with reachd running and stopped. Any local user can write entries with reachd's MESSAGE_ID
/// and fields: a flood of them ahead of the real ones, invented outages, a far-future record and
/// an `up` forged 100 ms into a real outage change nothing reachctl shows. And entries whose
/// time no clock gives (the largest, ten years ahead), even from root's "reachd", neither crash
/// reachctl nor hide the outages after them.
@Suite(rootOnly)
struct HistoryJournalAttackTests {
    typealias Journald = HistoryDaemonTests.Journald

    /// The flood: journald writes about 16,000 a second here (12.7 s for all of them beside a build).
    static let forgedCount = 200_000
    static let year: UInt64 = 365 * 86_400 * 1_000_000
    /// The entries one read of the journal looks at, at most: reachctl's HistoryJournal.maximumEntries.
    static let readBound = 200_000

    /// Who sends: an unprivileged user (nobody), root under another name, or root as a process
    /// named reachd (what a reachd with a wrong clock would write).
    enum Sender {
        case nobody, root, rootNamedReachd
    }

    /// Sends `entries` (each a record's fields) `times` times over, in turn, over journald's
    /// native protocol, as `sender`: Python writing the datagrams itself, as any user can.
    static func send(_ entries: [[String: String]], times: Int = 1, as sender: Sender, to journald: Journald) throws {
        let script = """
            import ctypes, json, socket, sys, time
            path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
            if name:
                ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the process's comm
            datagrams = ["".join(f"{k}={v}\\n" for k, v in entry.items()).encode() for entry in json.loads(sys.argv[4])]
            out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            for index in range(count):
                out.sendto(datagrams[index % len(datagrams)], path)
            time.sleep(1)  # journald reads _COMM and _EXE in /proc as each datagram comes: be there
            """
        let json = String(decoding: try JSONSerialization.data(withJSONObject: entries), as: UTF8.self)
        let arguments = ["-c", script, journald.sockets + "/socket", sender == .rootNamedReachd ? "reachd" : "", String(entries.count * times), json]
        let child = sender == .nobody
            ? try ChildProcess("/usr/bin/setpriv", ["--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/python3"] + arguments)
            : try ChildProcess("/usr/bin/python3", arguments)
        let run = try child.finish(timeout: .seconds(120))
        #expect(run.status == 0, "\(run)")
    }

    /// A host record's fields as reachd writes them, `time` its REACHD_TIME_USEC.
    static func entry(_ time: UInt64, _ condition: HistoryRecord.Condition, lane: String = "", cause: Explanation.LayerName? = nil) -> [String: String] {
        let record = HistoryRecord(
            time: time, lane: lane, condition: condition, state: condition == .down ? "offline" : "online", reason: cause == nil ? "" : "forged",
            cause: cause, interface: lane.isEmpty ? "up0" : lane)
        return Dictionary(record.journalFields, uniquingKeysWith: { $1 })
    }

    /// The journal's entries with reachd's MESSAGE_ID and `matches`, as journalctl reads them.
    static func journal(_ journald: Journald, _ matches: [String]) throws -> [[String: Any]] {
        let run = try ChildProcess(
            "/usr/bin/journalctl", ["-D", journald.files, "--no-pager", "-o", "json", "MESSAGE_ID=\(HistoryRecord.journalMessageID)"] + matches
        ).finish(timeout: .seconds(60))
        return run.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// How many entries with reachd's MESSAGE_ID and `matches` the journal holds.
    static func count(_ journald: Journald, _ matches: [String]) throws -> Int {
        let run = try ChildProcess(
            "/usr/bin/journalctl", ["-D", journald.files, "--no-pager", "-o", "cat", "MESSAGE_ID=\(HistoryRecord.journalMessageID)"] + matches
        ).finish(timeout: .seconds(60))
        return run.stdout.utf8.count { $0 == UInt8(ascii: "\n") }
    }

    static func shown(_ harness: DaemonHarness, journal directory: String) throws -> HistoryShown {
        let common = ["--bus-address", harness.address, "--journal-directory", directory]
        let json = try reachctl(["history", "--json"] + common)
        let text = try reachctl(["history"] + common)
        let svg = try reachctl(["history", "--svg"] + common)
        #expect(json.status == 0 && text.status == 0 && svg.status == 0, "\(json)\n\(text)\n\(svg)")
        let object = (try? json.json()) ?? [:]
        let intervals = try JSONSerialization.data(withJSONObject: [object["intervals"] ?? [], object["summary"] ?? [:]], options: .sortedKeys)
        // FoundationXML crashes on an empty document (a reachctl that crashed prints none).
        let document = svg.stdout.isEmpty ? nil : try? XMLDocument(xmlString: svg.stdout)
        let columns = ["data-lane", "data-cause", "data-start-usec", "data-duration-usec"].map { attribute in
            ((try? document?.nodes(forXPath: "//*[local-name()='rect'][@data-lane]/@\(attribute)")) ?? []).map { $0.stringValue ?? "" }
        }
        let bars = columns[0].indices.map { row in columns.map { $0.indices.contains(row) ? $0[row] : "" }.joined(separator: " ") }
        return HistoryShown(intervals: String(decoding: intervals, as: UTF8.self), table: text.stdout, bars: bars, stderr: json.stderr + svg.stderr)
    }

    /// reachd under the journal, one carrier outage of 2 s, the real entries of it in the journal.
    static func outage(_ scene: HistoryJournalScene) async throws -> (reachd: ChildProcess, down: UInt64) {
        let (journald, scenario, harness) = (scene.journald, scene.scenario, scene.harness)
        let reachd = try journald.reachd(harness, scenario.ns)
        try await harness.ready()
        _ = try await HistoryDaemonTests.fault(harness, until: "offline", { try scenario.carrier(false) }, hold: .seconds(2)) { try scenario.carrier(true) }
        var down: UInt64?
        // By reachd's pid: a flood sent as a process named reachd matches `_COMM=reachd`, and
        // reading its 210,000 entries as JSON at each look took the test a core for 80 s.
        try await eventually("reachd's outage in the journal") {
            let real = try journal(journald, ["_COMM=reachd", "_PID=\(reachd.pid)", "REACHD_LANE="])
            guard real.last?["REACHD_CONDITION"] as? String == "up" else { return false }
            down = real.last { $0["REACHD_CONDITION"] as? String == "down" }.flatMap { ($0["REACHD_TIME_USEC"] as? String).flatMap(UInt64.init) }
            return down != nil
        }
        return (reachd, try #require(down))
    }

    @Test func forgedEntries_byAnotherUser_changeNothingReachctlShows_withReachdRunningAndStopped() async throws {
        let scene = try await HistoryJournalScene()
        defer { scene.stop() }
        let (journald, harness) = (scene.journald, scene.harness)
        let now = HistoryDaemonTests.wallMicroseconds()
        // Ahead of the real entries: an invented outage an hour ago, an uplink that never was,
        // and a record ten years ahead.
        let flood = [
            Self.entry(now - 3_600_000_000, .down, cause: .dns), Self.entry(now - 3_000_000_000, .up),
            Self.entry(now - 600_000_000, .down, lane: "eth9", cause: .link), Self.entry(now + 10 * Self.year, .down, cause: .route),
        ]
        let clock = ContinuousClock()
        let took = try clock.measure { try Self.send(flood, times: Self.forgedCount / flood.count, as: .nobody, to: journald) }
        let (reachd, down) = try await Self.outage(scene)
        defer { reachd.kill() }
        // Into the real outage: an `up` 100 ms after it began, from nobody and from root's python.
        try Self.send([Self.entry(down + 100_000, .up)], as: .nobody, to: journald)
        try Self.send([Self.entry(down + 100_000, .up), Self.entry(down + 150_000, .up, lane: "up0")], as: .root, to: journald)
        try await eventually(
            "every forged entry in the journal: \((try? Self.count(journald, ["_UID=65534"])) ?? -1) from nobody, "
                + "\((try? Self.count(journald, ["_UID=0", "_COMM=python3"])) ?? -1) from root's python", every: .milliseconds(200)
        ) {
            try Self.count(journald, ["_UID=65534"]) == Self.forgedCount + 1 && Self.count(journald, ["_UID=0", "_COMM=python3"]) == 2
        }

        // The truth: reachd's memory alone (an empty journal).
        let empty = try makeScratchDirectory("reachd-history-empty")
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let truth = try Self.shown(harness, journal: empty)
        #expect(truth.table.contains("host: 1 outage") && truth.bars.count == 2, "\(truth)")

        let running = try Self.shown(harness, journal: journald.files)
        #expect(running.same(as: truth), "\(running)\nagainst\n\(truth)")
        #expect(running.stderr.contains("ignored 2 journal entries with reachd's MESSAGE_ID that reachd did not send"), "\(running.stderr)")
        reachd.kill()
        _ = reachd.waitForExit(timeout: .seconds(5))
        let start = clock.now
        let stopped = try Self.shown(harness, journal: journald.files)
        let read = (clock.now - start) / 3
        #expect(stopped.same(as: truth) && stopped.stderr.contains("reading the journal only"), "\(stopped)\nagainst\n\(truth)")
        print("HistoryJournalAttackTests: \(Self.forgedCount) forged entries sent in \(took); reachctl history read the journal in \(read)")
        #expect(read < .seconds(2), "reachctl history took \(read) beside \(Self.forgedCount) forged entries")
    }

    /// More of reachd's entries than one read takes (a link that flapped for months): the read
    /// stops at its bound, newest first, so the latest outage is shown and the cut is said.
    @Test func aJournalPastTheReadsBound_stillShowsTheLatestOutage_andSaysWhereItStopped() async throws {
        let scene = try await HistoryJournalScene()
        defer { scene.stop() }
        let (journald, harness) = (scene.journald, scene.harness)
        let now = HistoryDaemonTests.wallMicroseconds()
        let flaps = [Self.entry(now - 3_600_000_000, .down, cause: .dns), Self.entry(now - 3_590_000_000, .up)]
        try Self.send(flaps, times: (Self.readBound + 10_000) / flaps.count, as: .rootNamedReachd, to: journald)
        let (reachd, down) = try await Self.outage(scene)
        reachd.kill()
        _ = reachd.waitForExit(timeout: .seconds(5))
        let clock = ContinuousClock()
        let start = clock.now
        let read = try reachctl(["history", "--json", "--bus-address", harness.address, "--journal-directory", journald.files])
        let took = clock.now - start
        print("HistoryJournalAttackTests: reachctl history read \(Self.readBound) of reachd's entries in \(took)")
        #expect(read.status == 0 && read.stderr.contains("the journal was read up to its bound of"), "\(read.stderr)")
        let intervals = (try? read.json())?["intervals"] as? [[String: Any]] ?? []
        #expect(intervals.contains { $0["lane"] as? String == "host" && $0["cause"] as? String == "link" && $0["startUSec"] as? UInt64 == down }, "\(intervals)")
        // Its bound is 5 s of reading; the rest is the timeline of 200,000 records, on a loaded VM.
        #expect(took < .seconds(15), "reachctl history took \(took)")
    }

    @Test func entriesAtTheLargestTime_andTenYearsAhead_neitherCrashNorHideTheRealOutages() async throws {
        let scene = try await HistoryJournalScene()
        defer { scene.stop() }
        let (journald, scenario, harness) = (scene.journald, scene.scenario, scene.harness)
        // From root, as a process named reachd: what a reachd with a broken clock, or a damaged
        // file, would hold; ahead of the real entries, so a reading that stops there misses them.
        let now = HistoryDaemonTests.wallMicroseconds()
        try Self.send(
            [Self.entry(UInt64.max, .down, cause: .link), Self.entry(UInt64(Int64.max), .up), Self.entry(now + 10 * Self.year, .down, cause: .route)],
            as: .rootNamedReachd, to: journald)
        // journald vouches for them as reachd's: the test is of the times, not of the trust.
        #expect(try Self.count(journald, ["_UID=0", "_COMM=reachd", "REACHD_TIME_USEC=\(UInt64.max)"]) == 1)
        let first = try await Self.outage(scene)
        var reachd = first.reachd
        defer { reachd.kill() }
        // A new reachd remembers nothing of the outage: only the journal has it.
        reachd.signal(SIGTERM)
        _ = reachd.waitForExit(timeout: .seconds(5))
        reachd = try journald.reachd(harness, scenario.ns)
        try await eventually("the new reachd answers") { (try? HistoryDaemonTests.history(harness).json["source"]) != nil }
        let down = first.down

        for phase in ["running", "stopped"] {
            if phase == "stopped" {
                reachd.kill()
                _ = reachd.waitForExit(timeout: .seconds(5))
            }
            let shown = try Self.shown(harness, journal: journald.files)
            #expect(shown.table.contains("host: 1 outage") && shown.table.contains("linkDown"), "\(phase): \(shown)")
            #expect(shown.bars.contains { $0.hasPrefix("host link \(down) ") } && shown.bars.contains { $0.hasPrefix("up0 link ") }, "\(phase): \(shown.bars), down at \(down)")
            #expect(!shown.table.contains("route") && !shown.table.contains("ongoing"), "\(phase): \(shown.table)")
        }
    }
}

/// What `reachctl history` shows in its three forms: the JSON's intervals and summary, the
/// table, and the SVG's bars (lane, cause, start and duration of each); and what it said on
/// standard error.
struct HistoryShown {
    var intervals: String
    var table: String
    var bars: [String]
    var stderr: String

    func same(as other: HistoryShown) -> Bool { (intervals, table, bars) == (other.intervals, other.table, other.bars) }
}

/// A real journald, and a namespace with an uplink and a harness whose reachd (started by
/// `HistoryJournalAttackTests.outage`) writes to that journal.
final class HistoryJournalScene {
    let journald: HistoryDaemonTests.Journald
    let scenario: DaemonBusTests.Scenario
    let harness: DaemonHarness

    init() async throws {
        let journald = try HistoryDaemonTests.Journald()
        do {
            try await journald.ready()
            scenario = try DaemonBusTests.Scenario()
            try scenario.ns.waitForCarrier("up0")
            harness = try DaemonHarness(scenario.ns, start: false)
        } catch {
            journald.stop()
            throw error
        }
        self.journald = journald
    }

    func stop() {
        harness.shutdown()
        journald.stop()
    }
}
