import Foundation
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import Reachability

/// The pure parts of the history: the bounded ring, records made into outages and a summary,
/// the journal's fields there and back, `--since`, and the three outputs.
@Suite("History")
struct HistoryTests {
    static let second: UInt64 = 1_000_000
    static let t0: UInt64 = 1_795_000_000 * second

    static func host(_ at: UInt64, _ condition: HistoryRecord.Condition, _ cause: Explanation.LayerName? = nil, reason: String = "") -> HistoryRecord {
        HistoryRecord(
            time: t0 + at, lane: "", condition: condition, state: condition == .down ? "offline" : "online", primary: condition == .down ? "" : "up0",
            reason: reason, cause: cause, interface: "up0")
    }

    // MARK: ring

    @Test func theRing_keepsTheLatestRecordsOfEachLane_inOrder() {
        var ring = HistoryRing(perLane: 3, maximumLanes: 2)
        for index in 0..<5 { ring.append(Self.host(UInt64(index), index % 2 == 0 ? .down : .up)) }
        #expect(ring.records().map(\.time) == [2, 3, 4].map { Self.t0 + $0 })
        #expect(ring.oldestHostRecord == Self.t0 + 2)
        #expect(ring.latest("")?.time == Self.t0 + 4)
    }

    @Test func theRing_dropsTheStalestUplinkLane_beyondItsBound_neverTheHosts() {
        var ring = HistoryRing(perLane: 4, maximumLanes: 2)
        ring.append(Self.host(0, .up))
        for (index, name) in ["a", "b", "c"].enumerated() {
            ring.append(HistoryRecord(time: Self.t0 + UInt64(index + 1), lane: name, condition: .up, state: "up"))
        }
        #expect(Set(ring.laneNames) == ["", "b", "c"])
    }

    @Test func recordsSince_includeEachLanesLastRecordBefore_soTheStateThenIsKnown() {
        var ring = HistoryRing()
        ring.append(Self.host(0, .up))
        ring.append(Self.host(10 * Self.second, .down, .link))
        ring.append(Self.host(20 * Self.second, .up))
        ring.append(Self.host(30 * Self.second, .down, .route))
        let since = Self.t0 + 15 * Self.second
        #expect(ring.records(since: since).map(\.time) == [10, 20, 30].map { Self.t0 + $0 * Self.second })
        // An outage that began before the period counts from its start (the interval is whole)
        // and in the summary from `since`.
        let timeline = HistoryTimeline(records: ring.records(since: since), since: since, now: Self.t0 + 40 * Self.second)
        #expect(timeline.intervals.map(\.cause) == [.link, .route])
        #expect(timeline.totalOffline == 5 * Self.second + 10 * Self.second)
    }

    // MARK: timeline

    @Test func outages_haveTheirStartEndDurationAndCause_andTheSummaryAddsThemUp() {
        let records = [
            Self.host(0, .up),
            Self.host(5 * Self.second, .down, .link, reason: "linkDown"),
            Self.host(8 * Self.second, .up),
            Self.host(20 * Self.second, .down, .route, reason: "noRoute"),
            Self.host(21 * Self.second, .down, .gateway, reason: "gatewayUnreachable"),  // another cause: another outage
            Self.host(30 * Self.second, .up),
            Self.host(40 * Self.second, .degraded, .traffic, reason: "stalled"),
        ]
        let timeline = HistoryTimeline(records: records, since: Self.t0, now: Self.t0 + 50 * Self.second)
        #expect(timeline.intervals.map(\.cause) == [.link, .route, .gateway, .traffic])
        #expect(timeline.intervals.map { $0.duration(now: timeline.now) / Self.second } == [3, 1, 9, 10])
        #expect(timeline.intervals.last?.end == nil)
        #expect(timeline.outageCount == 3)
        #expect(timeline.totalOffline == 13 * Self.second)
        #expect(timeline.longestOutage == 9 * Self.second)
        #expect(timeline.degradationCount == 1)
        #expect(HistoryOutput.summary(timeline).hasPrefix("host: 3 outages, 13s offline in total, longest 9s; 1 degradation since "))
    }

    @Test func aRepeatOfTheSameTrouble_withAnotherDetail_isOneOutage() {
        var again = Self.host(3 * Self.second, .down, .link, reason: "linkDown")
        again.state = "local"
        let records = [Self.host(0, .down, .link, reason: "linkDown"), again, Self.host(6 * Self.second, .up)]
        let timeline = HistoryTimeline(records: records, now: Self.t0 + 10 * Self.second)
        #expect(timeline.intervals.count == 1 && timeline.intervals.first?.duration(now: timeline.now) == 6 * Self.second)
    }

    @Test func intervalsThatEndedBeforeThePeriod_areLeftOut() {
        let records = [Self.host(0, .down, .link), Self.host(Self.second, .up), Self.host(10 * Self.second, .down, .dns)]
        let timeline = HistoryTimeline(records: records, since: Self.t0 + 5 * Self.second, now: Self.t0 + 12 * Self.second)
        #expect(timeline.intervals.map(\.cause) == [.dns])
        #expect(timeline.totalOffline == 2 * Self.second)
    }

    @Test func lanes_areTheHostFirst_thenUplinksByName() {
        let records = [
            HistoryRecord(time: Self.t0, lane: "wl0", condition: .down, state: "down", cause: .radio),
            HistoryRecord(time: Self.t0, lane: "eth0", condition: .down, state: "down", cause: .link),
        ]
        #expect(HistoryTimeline(records: records, now: Self.t0 + 1).lanes == ["", "eth0", "wl0"])
    }

    // MARK: journal fields

    @Test func aRecord_survivesTheJournalsFields() {
        let record = HistoryRecord(
            time: Self.t0 + 7, lane: "up0", condition: .down, state: "down", primary: "wl0", reason: "noRoute", cause: .route,
            interface: "up0", generation: 42)
        let fields = Dictionary(record.journalFields, uniquingKeysWith: { $1 })
        #expect(fields["MESSAGE_ID"] == "674cfb0d4b69427086de3cccddba7818")
        #expect(fields["REACHD_CAUSE_LAYER"] == "route" && fields["REACHD_GENERATION"] == "42" && fields["REACHD_INTERFACE"] == "up0")
        #expect(fields["MESSAGE"] == "uplink up0 down: route layer (noRoute) on up0")
        #expect(HistoryRecord(journalFields: fields, entryTime: 0) == record)
        #expect(HistoryRecord(journalFields: ["REACHD_CONDITION": "sideways"], entryTime: 0) == nil)
    }

    /// Only what journald wrote itself (`_UID`, `_SYSTEMD_UNIT`, `_COMM`, `_EXE`) says who sent
    /// an entry: root or reachd's user, and reachd.service or a process named reachd.
    @Test func onlyEntriesJournaldSaysReachdSent_areBelieved() {
        let reachd: UInt32 = 990
        func believed(_ fields: [String: String]) -> Bool { HistoryRecord.sentByReachd(fields, reachdUser: reachd) }
        #expect(believed(["_UID": "990", "_SYSTEMD_UNIT": "reachd.service", "_COMM": "reachd"]))
        #expect(believed(["_UID": "0", "_COMM": "reachd"]))
        #expect(believed(["_UID": "0", "_EXE": "/work/.build/debug/reachd", "_COMM": "reachd-main"]))
        // Another user naming a process reachd, or writing MESSAGE_ID and every REACHD_ field.
        #expect(!believed(["_UID": "65534", "_COMM": "reachd", "_EXE": "/tmp/reachd"]))
        #expect(!believed(["_UID": "1000", "_SYSTEMD_UNIT": "reachd.service"]))
        #expect(!believed(["REACHD_CONDITION": "up", "_COMM": "reachd"]))
        // Root's other programs.
        #expect(!believed(["_UID": "0", "_COMM": "logger", "_EXE": "/usr/bin/logger"]))
        #expect(!believed(["_UID": "0", "_EXE": "/usr/sbin/notreachd"]))
        #expect(HistoryRecord.senderUIDs(reachdUser: nil) == [0] && HistoryRecord.senderUIDs(reachdUser: reachd) == [0, reachd])
    }

    /// Issue 51: REACHD_TIME_USEC past 2^53 microseconds (2255), or not a number, makes no record.
    @Test(arguments: [String(UInt64.max), String(Int64.max), String(HistoryRecord.latestTime + 1), "-1", "1e20", "", "18446744073709551616"])
    func aJournalTimeOutOfRange_isRefused(_ time: String) {
        #expect(HistoryRecord(journalFields: ["REACHD_CONDITION": "down", "REACHD_TIME_USEC": time], entryTime: Self.t0) == nil)
        #expect(HistoryRecord(journalFields: ["REACHD_CONDITION": "down", "REACHD_TIME_USEC": String(HistoryRecord.latestTime)], entryTime: 0) != nil)
    }

    /// A record dated after now (a clock that ran ahead: ten years, or the largest time) is
    /// skipped, and the records after it still count; `since` and `now` past the range never
    /// reach the arithmetic.
    @Test func aRecordDatedAfterNow_isSkipped_andTheRecordsAfterItCount() {
        let now = Self.t0 + 10 * Self.second
        let ahead = HistoryRecord(time: Self.t0 + 10 * 365 * 86_400 * Self.second, lane: "", condition: .up, state: "online")
        let records = [Self.host(0, .up), ahead, Self.host(2 * Self.second, .down, .link), Self.host(4 * Self.second, .up)]
        let timeline = HistoryTimeline(records: records, now: now)
        #expect(timeline.intervals.map { $0.duration(now: now) } == [2 * Self.second] && timeline.since == Self.t0)
        let beyond = HistoryTimeline(records: records, since: .max, now: .max)
        #expect(beyond.now == HistoryRecord.latestTime && beyond.since == beyond.now && beyond.intervals.isEmpty)
    }

    /// Issue 51: any microsecond value as a record's time, `since` or `now`, the largest included:
    /// the table, the JSON and the SVG are made, never a trap (the SVG crashed with SIGILL).
    @Test func anyTime_makesTheTableJSONAndSVG_neverATrap() throws {
        let edges: [UInt64] = [0, 1, Self.t0, HistoryRecord.latestTime, HistoryRecord.latestTime + 1, 1 << 63 - 1, 1 << 63, .max - 1, .max]
        for time in edges {
            let records = [Self.host(0, .down, .link), HistoryRecord(time: time, lane: "up0", condition: .down, state: "down", cause: .route)]
            for (since, now) in [(nil, Self.t0 + Self.second), (time, time), (0, UInt64.max), (UInt64.max, Self.t0)] as [(UInt64?, UInt64)] {
                let timeline = HistoryTimeline(records: records, since: since, now: now)
                #expect(!HistoryOutput.text(timeline).isEmpty && !HistoryOutput.json(timeline, source: "journal").serialized().isEmpty)
                _ = try XMLDocument(xmlString: HistoryOutput.svg(timeline))
            }
        }
    }

    @Test func journalsNativeFormat_lengthPrefixesAValueWithANewline() {
        var datagram: [UInt8] = []
        JournalEntry.append("A", "x", to: &datagram)
        JournalEntry.append("B", "1\n2", to: &datagram)
        #expect(datagram == Array("A=x\nB\n".utf8) + [3, 0, 0, 0, 0, 0, 0, 0] + Array("1\n2\n".utf8))
    }

    /// A journald that never reads (its queue full): entries are dropped and counted, the
    /// sender never waits. `sd_journal_sendv` would block here.
    @Test func aJournaldThatDoesNotRead_costsEntries_neverTime() throws {
        let directory = try makeScratchDirectory("reachd-journal-stuck")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/socket"
        let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(receiver >= 0)
        defer { close(receiver) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(receiver, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        let journal = try #require(JournalEntry(socketPath: path))
        let record = HistoryRecord(time: Self.t0, lane: "", condition: .down, state: "offline", reason: "linkDown", cause: .link, interface: "up0")
        let clock = ContinuousClock()
        let took = clock.measure {
            for _ in 0..<2000 { journal.send(record.journalFields) }
        }
        #expect(journal.dropped > 0, "the receiver's queue never filled")
        #expect(took < .seconds(1), "sending took \(took)")
        #expect(JournalEntry(socketPath: directory + "/absent") == nil)
    }

    // MARK: --since

    @Test func since_readsSpansDatesAndWords() throws {
        let now = Self.t0
        #expect(try HistorySince.parse("90s", now: now) == now - 90 * Self.second)
        #expect(try HistorySince.parse("-2h", now: now) == now - 7200 * Self.second)
        #expect(try HistorySince.parse("1d ago", now: now) == now - 86_400 * Self.second)
        #expect(try HistorySince.parse("@1700000000", now: now) == 1_700_000_000 * Self.second)
        let midnight = try HistorySince.parse("today", now: now)
        #expect(midnight <= now && now - midnight < 86_400 * Self.second)
        #expect(try HistorySince.parse("yesterday", now: now) < midnight)
        let day = try HistorySince.parse("2026-11-27", now: now)
        #expect(try HistorySince.parse("2026-11-27 14:02", now: now) == day + (14 * 3600 + 2 * 60) * Self.second)
        #expect(try HistorySince.parse("2026-11-27T14:02:30", now: now) == day + (14 * 3600 + 2 * 60 + 30) * Self.second)
    }

    @Test(arguments: ["", "soon", "5x", "2026-13-01", "2026-11-27 25:00", "@x", "-"])
    func since_refusesOtherText_namingIt(_ text: String) {
        #expect(throws: HistorySince.Refusal.self) { try HistorySince.parse(text, now: Self.t0) }
        do {
            _ = try HistorySince.parse(text, now: Self.t0)
        } catch {
            #expect(error.description.contains("'\(text)'") && error.description.contains("1 hour ago") && error.description.contains("ISO 8601"))
        }
    }

    // MARK: outputs

    @Test func theSVG_isXML_withABarPerInterval_colouredByCause_andALegend() throws {
        let records = [
            Self.host(0, .up), Self.host(Self.second, .down, .link), Self.host(2 * Self.second, .up),
            HistoryRecord(time: Self.t0 + Self.second, lane: "up<0>&", condition: .down, state: "down", cause: .route),
        ]
        let timeline = HistoryTimeline(records: records, since: Self.t0, now: Self.t0 + 4 * Self.second)
        let svg = HistoryOutput.svg(timeline)
        let document = try XMLDocument(xmlString: svg)
        func values(_ attribute: String) throws -> [String] {
            try document.nodes(forXPath: "//*[local-name()='rect'][@data-cause!='']/@\(attribute)").map { $0.stringValue ?? "" }
        }
        #expect(try values("data-cause") == ["link", "route"])
        #expect(try values("fill") == [HistoryOutput.colours[.link], HistoryOutput.colours[.route]].map { $0 ?? "" })
        #expect(try values("data-lane").last == "up<0>&")
        let texts = try document.nodes(forXPath: "//*[local-name()='text']").map { $0.stringValue ?? "" }
        for layer in Explanation.hostLayers { #expect(texts.contains(layer.rawValue), "legend: \(layer)") }
    }

    @Test func theJSON_hasEachIntervalAndTheSummary() throws {
        let records = [Self.host(0, .down, .link, reason: "linkDown"), Self.host(1_500_000, .up)]
        let timeline = HistoryTimeline(records: records, since: Self.t0, now: Self.t0 + 2 * Self.second)
        let object = try #require(JSONSerialization.jsonObject(with: Data(HistoryOutput.json(timeline, source: "reachd").serialized().utf8)) as? [String: Any])
        let interval = try #require((object["intervals"] as? [[String: Any]])?.first)
        #expect(interval["lane"] as? String == "host" && interval["kind"] as? String == "outage" && interval["cause"] as? String == "link")
        #expect(interval["durationUSec"] as? Int == 1_500_000 && interval["ongoing"] as? Bool == false)
        #expect((object["summary"] as? [String: Any])?["outages"] as? Int == 1)
        #expect(HistoryOutput.text(timeline).contains("1.50s"))
    }
}
