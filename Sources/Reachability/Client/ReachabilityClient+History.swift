extension ReachabilityClient {
    /// reachd's recorded changes of answers since `since` (wall-clock microseconds; each lane's
    /// last record before it too), and how far back reachd's memory of the host reaches (its
    /// oldest kept record; 0 when it holds none). `reachctl history`.
    package func history(since: UInt64) throws(BusError) -> (oldest: UInt64, records: [HistoryRecord]) {
        let reply = try call("GetHistory") { message throws(BusError) in try message.append(since) }
        let message = reply.message
        return try withExtendedLifetime(reply) { () throws(BusError) -> (oldest: UInt64, records: [HistoryRecord]) in
            let oldest = try message.readUInt64()
            var records: [HistoryRecord] = []
            guard try message.enter("a", "(tssssssst)") else { throw Self.badReply("GetHistory", "expected a(tssssssst)") }
            while try message.enter("r", "tssssssst") {
                let time = try message.readUInt64()
                let lane = try message.readString()
                let condition = try message.readString()
                let state = try message.readString()
                let primary = try message.readString()
                let reason = try message.readString()
                let cause = try message.readString()
                let interface = try message.readString()
                let generation = try message.readUInt64()
                try message.exit()
                // A condition this reachctl does not know (a newer reachd's) is left out, not guessed.
                guard let known = HistoryRecord.Condition(rawValue: condition) else { continue }
                records.append(HistoryRecord(
                    time: time, lane: lane, condition: known, state: state, primary: primary, reason: reason,
                    cause: Explanation.LayerName(rawValue: cause), interface: interface, generation: generation))
            }
            try message.exit()
            return (oldest, records)
        }
    }
}
