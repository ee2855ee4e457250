/// A record as a journal entry: reachd sends these fields, `reachctl history` matches
/// `MESSAGE_ID` and reads them back. The field names are part of reachd's interface
/// (reachd(8), docs/history.md): `journalctl MESSAGE_ID=674cfb0d4b69427086de3cccddba7818`.
extension HistoryRecord {
    /// Fixed for every record, so the journal finds them (`sd_journal_add_match`).
    package static let journalMessageID = "674cfb0d4b69427086de3cccddba7818"

    package enum JournalField {
        package static let state = "REACHD_STATE"
        package static let condition = "REACHD_CONDITION"
        package static let lane = "REACHD_LANE"
        package static let primary = "REACHD_PRIMARY"
        package static let reason = "REACHD_REASON"
        package static let causeLayer = "REACHD_CAUSE_LAYER"
        package static let interface = "REACHD_INTERFACE"
        package static let generation = "REACHD_GENERATION"
        /// The record's own wall-clock time: the entry's timestamp is when journald took it.
        package static let time = "REACHD_TIME_USEC"
    }

    /// The sentence people read in `journalctl -u reachd`.
    package var message: String {
        let whose = lane.isEmpty ? "host" : "uplink \(lane)"
        switch condition {
        case .up:
            return lane.isEmpty ? "host online" + (primary.isEmpty ? "" : " via \(primary)") : "\(whose) carries a default route again"
        case .degraded, .down:
            let word = condition == .down ? (lane.isEmpty ? state : "down") : "degraded"
            var text = "\(whose) \(word)"
            if let cause { text += ": \(cause.rawValue) layer" }
            if !reason.isEmpty { text += " (\(reason))" }
            if !interface.isEmpty { text += " on \(interface)" }
            return text
        }
    }

    /// The entry's fields, MESSAGE first.
    package var journalFields: [(String, String)] {
        [
            ("MESSAGE", message), ("MESSAGE_ID", Self.journalMessageID), ("PRIORITY", condition == .up ? "6" : "4"),
            (JournalField.state, state), (JournalField.condition, condition.rawValue), (JournalField.lane, lane),
            (JournalField.primary, primary), (JournalField.reason, reason), (JournalField.causeLayer, cause?.rawValue ?? ""),
            (JournalField.interface, interface), (JournalField.generation, String(generation)), (JournalField.time, String(time)),
        ]
    }

    /// A record from an entry's fields; nil when they do not make one (another program's entry
    /// under the same MESSAGE_ID, a damaged one). `entryTime`: the entry's own timestamp, for
    /// an entry without REACHD_TIME_USEC.
    package init?(journalFields fields: [String: String], entryTime: UInt64) {
        guard let word = fields[JournalField.condition], let condition = Condition(rawValue: word) else { return nil }
        let cause = fields[JournalField.causeLayer].flatMap { Explanation.LayerName(rawValue: $0) }
        self.init(
            time: fields[JournalField.time].flatMap { UInt64($0) } ?? entryTime, lane: fields[JournalField.lane] ?? "",
            condition: condition, state: fields[JournalField.state] ?? condition.rawValue,
            primary: fields[JournalField.primary] ?? "", reason: fields[JournalField.reason] ?? "", cause: cause,
            interface: fields[JournalField.interface] ?? "", generation: fields[JournalField.generation].flatMap { UInt64($0) } ?? 0)
    }
}
