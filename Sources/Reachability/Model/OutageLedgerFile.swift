import ReachabilitySystem  // String.inertExcerpt

/// The outage counters as reachd keeps them across restarts: a few lines of text, one counter a
/// line, written whole and read whole. Pure: text in, totals out (or what was wrong with it).
///
///     reachd outage clock 1
///     written 1795000000.25
///     host down gateway
///     offline gateway 120.5
///     degraded portal 3
///     uplink wifi link 30
///     outages gateway 2
///     unobserved stopped 5
///
/// The reader trusts nothing in it: the file may be truncated by a crash, edited by hand, or
/// written by someone else. Anything it cannot account for refuses the whole file.
package enum OutageLedgerFile {
    package static let header = "reachd outage clock 1"
    /// Far more than the file ever holds (about 70 lines of 40 bytes).
    package static let maximumBytes = 16_384
    /// How far ahead of the clock the file's own time may be (a clock stepped back a little by
    /// NTP after the write): more is a file from the future, refused.
    package static let futureSlack = 300.0
    /// More outages than a host could have since the epoch at one a second.
    package static let maximumCount: UInt64 = 1 << 40

    /// What a file held: the totals, the host's answer at the write, and when it was written
    /// (seconds since the Unix epoch).
    package struct Saved: Hashable, Sendable {
        package var totals: OutageTotals
        package var hostDown: Bool
        package var written: Double
        package init(totals: OutageTotals, hostDown: Bool, written: Double) {
            self.totals = totals
            self.hostDown = hostDown
            self.written = written
        }
    }

    /// Why a file was refused, naming what was wrong.
    package struct Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        package var description: String
        package init(_ description: String) { self.description = description }
    }

    package static func encode(_ saved: Saved) -> String {
        var lines = [header, "written \(saved.written)", saved.hostDown ? "host down" : "host up"]
        let totals = saved.totals
        for cause in OutageCause.allCases {
            if let seconds = totals.offline[cause] { lines.append("offline \(cause.rawValue) \(seconds)") }
            if let seconds = totals.degraded[cause] { lines.append("degraded \(cause.rawValue) \(seconds)") }
            if let count = totals.outages[cause] { lines.append("outages \(cause.rawValue) \(count)") }
        }
        for kind in InterfaceKind.allCases {
            for cause in OutageCause.uplinkCauses {
                if let seconds = totals.uplinkDown[.init(kind: kind, cause: cause)] {
                    lines.append("uplink \(kind.rawValue) \(cause.rawValue) \(seconds)")
                }
            }
        }
        for reason in UnobservedReason.allCases {
            if let seconds = totals.unobserved[reason] { lines.append("unobserved \(reason.rawValue) \(seconds)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The file's totals, or why they cannot be trusted. `now`: seconds since the Unix epoch.
    package static func decode(_ bytes: [UInt8], now: Double) -> Result<Saved, Refusal> {
        guard bytes.count <= maximumBytes else { return .failure(Refusal("\(bytes.count) bytes, more than the \(maximumBytes) it ever holds")) }
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(Refusal("not UTF-8 text")) }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        guard lines.first == header else {
            return .failure(Refusal("its first line is \((lines.first ?? "").inertExcerpt(limit: 60)), not '\(header)'"))
        }
        guard lines.count > 1, let written = number(after: "written ", in: lines[1]) else {
            return .failure(Refusal("its second line is not 'written SECONDS'"))
        }
        guard written <= now + futureSlack else { return .failure(Refusal("it was written at \(written), after now (\(now))")) }
        var saved = Saved(totals: OutageTotals(), hostDown: false, written: written)
        var seen: Set<String> = []
        for (index, line) in lines.enumerated().dropFirst(2) {
            do {
                let key = try read(line, into: &saved, limit: written)
                guard seen.insert(key).inserted else { throw Refusal("'\(key)' comes twice") }
            } catch {
                return .failure(Refusal("line \(index + 1) \(line.inertExcerpt(limit: 60)): \(error)"))
            }
        }
        return .success(saved)
    }

    /// One counter's line into `saved`; returns its key (the line without its value).
    private static func read(_ line: String, into saved: inout Saved, limit: Double) throws(Refusal) -> String {
        let words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        if words == ["host", "down"] || words == ["host", "up"] {
            saved.hostDown = words[1] == "down"
            return "host"
        }
        guard let value = words.last, words.count >= 3 else { throw Refusal("not 'NAME LABEL... VALUE'") }
        let key = words.dropLast().joined(separator: " ")
        func cause(_ word: String, in allowed: [OutageCause] = OutageCause.allCases) throws(Refusal) -> OutageCause {
            guard let cause = OutageCause(rawValue: word), allowed.contains(cause) else { throw Refusal("unknown cause \(word.inertExcerpt(limit: 30))") }
            return cause
        }
        switch (words[0], words.count) {
        case ("outages", 3):
            guard let count = UInt64(value), count <= maximumCount else { throw Refusal("\(value.inertExcerpt(limit: 30)) is no count of outages") }
            saved.totals.outages[try cause(words[1])] = count
        case ("offline", 3): saved.totals.offline[try cause(words[1])] = try seconds(value, limit: limit)
        case ("degraded", 3): saved.totals.degraded[try cause(words[1], in: OutageCause.degradations)] = try seconds(value, limit: limit)
        case ("unobserved", 3):
            guard let reason = UnobservedReason(rawValue: words[1]) else { throw Refusal("unknown reason \(words[1].inertExcerpt(limit: 30))") }
            saved.totals.unobserved[reason] = try seconds(value, limit: limit)
        case ("uplink", 4):
            guard let kind = InterfaceKind(rawValue: words[1]) else { throw Refusal("unknown kind \(words[1].inertExcerpt(limit: 30))") }
            saved.totals.uplinkDown[.init(kind: kind, cause: try cause(words[2], in: OutageCause.uplinkCauses))] = try seconds(value, limit: limit)
        default: throw Refusal("unknown counter")
        }
        return key
    }

    /// A count of seconds: finite, not negative, and no more than have passed since the epoch.
    private static func seconds(_ word: String, limit: Double) throws(Refusal) -> Double {
        guard let value = Double(word), value.isFinite else { throw Refusal("\(word.inertExcerpt(limit: 30)) is no number of seconds") }
        guard value >= 0 else { throw Refusal("\(value) seconds, negative") }
        guard value <= max(limit, 0) else { throw Refusal("\(value) seconds, more than have passed since 1970") }
        return value
    }

    private static func number(after prefix: String, in line: String) -> Double? {
        guard line.hasPrefix(prefix), let value = Double(line.dropFirst(prefix.count)), value.isFinite, value >= 0 else { return nil }
        return value
    }
}
