import Testing
@testable import Reachability

/// `[Stall]` in reachd.conf: the switch and the thresholds, refusals that name the value, and
/// what the core is given.
struct StallConfigurationTests {
    @Test func defaultsAreAndroidsAndReachTheCore() {
        let configuration = Configuration.default
        #expect(configuration.stallDetection)
        #expect(configuration.stall == StallSettings())
        var core = CoreConfiguration()
        configuration.apply(to: &core)
        #expect(core.stall == StallSettings())
        #expect(StallSettings().minimumSegmentsSent == 10 && StallSettings().retransmittedPercent == 80)
        #expect(StallSettings().dnsTimeouts == 5 && StallSettings().pollInterval == .seconds(20))
        #expect(StallSettings().maximumPollInterval == StallSettings().pollInterval * Configuration.stallBackOffFactor)
    }

    @Test func everyKeyIsReadAndWrittenBack() throws {
        var configuration = Configuration.default
        let text = "[Stall]\nDetect=yes\nMinSegments=20\nRetransmitPercent=90%\nDNSTimeouts=0\nInterval=5s\n"
        #expect(Configuration.parse(text, file: "t.conf", into: &configuration) == [])
        #expect(configuration.stall.minimumSegmentsSent == 20)
        #expect(configuration.stall.retransmittedPercent == 90)
        #expect(configuration.stall.dnsTimeouts == 0)
        #expect(configuration.stall.pollInterval == .seconds(5))
        #expect(configuration.stall.maximumPollInterval == .seconds(40))
        var again = Configuration.default
        #expect(Configuration.parse(configuration.mergedText, file: "merged", into: &again) == [])
        #expect(again.stall == configuration.stall)
        #expect(configuration.mergedText.contains("[Stall]\nDetect=yes\nMinSegments=20\nRetransmitPercent=90\nDNSTimeouts=0\nInterval=5s\n"))
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
        ("MinSegments=1", "t.conf:2: [Stall] MinSegments: number 1 is out of range; expected a whole number from 2 to 100000"),
        ("RetransmitPercent=120", "t.conf:2: [Stall] RetransmitPercent: number 120 is out of range; expected a whole number from 1 to 100"),
        ("RetransmitPercent=lots", "t.conf:2: [Stall] RetransmitPercent: invalid number 'lots'; expected a whole number from 1 to 100"),
        ("DNSTimeouts=-1", "t.conf:2: [Stall] DNSTimeouts: invalid number '-1'; expected a whole number from 0 to 1000"),
        ("Interval=500ms", "t.conf:2: [Stall] Interval: duration '500ms' is out of range: must be from 1s to 60m"),
        ("Threshold=3", "t.conf:2: [Stall] Threshold: unknown key; valid keys are Detect, MinSegments, RetransmitPercent, DNSTimeouts, Interval"),
    ])
    func badValuesAreNamedWithFileAndLine(line: String, message: String) {
        var configuration = Configuration.default
        let errors = Configuration.parse("[Stall]\n\(line)\n", file: "t.conf", into: &configuration)
        #expect(errors.map(\.description) == [message])
    }
}
