import Testing
@testable import Reachability

/// `[Stall]` in reachd.conf: the switch and the thresholds, refusals that name the value, and
/// what the core is given.
struct StallConfigurationTests {
    @Test func defaultsReachTheCore() {
        let configuration = Configuration.default
        #expect(configuration.stallDetection)
        #expect(configuration.stall == StallSettings())
        var core = CoreConfiguration()
        configuration.apply(to: &core)
        #expect(core.stall == StallSettings())
        #expect(StallSettings().window == .seconds(8) && StallSettings().minimumSockets == 2)
        #expect(StallSettings().dnsTimeouts == 5 && StallSettings().pollInterval == .seconds(20))
        #expect(StallSettings().maximumPollInterval == StallSettings().pollInterval * Configuration.stallBackOffFactor)
    }

    @Test func everyKeyIsReadAndWrittenBack() throws {
        var configuration = Configuration.default
        let text = "[Stall]\nDetect=yes\nAfter=15s\nMinSockets=3\nDNSTimeouts=0\nInterval=5s\n"
        #expect(Configuration.parse(text, file: "t.conf", into: &configuration) == [])
        #expect(configuration.stall.window == .seconds(15))
        #expect(configuration.stall.minimumSockets == 3)
        #expect(configuration.stall.dnsTimeouts == 0)
        #expect(configuration.stall.pollInterval == .seconds(5))
        #expect(configuration.stall.maximumPollInterval == .seconds(40))
        var again = Configuration.default
        #expect(Configuration.parse(configuration.mergedText, file: "merged", into: &again) == [])
        #expect(again.stall == configuration.stall)
        #expect(configuration.mergedText.contains("[Stall]\nDetect=yes\nAfter=15s\nMinSockets=3\nDNSTimeouts=0\nInterval=5s\n"))
    }

    /// The thresholds of the delta rule before 2026-11: an older reachd.conf still loads, and says
    /// what no longer counts.
    @Test func theOldThresholdsLoadWithAWarning() {
        var configuration = Configuration.default
        let errors = Configuration.parse("[Stall]\nMinSegments=20\nRetransmitPercent=90%\n", file: "t.conf", into: &configuration)
        #expect(errors == [])
        #expect(configuration.stall == StallSettings())
        #expect(configuration.warnings.map(\.description) == [
            "t.conf:2: [Stall] MinSegments: no longer used and ignored: stall detection judges each socket's own state; see After= and MinSockets= in reachd.conf(5)",
            "t.conf:3: [Stall] RetransmitPercent: no longer used and ignored: stall detection judges each socket's own state; see After= and MinSockets= in reachd.conf(5)",
        ])
    }

    @Test func detectNoTurnsItOffInTheCore() {
        var configuration = Configuration.default
        #expect(Configuration.parse("[Stall]\nDetect=no\n", file: "t.conf", into: &configuration) == [])
        var core = CoreConfiguration()
        configuration.apply(to: &core)
        #expect(core.stall == nil)
    }

    @Test(arguments: [
        ("Detect=maybe", "t.conf:2: [Stall] Detect: invalid boolean 'maybe'; expected yes, no, true, false, on, off, 1 or 0"),
        ("MinSockets=0", "t.conf:2: [Stall] MinSockets: number 0 is out of range; expected a whole number from 1 to 1000"),
        ("After=1s", "t.conf:2: [Stall] After: duration '1s' is out of range: must be from 2s to 10m"),
        ("After=lots", "t.conf:2: [Stall] After: invalid duration 'lots': it is not a duration; use a systemd time span (500ms, 2s, 1.5s, 2min, 1h30s, 1h 30min; units us, ms, s, min, h, d, w) or a bare number of seconds"),
        ("DNSTimeouts=-1", "t.conf:2: [Stall] DNSTimeouts: invalid number '-1'; expected a whole number from 0 to 1000"),
        ("Interval=500ms", "t.conf:2: [Stall] Interval: duration '500ms' is out of range: must be from 1s to 60m"),
        ("Threshold=3", "t.conf:2: [Stall] Threshold: unknown key; valid keys are Detect, After, MinSockets, DNSTimeouts, Interval"),
    ])
    func badValuesAreNamedWithFileAndLine(line: String, message: String) {
        var configuration = Configuration.default
        let errors = Configuration.parse("[Stall]\n\(line)\n", file: "t.conf", into: &configuration)
        #expect(errors.map(\.description) == [message])
    }
}
