/// Order statistics of a set of durations, in nanoseconds.
struct Summary: Sendable {
    var count: Int
    var median: UInt64
    /// Nearest-rank 99th percentile: with fewer than 100 samples this is the maximum.
    var p99: UInt64
    var min: UInt64
    var max: UInt64
    var mean: UInt64

    init(_ samples: [UInt64]) {
        precondition(!samples.isEmpty, "a summary needs samples")
        let sorted = samples.sorted()
        count = sorted.count
        median = sorted.count % 2 == 1
            ? sorted[sorted.count / 2]
            : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        let rank = (99 * sorted.count + 99) / 100  // ceil(0.99 n)
        p99 = sorted[Swift.max(rank, 1) - 1]
        min = sorted[0]
        max = sorted[sorted.count - 1]
        mean = sorted.reduce(0, +) / UInt64(sorted.count)
    }
}

/// Formatting for the table.
enum Format {
    /// Nanoseconds as microseconds with one decimal ("123.4").
    static func microseconds(_ nanoseconds: UInt64) -> String {
        let tenths = (nanoseconds + 50) / 100
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// Nanoseconds as milliseconds with two decimals ("12.34").
    static func milliseconds(_ nanoseconds: UInt64) -> String {
        let hundredths = (nanoseconds + 5_000) / 10_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// KiB as MiB with one decimal.
    static func mebibytes(_ kibibytes: Int) -> String {
        let sign = kibibytes < 0 ? "-" : ""
        let tenths = (abs(kibibytes) * 10 + 512) / 1024
        return "\(sign)\(tenths / 10).\(tenths % 10)"
    }

    static func pad(_ text: String, _ width: Int, right: Bool = true) -> String {
        let fill = String(repeating: " ", count: Swift.max(0, width - text.count))
        return right ? fill + text : text + fill
    }

    /// A table with a header row; the first `leftColumns` columns align left, the rest right.
    static func table(_ header: [String], _ rows: [[String]], leftColumns: Int = 1) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = Swift.max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in pad(cell, widths[i], right: i >= leftColumns) }
                .joined(separator: "  ")
        }
        var lines = ["  " + line(header)]
        lines.append("  " + widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        for row in rows { lines.append("  " + line(row)) }
        return lines.joined(separator: "\n")
    }
}
