import Testing
@testable import Reachability

/// The pure stall evaluator with hand-made samples: each boundary of Android's rule, attribution,
/// DNS evidence and the poll interval. Time is virtual (a Duration per poll).
@Suite struct StallEvaluatorTests {
    static let wired: Int32 = 2
    static let wifi: Int32 = 3
    static let addresses = [
        Address(interfaceIndex: 1, prefix: IPPrefix(IPAddress("127.0.0.1")!, length: 8)),
        Address(interfaceIndex: wired, prefix: IPPrefix(IPAddress("192.0.2.2")!, length: 24)),
        Address(interfaceIndex: wired, prefix: IPPrefix(IPAddress("2001:db8:1::2")!, length: 64)),
        Address(interfaceIndex: wifi, prefix: IPPrefix(IPAddress("198.51.100.9")!, length: 24)),
    ]
    static let peer = IPAddress("203.0.113.7")!

    static func socket(
        _ cookie: UInt64, out: UInt32, in received: UInt32, retransmitted: UInt32, from source: String = "192.0.2.2",
        to destination: IPAddress = peer, interface: Int32 = 0
    ) -> TCPSocketSample {
        TCPSocketSample(
            cookie: cookie, source: IPAddress(source)!, destination: destination, boundInterface: interface,
            counters: TCPCounters(segmentsOut: out, segmentsIn: received, totalRetransmits: retransmitted))
    }

    /// Polls at 0 s, 20 s, 40 s... with the given samples, returning every report.
    static func run(_ polls: [[TCPSocketSample]], settings: StallSettings = StallSettings(), dns: [Int32: Int] = [:]) -> [StallReport] {
        var evaluator = StallEvaluator(settings: settings)
        return polls.enumerated().map { index, samples in
            evaluator.poll(at: .seconds(20 * index), samples: samples, addresses: addresses, dnsTimeouts: dns)
        }
    }

    @Test func firstPollIsABaselineNeverAVerdict() {
        let reports = Self.run([[Self.socket(1, out: 1000, in: 0, retransmitted: 1000)]])
        #expect(reports[0].link(Self.wired).verdict == .noEvidence)
        #expect(reports[0].link(Self.wired).evidence.socketsJudged == 1)
    }

    @Test func tenSegmentsAllRetransmittedNothingReceivedIsAStall() {
        let reports = Self.run([
            [Self.socket(1, out: 100, in: 50, retransmitted: 0)],
            [Self.socket(1, out: 110, in: 50, retransmitted: 10)],
        ])
        let link = reports[1].link(Self.wired)
        #expect(link.verdict == .stalled)
        #expect(link.causes == .tcpRetransmissions)
        #expect(link.evidence.segmentsSentSinceReceive == 10)
        #expect(link.evidence.retransmittedPercent == 100)
        #expect(link.evidence.sinceReceive == .seconds(20), "nothing seen since the link was first judged")
        #expect(reports[1].stalledLinks == [Self.wired])
    }

    @Test func nineSegmentsAreTooFewToJudge() {
        let reports = Self.run([
            [Self.socket(1, out: 100, in: 50, retransmitted: 0)],
            [Self.socket(1, out: 109, in: 50, retransmitted: 9)],
        ])
        #expect(reports[1].link(Self.wired).verdict == .flowing)
    }

    @Test func eightyPercentRetransmittedIsAStallSeventyNineIsNot() {
        let stalled = Self.run([
            [Self.socket(1, out: 0, in: 5, retransmitted: 0)],
            [Self.socket(1, out: 100, in: 5, retransmitted: 80)],
        ])
        #expect(stalled[1].link(Self.wired).verdict == .stalled)
        let healthy = Self.run([
            [Self.socket(1, out: 0, in: 5, retransmitted: 0)],
            [Self.socket(1, out: 100, in: 5, retransmitted: 79)],
        ])
        #expect(healthy[1].link(Self.wired).verdict == .flowing)
        #expect(healthy[1].link(Self.wired).evidence.retransmittedPercent == 79)
    }

    @Test func theLastPollsShareFlagsAfterFreshSegmentsWentFirst() {
        // What a dead uplink looks like: the data in flight goes out fresh, then only
        // retransmissions follow. Since the receive: 12 sent, 4 retransmitted (33%); this poll: 100%.
        let reports = Self.run([
            [Self.socket(1, out: 0, in: 5, retransmitted: 0)],
            [Self.socket(1, out: 8, in: 5, retransmitted: 0)],
            [Self.socket(1, out: 12, in: 5, retransmitted: 4)],
        ])
        #expect(reports[1].link(Self.wired).verdict == .flowing)
        let link = reports[2].link(Self.wired)
        #expect(link.isStalled)
        #expect(link.evidence.retransmittedPercent == 33)
        #expect(link.evidence.sentThisPoll == 4 && link.evidence.retransmittedThisPoll == 4)
    }

    @Test func aStallStaysUntilSomethingIsReceived() {
        let reports = Self.run([
            [Self.socket(1, out: 0, in: 5, retransmitted: 0)],
            [Self.socket(1, out: 10, in: 5, retransmitted: 10)],
            [Self.socket(1, out: 30, in: 5, retransmitted: 10)],  // 20 fresh segments, nothing back
            [Self.socket(1, out: 31, in: 6, retransmitted: 10)],
        ])
        #expect(reports[1].link(Self.wired).isStalled)
        #expect(reports[2].link(Self.wired).isStalled)
        #expect(reports[2].link(Self.wired).evidence.retransmittedPercent == 33)
        #expect(reports[3].link(Self.wired).verdict == .flowing)
    }

    @Test func oneSegmentReceivedClearsAtTheNextPoll() {
        let reports = Self.run([
            [Self.socket(1, out: 0, in: 5, retransmitted: 0)],
            [Self.socket(1, out: 20, in: 5, retransmitted: 20)],
            [Self.socket(1, out: 40, in: 6, retransmitted: 40)],
        ])
        #expect(reports[1].link(Self.wired).isStalled)
        let cleared = reports[2].link(Self.wired)
        #expect(cleared.verdict == .flowing)
        #expect(cleared.evidence.segmentsSentSinceReceive == 0)
        #expect(cleared.evidence.sinceReceive == .zero)
    }

    @Test func sentSinceReceiveAccumulatesAcrossPollsAndStaysThroughQuietBackOff() {
        let reports = Self.run([
            [Self.socket(1, out: 0, in: 5, retransmitted: 0)],
            [Self.socket(1, out: 6, in: 5, retransmitted: 5)],  // 6 sent: too few yet
            [Self.socket(1, out: 12, in: 5, retransmitted: 11)],  // 12 since the receive, 11 retransmitted
            [Self.socket(1, out: 12, in: 5, retransmitted: 11)],  // exponential back-off: nothing sent
        ])
        #expect(reports[1].link(Self.wired).verdict == .flowing)
        #expect(reports[2].link(Self.wired).isStalled)
        #expect(reports[2].link(Self.wired).evidence.segmentsSentSinceReceive == 12)
        #expect(reports[3].link(Self.wired).isStalled, "a quiet poll in back-off does not clear a stall")
        #expect(reports[3].link(Self.wired).evidence.sinceReceive == .seconds(60))
    }

    @Test func newSocketsCountFromZeroAndDeltasSumOverTheLink() {
        // Two SYN_SENT sockets that appeared since the last poll: 1 SYN and 5 retries each.
        let reports = Self.run([
            [Self.socket(1, out: 10, in: 10, retransmitted: 0)],
            [
                Self.socket(1, out: 10, in: 10, retransmitted: 0),
                Self.socket(2, out: 6, in: 0, retransmitted: 5),
                Self.socket(3, out: 6, in: 0, retransmitted: 5, from: "2001:db8:1::2"),
            ],
        ])
        let link = reports[1].link(Self.wired)
        #expect(link.isStalled)
        #expect(link.evidence.socketsJudged == 3)
        #expect(link.evidence.segmentsSentSinceReceive == 12)
        #expect(link.evidence.retransmittedSinceReceive == 10)
        #expect(link.evidence.retransmittedPercent == 83)
    }

    @Test func oneBlackHoledPeerBesideHealthyTrafficIsNotAStall() {
        let reports = Self.run([
            [Self.socket(1, out: 0, in: 0, retransmitted: 0), Self.socket(2, out: 0, in: 0, retransmitted: 0)],
            [Self.socket(1, out: 40, in: 0, retransmitted: 40), Self.socket(2, out: 10, in: 10, retransmitted: 0)],
        ])
        #expect(reports[1].link(Self.wired).verdict == .flowing)
    }

    @Test func verdictsArePerLinkByAddressOrBoundInterface() {
        let reports = Self.run([
            [
                Self.socket(1, out: 0, in: 0, retransmitted: 0),
                Self.socket(2, out: 0, in: 0, retransmitted: 0, from: "198.51.100.9"),
                Self.socket(3, out: 0, in: 0, retransmitted: 0, from: "10.9.9.9", interface: Self.wifi),
            ],
            [
                Self.socket(1, out: 30, in: 0, retransmitted: 30),
                Self.socket(2, out: 30, in: 3, retransmitted: 28, from: "198.51.100.9"),
                Self.socket(3, out: 30, in: 0, retransmitted: 30, from: "10.9.9.9", interface: Self.wifi),
            ],
        ])
        #expect(reports[1].link(Self.wired).isStalled)
        #expect(reports[1].link(Self.wifi).verdict == .flowing)
        #expect(reports[1].link(Self.wifi).evidence.socketsJudged == 2)
        #expect(reports[1].stalledLinks == [Self.wired])
    }

    @Test func localAndUnattributedSocketsAreIgnored() {
        let reports = Self.run([
            [],
            [
                Self.socket(1, out: 30, in: 0, retransmitted: 30, from: "127.0.0.1", to: IPAddress("127.0.0.1")!),
                Self.socket(2, out: 30, in: 0, retransmitted: 30, to: IPAddress("198.51.100.9")!),  // to this host
                Self.socket(3, out: 30, in: 0, retransmitted: 30, from: "10.1.1.1"),  // no link holds it
                Self.socket(4, out: 30, in: 0, retransmitted: 30, from: "::ffff:127.0.0.1", to: IPAddress("::1")!),
            ],
        ])
        #expect(reports[1].links.isEmpty)
        #expect(reports[1].socketsIgnored == 4)
    }

    @Test func noTrafficIsNeverAStallAndBacksOff() {
        var settings = StallSettings()
        settings.maximumPollInterval = .seconds(160)
        let idle = [Self.socket(1, out: 10, in: 10, retransmitted: 0)]
        let reports = Self.run([idle, idle, idle, idle, idle, idle], settings: settings)
        #expect(reports.allSatisfy { $0.link(Self.wired).verdict == .noEvidence })
        #expect(reports.map(\.nextPoll) == [.seconds(20), .seconds(40), .seconds(80), .seconds(160), .seconds(160), .seconds(160)])
        let none = Self.run([[], [], []])
        #expect(none.allSatisfy { $0.links.isEmpty })
        #expect(none.map(\.nextPoll) == [.seconds(40), .seconds(80), .seconds(160)])
    }

    @Test func trafficPollsEveryTwentySeconds() {
        let reports = Self.run([
            [],
            [],
            [Self.socket(1, out: 3, in: 3, retransmitted: 0)],
            [Self.socket(1, out: 3, in: 3, retransmitted: 0)],
        ])
        #expect(reports.map(\.nextPoll) == [.seconds(40), .seconds(80), .seconds(20), .seconds(40)])
    }

    @Test func socketsGoneMeansNoEvidence() {
        let reports = Self.run([
            [Self.socket(1, out: 0, in: 0, retransmitted: 0)],
            [Self.socket(1, out: 30, in: 0, retransmitted: 30)],
            [],
        ])
        #expect(reports[1].link(Self.wired).isStalled)
        #expect(reports[2].link(Self.wired).verdict == .noEvidence)
    }

    @Test func countersWrapAt32Bits() {
        let reports = Self.run([
            [Self.socket(1, out: UInt32.max - 4, in: UInt32.max, retransmitted: UInt32.max - 4)],
            [Self.socket(1, out: 15, in: UInt32.max, retransmitted: 15)],
        ])
        let link = reports[1].link(Self.wired)
        #expect(link.evidence.segmentsSentSinceReceive == 20)
        #expect(link.isStalled)
    }

    @Test func dnsTimeoutsCountAtTheThreshold() {
        var evaluator = StallEvaluator()
        var report = evaluator.poll(at: .zero, samples: [], addresses: Self.addresses, dnsTimeouts: [Self.wifi: 4])
        #expect(report.link(Self.wifi).verdict == .noEvidence, "baseline")
        report = evaluator.poll(at: .seconds(20), samples: [], addresses: Self.addresses, dnsTimeouts: [Self.wifi: 4])
        #expect(report.link(Self.wifi).verdict == .flowing)
        report = evaluator.poll(at: .seconds(40), samples: [], addresses: Self.addresses, dnsTimeouts: [Self.wifi: 5])
        #expect(report.link(Self.wifi).verdict == .stalled)
        #expect(report.link(Self.wifi).causes == .dnsTimeouts)
        #expect(report.link(Self.wifi).evidence.dnsTimeouts == 5)
        var off = StallSettings()
        off.dnsTimeouts = 0
        evaluator = StallEvaluator(settings: off)
        report = evaluator.poll(at: .zero, samples: [], addresses: Self.addresses, dnsTimeouts: [Self.wifi: 50])
        #expect(!report.link(Self.wifi).isStalled)
    }

    @Test func socketsWithoutCountersAreNotJudged() {
        let request = TCPSocketSample(cookie: 9, state: .synReceived, source: IPAddress("192.0.2.2")!, destination: Self.peer, counters: nil)
        let reports = Self.run([[request], [request]])
        #expect(reports[1].links.isEmpty)
    }

    @Test func resetStartsAfreshWithABaseline() {
        var evaluator = StallEvaluator()
        _ = evaluator.poll(at: .zero, samples: [Self.socket(1, out: 0, in: 0, retransmitted: 0)], addresses: Self.addresses)
        evaluator.reset()
        let report = evaluator.poll(at: .seconds(20), samples: [Self.socket(1, out: 30, in: 0, retransmitted: 30)], addresses: Self.addresses)
        #expect(report.link(Self.wired).verdict == .noEvidence)
    }
}
