#if canImport(Glibc)
import Glibc
#endif

/// `reachctl history`'s three forms of a `HistoryTimeline`: a table with a summary line, JSON,
/// and a self-contained SVG timeline (one lane for the host, one per uplink, as
/// `systemd-analyze plot` draws units). Pure: the timeline in, text out.
package enum HistoryOutput {
    /// Each cause's colour in the SVG, in the layers' order; a degradation is drawn lighter.
    package static let colours: [Explanation.LayerName: String] = [
        .radio: "#8e44ad", .link: "#c0392b", .address: "#d35400", .gateway: "#e67e22",
        .route: "#b7950b", .firewall: "#943126", .dns: "#2e86c1", .traffic: "#16a085", .portal: "#7f8c8d",
    ]
    /// A cause that is not known (an older record): grey-brown.
    package static let unknownColour = "#6e5a4b"
    /// Time nobody watched (asleep, reachd stopped): pale grey, neither an outage's colour nor online's.
    package static let unobservedColour = "#95a5a6"

    package static func timestamp(_ usec: UInt64, utc: Bool = false) -> String {
        let stamp = Timestamp(seconds: Int(usec / 1_000_000), milliseconds: Int(usec % 1_000_000 / 1000))
        return utc ? stamp.utc : stamp.local
    }

    /// `4.25s`, `12m 3s`, `2h 5m`, `3d 4h`: to the hundredth of a second below a minute.
    package static func duration(_ usec: UInt64) -> String {
        let seconds = usec / 1_000_000
        if seconds < 60 {
            let hundredths = usec / 10_000 % 100
            return hundredths == 0 ? "\(seconds)s" : "\(seconds).\(hundredths < 10 ? "0" : "")\(hundredths)s"
        }
        let (days, hours, minutes) = (seconds / 86_400, seconds / 3600 % 24, seconds / 60 % 60)
        if days > 0 { return "\(days)d \(hours)h" }
        if hours > 0 { return "\(hours)h \(minutes)m" }
        return "\(minutes)m \(seconds % 60)s"
    }

    package static func laneName(_ lane: String) -> String { lane.isEmpty ? "host" : lane }
    /// `outage`, `degradation`, or for time nobody watched its reason: `asleep` or `stopped`.
    package static func kind(_ interval: HistoryTimeline.Interval) -> String {
        switch interval.condition {
        case .down: "outage"
        case .degraded: "degradation"
        case .unobserved: interval.reason == HistoryRecord.Condition.stopped ? "stopped" : "asleep"
        case .up: "up"
        }
    }

    /// The summary line: the host's outages in the period.
    package static func summary(_ timeline: HistoryTimeline) -> String {
        let count = timeline.outageCount
        var text = "host: \(count) outage\(count == 1 ? "" : "s")"
        if count > 0 {
            text += ", \(duration(timeline.totalOffline)) offline in total, longest \(duration(timeline.longestOutage))"
        }
        let degraded = timeline.degradationCount
        if degraded > 0 { text += "; \(degraded) degradation\(degraded == 1 ? "" : "s")" }
        // Apart from the outages: time asleep or with reachd stopped was not offline.
        let asleep = timeline.totalUnobserved(HistoryRecord.Condition.asleep)
        let stopped = timeline.totalUnobserved(HistoryRecord.Condition.stopped)
        if asleep > 0 { text += "; \(duration(asleep)) asleep" }
        if stopped > 0 { text += "; \(duration(stopped)) with reachd stopped" }
        return text + " since \(timestamp(timeline.since))"
    }

    /// One line per interval, oldest first, then the summary.
    package static func text(_ timeline: HistoryTimeline) -> String {
        var rows = [["START", "END", "DURATION", "LANE", "KIND", "CAUSE", "REASON", "INTERFACE"]]
        for interval in timeline.intervals {
            rows.append([
                timestamp(interval.start), interval.end.map { timestamp($0) } ?? "ongoing", duration(interval.duration(now: timeline.now)),
                laneName(interval.lane), kind(interval), interval.cause?.rawValue ?? "-",
                interval.reason.isEmpty ? "-" : interval.reason, interval.interface.isEmpty ? "-" : interval.interface,
            ])
        }
        var lines: [String] = []
        if timeline.intervals.isEmpty {
            lines.append("no outage or degradation recorded")
        } else {
            let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                let cells = row.enumerated().map { column, cell in
                    column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
                }
                lines.append(cells.joined(separator: "  ").escapingControlCharacters())
            }
        }
        lines.append(summary(timeline))
        return lines.joined(separator: "\n")
    }

    /// `source`: where the records came from ("reachd", "journal", "reachd+journal").
    package static func json(_ timeline: HistoryTimeline, source: String) -> JSONValue {
        let intervals: [JSONValue] = timeline.intervals.map { interval in
            .object([
                ("lane", .string(laneName(interval.lane))), ("scope", .string(interval.lane.isEmpty ? "host" : "uplink")),
                ("kind", .string(kind(interval))),
                ("start", .string(timestamp(interval.start, utc: true))), ("startUSec", .uint(interval.start)),
                ("end", interval.end.map { .string(timestamp($0, utc: true)) } ?? .null), ("endUSec", interval.end.map { .uint($0) } ?? .null),
                ("durationUSec", .uint(interval.duration(now: timeline.now))), ("ongoing", .bool(interval.end == nil)),
                ("cause", interval.cause.map { .string($0.rawValue) } ?? .null), ("reason", .string(interval.reason)),
                ("interface", .string(interval.interface)), ("state", .string(interval.state)),
            ])
        }
        return .object([
            ("since", .string(timestamp(timeline.since, utc: true))), ("sinceUSec", .uint(timeline.since)),
            ("now", .string(timestamp(timeline.now, utc: true))), ("nowUSec", .uint(timeline.now)),
            ("source", .string(source)), ("intervals", .array(intervals)),
            ("summary", .object([
                ("outages", .uint(UInt64(timeline.outageCount))), ("offlineUSec", .uint(timeline.totalOffline)),
                ("longestUSec", .uint(timeline.longestOutage)), ("degradations", .uint(UInt64(timeline.degradationCount))),
                ("asleepUSec", .uint(timeline.totalUnobserved(HistoryRecord.Condition.asleep))),
                ("stoppedUSec", .uint(timeline.totalUnobserved(HistoryRecord.Condition.stopped))),
            ])),
        ])
    }

    /// XML text: & < > " escaped, control characters (which XML 1.0 forbids) dropped.
    package static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: continue
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The timeline as one SVG document: a time axis over the period, a lane per answer, each
    /// interval a bar coloured by its cause (lighter for a degradation) with its details in a
    /// `<title>` tooltip, the summary, and a legend of the causes.
    package static func svg(_ timeline: HistoryTimeline) -> String {
        let (left, width, laneHeight, top) = (140.0, 900.0, 28.0, 60.0)
        let lanes = timeline.lanes
        // The period's length in integers (a Double of two instants near 2^53 may round them
        // equal); an instant before it is drawn at its left edge.
        let span = max(timeline.now, timeline.since + 1) - timeline.since
        func x(_ usec: UInt64) -> Double { left + Double(usec > timeline.since ? usec - timeline.since : 0) / Double(span) * width }
        func number(_ value: Double) -> String {
            let tenths = Int((value * 10).rounded())
            return tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(abs(tenths % 10))"
        }
        let legendTop = top + Double(lanes.count) * laneHeight + 40
        let height = legendTop + 60
        var svg = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(number(left + width + 20))" height="\(number(height))" \
            font-family="sans-serif" font-size="12">
            <title>reachd history: outages and degradations</title>
            <rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>
            <text x="10" y="20" font-size="14" font-weight="bold">\(escaped(summary(timeline)))</text>

            """
        // Ticks: ten steps over the period, each with its local time.
        for step in 0...10 {
            let usec = timeline.since + span / 10 * UInt64(step)
            let tickX = x(usec)
            svg += "<line x1=\"\(number(tickX))\" y1=\"\(number(top - 8))\" x2=\"\(number(tickX))\" y2=\"\(number(top + Double(lanes.count) * laneHeight))\" stroke=\"#dddddd\"/>\n"
            if step % 2 == 0 {
                let label = String(timestamp(usec).dropFirst(11).prefix(8))
                svg += "<text x=\"\(number(tickX))\" y=\"\(number(top - 12))\" text-anchor=\"middle\" fill=\"#555555\">\(escaped(label))</text>\n"
            }
        }
        for (row, lane) in lanes.enumerated() {
            let y = top + Double(row) * laneHeight
            svg += "<text x=\"10\" y=\"\(number(y + 18))\" class=\"lane\">\(escaped(laneName(lane)))</text>\n"
            svg += "<rect x=\"\(number(left))\" y=\"\(number(y + 4))\" width=\"\(number(width))\" height=\"\(number(laneHeight - 8))\" fill=\"#e8f6e8\"/>\n"
            for interval in timeline.intervals where interval.lane == lane {
                let barStart = x(max(interval.start, timeline.since))
                let barEnd = x(interval.end ?? timeline.now)
                let unobserved = interval.condition == .unobserved
                let colour = unobserved ? unobservedColour : interval.cause.flatMap { colours[$0] } ?? unknownColour
                let what = unobserved ? "not watched" : interval.cause?.rawValue ?? "unknown cause"
                let tip = "\(laneName(lane)) \(kind(interval)): \(what)"
                    + (interval.reason.isEmpty ? "" : " (\(interval.reason))") + (interval.interface.isEmpty ? "" : " on \(interval.interface)")
                    + ", \(timestamp(interval.start)) to \(interval.end.map { timestamp($0) } ?? "now"), \(duration(interval.duration(now: timeline.now)))"
                svg += "<rect class=\"\(kind(interval))\" data-lane=\"\(escaped(laneName(lane)))\" data-cause=\"\(interval.cause?.rawValue ?? "")\" "
                    + "data-start-usec=\"\(interval.start)\" data-duration-usec=\"\(interval.duration(now: timeline.now))\" "
                    + "x=\"\(number(barStart))\" y=\"\(number(y + 4))\" width=\"\(number(max(barEnd - barStart, 2)))\" height=\"\(number(laneHeight - 8))\" "
                    + "fill=\"\(colour)\" fill-opacity=\"\(interval.condition == .down || unobserved ? "1" : "0.45")\"><title>\(escaped(tip))</title></rect>\n"
            }
        }
        // The legend: every cause, whether or not it appears, so colours read the same in every plot.
        for (column, layer) in Explanation.hostLayers.enumerated() {
            let legendX = left + Double(column) * 110
            svg += "<rect x=\"\(number(legendX))\" y=\"\(number(legendTop))\" width=\"14\" height=\"14\" fill=\"\(colours[layer] ?? unknownColour)\"/>"
            svg += "<text x=\"\(number(legendX + 20))\" y=\"\(number(legendTop + 12))\">\(layer.rawValue)</text>\n"
        }
        svg += "<text x=\"10\" y=\"\(number(legendTop + 12))\">cause</text>\n"
        svg += "<text x=\"\(number(left))\" y=\"\(number(legendTop + 40))\" fill=\"#555555\">solid: outage; pale: degradation (online, but stalled or behind a portal); grey: asleep or reachd stopped (not watched, not offline)</text>\n"
        svg += "</svg>\n"
        return svg
    }
}
