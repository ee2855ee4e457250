import CSystemd
import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// reachd's history records as the journal kept them (reachd sends one entry per change, with
/// `HistoryRecord.journalMessageID`): what reaches back past reachd's memory and its restarts.
/// Read with sd-journal, matching that MESSAGE_ID; a journal that cannot be opened or read
/// (no journal, no permission: join the systemd-journal group) is an error that says so.
enum HistoryJournal {
    struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    /// At most this many entries are read: a bound on memory should the journal hold years.
    static let maximumEntries = 200_000

    /// The records before `until` (wall-clock microseconds; nil: all), oldest first, from the
    /// system's journal or, with `directory`, the journal files there (as `journalctl -D`).
    static func records(until: UInt64?, directory: String?) throws(Unreadable) -> [HistoryRecord] {
        var journal: OpaquePointer?
        let opened = directory.map { sd_journal_open_directory(&journal, $0, 0) } ?? sd_journal_open(&journal, Int32(SD_JOURNAL_LOCAL_ONLY))
        guard opened >= 0, let journal else {
            throw Unreadable(description: "cannot open the journal\(directory.map { " in \($0)" } ?? ""): \(String(cString: strerror(-opened)))")
        }
        defer { sd_journal_close(journal) }
        let match = "MESSAGE_ID=\(HistoryRecord.journalMessageID)"
        let added = match.withCString { sd_journal_add_match(journal, $0, 0) }
        guard added >= 0 else { throw Unreadable(description: "cannot match \(match) in the journal: \(String(cString: strerror(-added)))") }
        var records: [HistoryRecord] = []
        while records.count < maximumEntries {
            let next = sd_journal_next(journal)
            if next == 0 { break }
            guard next > 0 else { throw Unreadable(description: "cannot read the journal: \(String(cString: strerror(-next)))") }
            var realtime: UInt64 = 0
            _ = sd_journal_get_realtime_usec(journal, &realtime)
            guard let record = HistoryRecord(journalFields: fields(of: journal), entryTime: realtime) else { continue }
            if let until, record.time >= until { break }
            records.append(record)
        }
        return records
    }

    /// The entry's REACHD_* fields (the only ones a record needs).
    private static func fields(of journal: OpaquePointer) -> [String: String] {
        var fields: [String: String] = [:]
        var data: UnsafeRawPointer?
        var length = 0
        sd_journal_restart_data(journal)
        while sd_journal_enumerate_data(journal, &data, &length) > 0, let data {
            let bytes = UnsafeRawBufferPointer(start: data, count: length)
            guard bytes.starts(with: "REACHD_".utf8), let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = String(decoding: bytes[..<equals], as: UTF8.self)
            fields[name] = String(decoding: bytes[(equals + 1)...], as: UTF8.self)
        }
        return fields
    }
}
