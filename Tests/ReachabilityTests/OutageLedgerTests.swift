import Foundation
import Testing
@testable import Reachability

/// issue 46: the outage counters' accounting on virtual time (every instant passed explicitly),
/// their state file read back and refused when it cannot be trusted, and their exposition.
@Suite struct OutageLedgerTests {
    typealias Instant = OutageLedger.Instant

    /// `seconds` after the epoch of the test, the host having slept `slept` seconds so far.
    static func at(_ seconds: Double, slept: Double = 0) -> Instant {
        Instant(boot: UInt64(seconds * 1_000_000), suspended: UInt64(slept * 1_000_000))
    }

    @Test func offlineTimeGoesToTheCauseItHad_andAnOutageIsCountedOnce() {
        var ledger = OutageLedger()
        ledger.host(.up, at: Self.at(0))
        ledger.host(.down(.gateway), at: Self.at(10))
        // The cause moves within the outage: the time moves with it, the outage stays one.
        ledger.host(.down(.link), at: Self.at(40))
        ledger.host(.up, at: Self.at(50))
        let totals = ledger.totals(at: Self.at(1000))
        #expect(totals.offline == [.gateway: 30, .link: 10])
        #expect(totals.outages == [.gateway: 1])
        #expect(totals.unobserved.isEmpty)
    }

    /// Read while it lasts, an outage counts up to the reading, and reading changes nothing.
    @Test func anOngoingOutageIsReadUpToNow_withoutWakingAnything() {
        var ledger = OutageLedger()
        ledger.host(.down(.route), at: Self.at(5))
        #expect(ledger.totals(at: Self.at(65)).offline[.route] == 60)
        #expect(ledger.totals(at: Self.at(125)).offline[.route] == 120)
        #expect(ledger.totals.offline.isEmpty, "reading accrues nothing into the ledger")
    }

    @Test func degradationsAndUplinksAreCountedApart() {
        var ledger = OutageLedger()
        ledger.host(.degraded(.portal), at: Self.at(0))
        ledger.uplink("wlan0", down: .init(kind: .wifi, cause: .link), at: Self.at(0))
        ledger.uplink("wwan0", down: .init(kind: .cellular, cause: .radio), at: Self.at(4))
        ledger.host(.degraded(.traffic), at: Self.at(10))
        ledger.uplink("wlan0", down: nil, at: Self.at(12))
        ledger.host(.up, at: Self.at(20))
        let totals = ledger.totals(at: Self.at(30))
        #expect(totals.degraded == [.portal: 10, .traffic: 10])
        #expect(totals.uplinkDown == [.init(kind: .wifi, cause: .link): 12, .init(kind: .cellular, cause: .radio): 26])
        #expect(totals.offline.isEmpty && totals.outages.isEmpty)
    }

    /// Between logind's two signals nothing is offline: it is time asleep.
    @Test func aSuspendLogindAnnouncedIsUnobserved_notOffline() {
        var ledger = OutageLedger()
        ledger.host(.down(.link), at: Self.at(0))
        ledger.sleeping(at: Self.at(10))
        ledger.resumed(at: Self.at(70, slept: 55))
        let totals = ledger.totals(at: Self.at(80, slept: 55))
        #expect(totals.offline == [.link: 20])
        #expect(totals.unobserved == [.asleep: 60])
    }

    /// Without logind, what CLOCK_BOOTTIME gained on CLOCK_MONOTONIC is the sleep.
    @Test func aSuspendOnlyTheClocksSawIsUnobserved_too() {
        var ledger = OutageLedger()
        ledger.host(.down(.gateway), at: Self.at(0, slept: 3))
        let totals = ledger.totals(at: Self.at(100, slept: 93))
        #expect(totals.offline == [.gateway: 10])
        #expect(totals.unobserved == [.asleep: 90])
    }

    /// The two clocks are read one after the other: a microsecond between them is no sleep.
    @Test func theClocksJitterIsNoSleep() {
        var ledger = OutageLedger()
        ledger.host(.down(.gateway), at: Instant(boot: 0, suspended: 7))
        let totals = ledger.totals(at: Instant(boot: 10_000_000, suspended: 9))
        #expect(totals.offline == [.gateway: 10] && totals.unobserved.isEmpty, "\(totals)")
    }

    /// A restart carries the totals on, adds the time stopped, and an outage that went on
    /// through the restart is not counted again.
    @Test func aRestartNeitherResetsNorCountsTwice() throws {
        var before = OutageLedger()
        before.host(.down(.gateway), at: Self.at(0))
        let written = OutageLedgerFile.Saved(totals: before.totals(at: Self.at(30)), hostDown: before.hostDown, written: 1_795_000_000)
        let text = OutageLedgerFile.encode(written)
        let read = try OutageLedgerFile.decode(Array(text.utf8), now: 1_795_000_045).get()
        #expect(read == written)
        var after = OutageLedger(totals: read.totals, hostWasDown: read.hostDown)
        after.stopped(seconds: 1_795_000_045 - read.written)
        after.host(.down(.gateway), at: Self.at(500))
        after.host(.up, at: Self.at(520))
        let totals = after.totals(at: Self.at(600))
        #expect(totals.offline == [.gateway: 50])
        #expect(totals.outages == [.gateway: 1])
        #expect(totals.unobserved == [.stopped: 45])
        // Up at the write: the next outage is a new one.
        var fresh = OutageLedger(totals: totals, hostWasDown: false)
        fresh.host(.down(.gateway), at: Self.at(0))
        #expect(fresh.totals.outages == [.gateway: 2])
    }

    @Test func everyCounterSurvivesTheFile() throws {
        var totals = OutageTotals()
        totals.offline = [.dns: 1.5, .unknown: 2]
        totals.degraded = [.traffic: 3.25]
        totals.uplinkDown = [.init(kind: .vpn, cause: .route): 7, .init(kind: .wired, cause: .gateway): 0.125]
        totals.outages = [.radio: 4]
        totals.unobserved = [.asleep: 8, .stopped: 9]
        let saved = OutageLedgerFile.Saved(totals: totals, hostDown: true, written: 1_795_000_000.5)
        #expect(try OutageLedgerFile.decode(Array(OutageLedgerFile.encode(saved).utf8), now: 1_795_000_001).get() == saved)
    }

    /// A corrupt or hostile file is refused whole, with what was wrong.
    @Test(arguments: [
        ("", "its first line is '', not 'reachd outage clock 1'"),
        ("garbage\u{1b}[31m\n", #"its first line is 'garbage\x1b[31m'"#),
        ("reachd outage clock 1\n", "its second line is not 'written SECONDS'"),
        ("reachd outage clock 1\nwritten 1795999999\n", "it was written at 1795999999.0, after now"),
        ("reachd outage clock 1\nwritten 1795000000\noffline gateway -5\n", "line 3 'offline gateway -5': -5.0 seconds, negative"),
        ("reachd outage clock 1\nwritten 1795000000\noffline gateway 1e12\n", "more than have passed since 1970"),
        ("reachd outage clock 1\nwritten 1795000000\noffline gateway nan\n", "'nan' is no number of seconds"),
        ("reachd outage clock 1\nwritten 1795000000\noffline eth0 5\n", "unknown cause 'eth0'"),
        ("reachd outage clock 1\nwritten 1795000000\nuplink wifi dns 5\n", "unknown cause 'dns'"),
        ("reachd outage clock 1\nwritten 1795000000\noutages link -1\n", "'-1' is no count of outages"),
        ("reachd outage clock 1\nwritten 1795000000\noffline link 1\noffline link 2\n", "'offline link' comes twice"),
        ("reachd outage clock 1\nwritten 1795000000\nonline link 1\n", "unknown counter"),
    ])
    func aHostileFileIsRefusedNamingWhatWasWrong(text: String, expected: String) {
        switch OutageLedgerFile.decode(Array(text.utf8), now: 1_795_000_100) {
        case .success(let saved): Issue.record("accepted \(saved)")
        case .failure(let refusal): #expect(refusal.description.contains(expected), "\(refusal)")
        }
    }

    @Test func aHugeFileIsRefusedBeforeItIsRead() {
        let huge = [UInt8](repeating: 0x41, count: OutageLedgerFile.maximumBytes + 1)
        guard case let .failure(refusal) = OutageLedgerFile.decode(huge, now: 0) else {
            Issue.record("accepted")
            return
        }
        #expect(refusal.description == "16385 bytes, more than the 16384 it ever holds")
    }

    /// Every series from the start, under bounded labels; none carries an interface name.
    @Test func theExpositionShowsEveryCounterUnderClosedLabels() {
        var sample = MetricsExpositionTests.sample(interfaces: MetricsExpositionTests.typical)
        let without = MetricsExposition.render(sample)
        var totals = OutageTotals()
        totals.offline[.gateway] = 120.5
        totals.outages[.gateway] = 1
        totals.unobserved[.asleep] = 60
        totals.uplinkDown[.init(kind: .wifi, cause: .link)] = 3
        sample.outage = totals
        let text = MetricsExposition.render(sample)
        let lines = MetricsExpositionTests.lines(text)
        for expected in [
            #"reachd_offline_seconds_total{cause="gateway"} 120.5"#, #"reachd_offline_seconds_total{cause="unknown"} 0"#,
            #"reachd_outages_total{cause="gateway"} 1"#, #"reachd_unobserved_seconds_total{reason="asleep"} 60"#,
            #"reachd_unobserved_seconds_total{reason="stopped"} 0"#, #"reachd_degraded_seconds_total{cause="portal"} 0"#,
            #"reachd_uplink_down_seconds_total{kind="wifi",cause="link"} 3"#, "# TYPE reachd_offline_seconds_total counter",
        ] {
            #expect(lines.contains(expected), "missing \(expected)")
        }
        let added = text.split(separator: "\n").count - without.split(separator: "\n").count
        // 62 series, each family's HELP and TYPE.
        #expect(added == 62 + 2 * 5)
        #expect(!text.contains("eth0\",cause") && !text.contains("wlan0"))
    }
}
