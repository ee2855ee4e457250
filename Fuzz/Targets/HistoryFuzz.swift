// libFuzzer target: journal entries as `reachctl history` reads them (issue 48 item 3, issue 51
// item 4), through `HistoryRecord.sentByReachd`, `HistoryRecord(journalFields:)`, the
// `HistoryTimeline` and its three outputs. The input: 8 bytes of `now` and 8 of `since` (little
// endian, any value: the largest included; `since` with its top bit set is nil), then entries
// separated by an empty line, each a `NAME=value` per line, as journald hands them over.
//
// Oracles besides "no crash, no trap": an entry is believed only from uid 0 or reachd's; a record
// is made exactly when REACHD_CONDITION names a condition and its time is a number within
// `latestTime`, and its fields give it back unchanged; the timeline's period lies within
// `latestTime`, every interval within it ends no earlier than it starts and no later than now,
// the host's offline total fits in the period; the SVG has a bar per interval.
@testable import Reachability

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHistory(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: data, count: size)
    guard size >= 16 else { return 0 }
    let now = raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self).littleEndian
    let sinceWord = raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian
    let since = sinceWord >> 63 == 1 ? nil : sinceWord
    let reachdUser: UInt32 = 990
    var records: [HistoryRecord] = []
    for entry in String(decoding: raw[16...], as: UTF8.self).split(separator: "\n\n", omittingEmptySubsequences: true) {
        var fields: [String: String] = [:]
        for line in entry.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        if HistoryRecord.sentByReachd(fields, reachdUser: reachdUser) {
            require([0, reachdUser].contains(fields["_UID"].flatMap { UInt32($0) }), "believed an entry from uid \(fields["_UID"] ?? "none")")
        }
        let record = HistoryRecord(journalFields: fields, entryTime: now)
        let time = fields["REACHD_TIME_USEC"].map { UInt64($0) } ?? now
        let valid = fields["REACHD_CONDITION"].flatMap { HistoryRecord.Condition(rawValue: $0) } != nil && (time.map { $0 <= HistoryRecord.latestTime } ?? false)
        require((record != nil) == valid, "record \(String(describing: record)) from \(fields)")
        guard let record else { continue }
        require(record.time == time, "time \(record.time) from \(fields)")
        require(HistoryRecord(journalFields: Dictionary(record.journalFields, uniquingKeysWith: { $1 }), entryTime: 0) == record, "\(record) and back")
        records.append(record)
    }
    let timeline = HistoryTimeline(records: records, since: since, now: now)
    require(timeline.since <= timeline.now && timeline.now <= HistoryRecord.latestTime, "period \(timeline.since)...\(timeline.now)")
    for interval in timeline.intervals {
        require(interval.start <= timeline.now && (interval.end ?? interval.start) >= interval.start, "interval \(interval)")
        require((interval.end ?? timeline.now) <= timeline.now, "interval \(interval) ends after \(timeline.now)")
    }
    require(timeline.totalOffline <= timeline.now - timeline.since && timeline.longestOutage <= timeline.totalOffline, "summary")
    _ = HistoryOutput.text(timeline)
    _ = HistoryOutput.json(timeline, source: "journal").serialized()
    let bars = HistoryOutput.svg(timeline).ranges(of: "data-start-usec=").count
    require(bars == timeline.intervals.count, "\(bars) bars for \(timeline.intervals.count) intervals")
    return 0
}
