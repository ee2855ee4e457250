import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import Reachability

/// issue 46: time asleep and time reachd was stopped are kept apart from outages in the history:
/// their own intervals (kind `asleep`, `stopped`), never counted offline, summed apart in the
/// text, the JSON and the SVG.
@Suite struct HistoryUnobservedTests {
    static let second = HistoryTests.second
    static let t0 = HistoryTests.t0

    static func unobserved(_ at: UInt64, _ reason: String, lane: String = "") -> HistoryRecord {
        HistoryRecord(time: t0 + at * second, lane: lane, condition: .unobserved, state: reason, reason: reason)
    }

    /// Offline before a sleep and after it, then up; stopped, then the next reachd says up.
    static let records = [
        HistoryTests.host(0, .up), HistoryTests.host(10 * second, .down, .gateway, reason: "gatewayUnreachable"),
        unobserved(20, HistoryRecord.Condition.asleep),
        HistoryTests.host(80 * second, .down, .gateway, reason: "gatewayUnreachable"), HistoryTests.host(90 * second, .up),
        unobserved(100, HistoryRecord.Condition.stopped), HistoryTests.host(130 * second, .up),
    ]

    static let timeline = HistoryTimeline(records: records, since: t0, now: t0 + 140 * second)

    @Test func sleepAndStopAreTheirOwnIntervals_notOffline() {
        let timeline = Self.timeline
        let kinds = timeline.intervals.map { HistoryOutput.kind($0) }
        #expect(kinds == ["outage", "asleep", "outage", "stopped"])
        #expect(timeline.intervals.map { $0.duration(now: timeline.now) / Self.second } == [10, 60, 10, 30])
        #expect(timeline.totalOffline == 20 * Self.second)
        #expect(timeline.totalUnobserved(HistoryRecord.Condition.asleep) == 60 * Self.second)
        #expect(timeline.totalUnobserved(HistoryRecord.Condition.stopped) == 30 * Self.second)
    }

    @Test func theTextAndTheJSONSayThemApart() throws {
        let text = HistoryOutput.text(Self.timeline)
        #expect(text.contains("host: 2 outages, 20s offline in total, longest 10s; 1m 0s asleep; 30s with reachd stopped since"), "\(text)")
        #expect(text.split(separator: "\n").contains { $0.contains(" asleep ") }, "\(text)")
        let json = HistoryOutput.json(Self.timeline, source: "reachd+journal").serialized()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let summary = try #require(object["summary"] as? [String: Any])
        #expect(summary["offlineUSec"] as? Int == 20_000_000 && summary["asleepUSec"] as? Int == 60_000_000)
        #expect(summary["stoppedUSec"] as? Int == 30_000_000 && summary["outages"] as? Int == 2)
        let kinds = (object["intervals"] as? [[String: Any]])?.compactMap { $0["kind"] as? String }
        #expect(kinds == ["outage", "asleep", "outage", "stopped"])
    }

    @Test func theSVGDrawsThemGrey() throws {
        let document = try XMLDocument(xmlString: HistoryOutput.svg(Self.timeline))
        let asleep = try document.nodes(forXPath: "//*[local-name()='rect'][@class='asleep']/@fill").map { $0.stringValue ?? "" }
        #expect(asleep == [HistoryOutput.unobservedColour])
        #expect(try document.nodes(forXPath: "//*[local-name()='rect'][@class='stopped']").count == 1)
        #expect(try document.nodes(forXPath: "//*[local-name()='rect'][@class='outage']").count == 2)
    }

    @Test func anUnobservedRecordSurvivesTheJournalsFields() {
        let record = Self.unobserved(5, HistoryRecord.Condition.stopped)
        let fields = Dictionary(record.journalFields, uniquingKeysWith: { $1 })
        #expect(fields["MESSAGE"] == "host not watched: reachd stopped" && fields["PRIORITY"] == "6")
        #expect(fields["REACHD_CONDITION"] == "unobserved")
        #expect(HistoryRecord(journalFields: fields, entryTime: 0) == record)
    }
}
