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
        package static let all = [state, condition, lane, primary, reason, causeLayer, interface, generation, time]
    }

    /// The latest time a record may carry: 2^53 microseconds (2255-06-05), the largest a Double
    /// holds exactly (the SVG's arithmetic; JSON readers such as jq). A time past it is not a
    /// clock's but a damaged or made-up entry's, and is refused where a record is read.
    package static let latestTime: UInt64 = 1 << 53

    /// Fields journald writes itself, from the sender's kernel credentials (SCM_CREDENTIALS),
    /// /proc and its cgroup. A sender cannot write a field that begins with `_` (journald drops
    /// it), and an unprivileged process cannot pass another user's uid: these say who sent an
    /// entry, where MESSAGE_ID and every REACHD_ field say only what its sender chose.
    package enum SenderField {
        package static let uid = "_UID"
        package static let unit = "_SYSTEMD_UNIT"
        package static let command = "_COMM"
        package static let executable = "_EXE"
        package static let all = [uid, unit, command, executable]
    }

    /// The users an entry of reachd's comes from: root, and the user reachd.service runs as
    /// (`User=reachd`; nil when there is none, as on a machine that never installed the package).
    package static func senderUIDs(reachdUser: UInt32?) -> [UInt32] {
        guard let reachdUser, reachdUser != 0 else { return [0] }
        return [0, reachdUser]
    }

    /// Whether journald vouches that reachd sent the entry whose fields these are: from root or
    /// reachd's user, and from reachd.service or a process named reachd (reachd started by
    /// hand, or by the tests). The name alone proves nothing (any user may name a process
    /// reachd); with the uid it tells reachd from root's other programs.
    package static func sentByReachd(_ fields: [String: String], reachdUser: UInt32?) -> Bool {
        guard let uid = fields[SenderField.uid].flatMap({ UInt32($0) }), senderUIDs(reachdUser: reachdUser).contains(uid) else {
            return false
        }
        return fields[SenderField.unit] == "reachd.service" || fields[SenderField.command] == "reachd"
            || fields[SenderField.executable]?.hasSuffix("/reachd") == true
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
        case .unobserved:
            return "\(whose) not watched: " + (reason == Condition.stopped ? "reachd stopped" : "the host is asleep")
        }
    }

    /// The entry's fields, MESSAGE first.
    package var journalFields: [(String, String)] {
        [
            ("MESSAGE", message), ("MESSAGE_ID", Self.journalMessageID), ("PRIORITY", condition == .up || condition == .unobserved ? "6" : "4"),
            (JournalField.state, state), (JournalField.condition, condition.rawValue), (JournalField.lane, lane),
            (JournalField.primary, primary), (JournalField.reason, reason), (JournalField.causeLayer, cause?.rawValue ?? ""),
            (JournalField.interface, interface), (JournalField.generation, String(generation)), (JournalField.time, String(time)),
        ]
    }

    /// A record from an entry's fields; nil when they do not make one (another program's entry
    /// under the same MESSAGE_ID, a damaged one, a time past `latestTime`). `entryTime`: the
    /// entry's own timestamp, for an entry without REACHD_TIME_USEC.
    package init?(journalFields fields: [String: String], entryTime: UInt64) {
        guard let word = fields[JournalField.condition], let condition = Condition(rawValue: word) else { return nil }
        let time = fields[JournalField.time].map { UInt64($0) } ?? entryTime
        guard let time, time <= Self.latestTime else { return nil }
        let cause = fields[JournalField.causeLayer].flatMap { Explanation.LayerName(rawValue: $0) }
        self.init(
            time: time, lane: fields[JournalField.lane] ?? "",
            condition: condition, state: fields[JournalField.state] ?? condition.rawValue,
            primary: fields[JournalField.primary] ?? "", reason: fields[JournalField.reason] ?? "", cause: cause,
            interface: fields[JournalField.interface] ?? "", generation: fields[JournalField.generation].flatMap { UInt64($0) } ?? 0)
    }
}
