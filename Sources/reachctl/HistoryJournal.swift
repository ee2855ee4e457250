import CSystemd
import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// reachd's history records as the journal kept them (reachd sends one entry per change, with
/// `HistoryRecord.journalMessageID`): what reaches back past reachd's memory and its restarts.
/// Read with sd-journal; a journal that cannot be opened or read (no journal, no permission:
/// join the systemd-journal group) is an error that says so.
///
/// Any local user may send an entry with reachd's MESSAGE_ID and fields: only the entries
/// journald itself says reachd sent are read (`HistoryRecord.sentByReachd`). The uid is matched
/// in sd-journal's index, so another user's entries, however many, are never even looked at;
/// and every read is bounded in entries, bytes and time, newest first, so a bound reached
/// costs the oldest outages, never the latest.
enum HistoryJournal {
    struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    /// What a read found: the records, oldest first, and what it left aside.
    struct Reading {
        var records: [HistoryRecord] = []
        /// Entries with reachd's MESSAGE_ID from root or reachd's user that reachd did not send.
        var ignored = 0
        /// The bound that ended the read before the journal's first entry (nil: none did).
        var bound: String?
    }

    /// At most this many entries are read (reachd's, and root's that are not), newest first: a
    /// bound on memory and time should the journal hold years. 200,000 records at two a day
    /// per lane is centuries; at a flap a minute, months.
    static let maximumEntries = 200_000
    /// At most this many bytes of the fields kept (REACHD_* and the sender's): reachd's come to
    /// about 350 bytes an entry, so this only ends a read of entries that are not reachd's.
    static let maximumBytes = 128 << 20
    /// A value longer than this is not reachd's (its longest is an interface name or a path to
    /// reachd), and is not kept.
    static let maximumValue = 1024
    /// And the read ends after this long (measured between entries), whatever remains.
    static let maximumTime: Duration = .seconds(5)

    /// The records before `until` (wall-clock microseconds; nil: all) from the system's journal
    /// or, with `directory`, the journal files there (as `journalctl -D`).
    static func records(until: UInt64?, directory: String?) throws(Unreadable) -> Reading {
        let journal = try open(directory)
        defer { sd_journal_close(journal) }
        let reachdUser = CheckCommand.uid(of: "reachd")
        try match(journal, reachdUser: reachdUser)
        // Values longer than reachd ever writes need not be decompressed whole.
        _ = sd_journal_set_data_threshold(journal, 4096)
        var reading = Reading()
        var (entries, bytes) = (0, 0)
        let clock = ContinuousClock(), started = clock.now
        var step = sd_journal_seek_tail(journal)
        while step >= 0 {
            step = sd_journal_previous(journal)
            if step == 0 { break }
            guard step > 0 else { throw Unreadable(description: "cannot read the journal: \(String(cString: strerror(-step)))") }
            if entries == maximumEntries { reading.bound = "\(maximumEntries) entries" }
            if bytes >= maximumBytes { reading.bound = "\(maximumBytes >> 20) MiB" }
            if clock.now - started >= maximumTime { reading.bound = "\(maximumTime)" }
            if reading.bound != nil { break }
            entries += 1
            var fields: [String: String] = [:]
            Self.fields(HistoryRecord.SenderField.all, of: journal, into: &fields, bytes: &bytes)
            guard HistoryRecord.sentByReachd(fields, reachdUser: reachdUser) else {
                reading.ignored += 1
                continue
            }
            Self.fields(HistoryRecord.JournalField.all, of: journal, into: &fields, bytes: &bytes)
            var realtime: UInt64 = 0
            _ = sd_journal_get_realtime_usec(journal, &realtime)
            // Past `until` reachd's memory answers; a record dated there (a clock that was ahead)
            // is skipped, never an end to the reading.
            guard let record = HistoryRecord(journalFields: fields, entryTime: realtime), record.time < until ?? .max else { continue }
            reading.records.append(record)
        }
        reading.records.reverse()
        return reading
    }

    private static func open(_ directory: String?) throws(Unreadable) -> OpaquePointer {
        var journal: OpaquePointer?
        let opened = directory.map { sd_journal_open_directory(&journal, $0, 0) } ?? sd_journal_open(&journal, Int32(SD_JOURNAL_LOCAL_ONLY))
        guard opened >= 0, let journal else {
            throw Unreadable(description: "cannot open the journal\(directory.map { " in \($0)" } ?? ""): \(String(cString: strerror(-opened)))")
        }
        return journal
    }

    /// MESSAGE_ID and, in the same conjunction, `_UID` of root or reachd's user (one field's
    /// matches are alternatives): sd-journal's index skips every other sender's entries.
    private static func match(_ journal: OpaquePointer, reachdUser: UInt32?) throws(Unreadable) {
        let uids = HistoryRecord.senderUIDs(reachdUser: reachdUser).map { "\(HistoryRecord.SenderField.uid)=\($0)" }
        for match in ["MESSAGE_ID=\(HistoryRecord.journalMessageID)"] + uids {
            let added = match.withCString { sd_journal_add_match(journal, $0, 0) }
            guard added >= 0 else { throw Unreadable(description: "cannot match \(match) in the journal: \(String(cString: strerror(-added)))") }
        }
    }

    /// The `names` fields of the current entry that it has (each asked of sd-journal, which finds
    /// it among the entry's items: an entry holds about 35, a record needs 13), adding what they
    /// hold to `bytes`. A value longer than `maximumValue` is not reachd's and is left out.
    private static func fields(_ names: [String], of journal: OpaquePointer, into fields: inout [String: String], bytes: inout Int) {
        var data: UnsafeRawPointer?
        var length = 0
        for name in names where sd_journal_get_data(journal, name, &data, &length) >= 0 {
            guard let data, length > name.utf8.count, length - name.utf8.count - 1 <= maximumValue else { continue }
            bytes += length
            let value = UnsafeRawBufferPointer(start: data, count: length)[(name.utf8.count + 1)...]
            fields[name] = String(decoding: value, as: UTF8.self)
        }
    }
}
