import Foundation
import Testing
@testable import Reachability

/// issue 42: one time syntax. Every option that takes a span (`--timeout`, reachd.conf's
/// durations) reads systemd's time spans with `DurationText`; `--since` reads journalctl's
/// forms, its spans with the same parser; a refusal lists the forms.
@Suite
struct TimeSyntaxTests {
    static let second: UInt64 = 1_000_000
    static let now: UInt64 = 1_795_800_000 * second

    @Test(arguments: [
        ("2min", 120), ("-2min", 120), ("2min ago", 120), ("1h30s", 3630), ("-1h30s", 3630), ("1 hour ago", 3600),
        ("1h 30min ago", 5400), ("25h", 90_000), ("-2h", 7200), ("90", 90), ("2 days ago", 172_800), ("1w", 604_800),
    ])
    func sinceReadsSpansBackFromNow(text: String, seconds: UInt64) throws {
        #expect(try HistorySince.parse(text, now: Self.now) == Self.now - seconds * Self.second, "\(text)")
    }

    @Test func sinceReadsISO8601WithAndWithoutAZone() throws {
        let utc: UInt64 = 1_795_788_150 * Self.second  // 2026-11-27T14:02:30Z
        #expect(try HistorySince.parse("2026-11-27T14:02:30Z", now: Self.now) == utc)
        #expect(try HistorySince.parse("2026-11-27T14:02:30.25Z", now: Self.now) == utc)
        #expect(try HistorySince.parse("2026-11-27T14:02:30+01:00", now: Self.now) == utc - 3600 * Self.second)
        #expect(try HistorySince.parse("2026-11-27T14:02:30-0530", now: Self.now) == utc + 19_800 * Self.second)
        #expect(try HistorySince.parse("2026-11-27T14:02Z", now: Self.now) == utc - 30 * Self.second)
        #expect(try HistorySince.parse("now", now: Self.now) == Self.now)
        for bad in ["2026-11-27Z", "2026-11-27T14:02:30+25:00", "2026-11-27T14:02:30+1:00", "2026-11-27T14:02:30.Z", "+2h", "2 fortnights ago"] {
            #expect(throws: HistorySince.Refusal.self, "\(bad)") { try HistorySince.parse(bad, now: Self.now) }
        }
        #expect(throws: HistorySince.Refusal.self) { try HistorySince.parse("200y", now: Self.now) }
    }

    /// A span option past its maximum and an unknown form: the message names the value, why, and
    /// the forms (systemd's spans, not an old "ms, s or m").
    @Test func spanRefusalsListTheForms() throws {
        let long = try reachctl(["wait", "--timeout", "25h"])
        #expect(long.status == 255)
        #expect(long.stderr.contains("invalid duration '25h': it is longer than the maximum of 24 hours (24h); use a systemd time span (500ms, 2s, 1.5s, 2min, 1h30s, 1h 30min"), "\(long.stderr)")
        let negative = try reachctl(["wait", "--timeout", "-5s"])
        #expect(negative.status == 255 && negative.stderr.contains("invalid duration '-5s': durations cannot be negative"), "\(negative.stderr)")
        let since = try reachctl(["history", "--since", "soon"])
        #expect(since.status == 255 && since.stderr.contains("invalid --since 'soon'") && since.stderr.contains("'1 hour ago'")
            && since.stderr.contains("ISO 8601"), "\(since.stderr)")
        let apart = try reachctl(["history", "--since", "-2x"])
        #expect(apart.status == 255 && apart.stderr.contains("invalid --since '-2x'") && !apart.stderr.contains("Missing value"), "\(apart.stderr)")
    }
}

/// The same forms on a real command line, against a reachd that holds a history.
@Suite(rootOnly)
struct TimeSyntaxDaemonTests {
    @Test func sinceAndTimeoutTakeEveryFormOnTheCommandLine() async throws {
        let ns = try ReachctlDaemonTests.scenario()
        let fixture = try ReachdFixture(namespace: ns)
        let journal = try makeScratchDirectory("since-journal")
        defer { removeTree(journal) }
        let source = ["--bus-address", fixture.address, "--daemon", "--journal-directory", journal]
        for since in [["--since", "-2h"], ["--since=-2h"], ["--since", "2min"], ["--since", "1 hour ago"], ["--since", "yesterday"],
                      ["--since", "today"], ["--since", "2026-11-27T14:02:30Z"], ["--since", "1h30s"]] {
            let result = try reachctl(["history", "--json"] + since + source)
            #expect(result.status == 0, "\(since): \(result.stderr)")
            #expect(try result.json()["intervals"] != nil, "\(since): \(result.stdout)")
        }
        let wait = try reachctl(["wait", "--timeout", "1h30s", "--bus-address", fixture.address, "--daemon"])
        #expect(wait.status == 0 && wait.stdout.hasPrefix("online via up0"), "\(wait)")
        let check = try reachctl(["check", "192.0.2.1", "--timeout", "1.5s", "--bus-address", fixture.address, "--daemon"])
        #expect(check.status == 0, "\(check)")
    }
}
