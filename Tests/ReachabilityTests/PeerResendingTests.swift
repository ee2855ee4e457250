import Testing
@testable import Reachability

/// A download whose ACKs die on their way out: the host has nothing in flight and never backs
/// off; only its peer, sending again what the host already received, says the path is dead.
/// Measured before this rule (`scripts/bench-stall detect --profiles download --death outbound`):
/// missed, 2 of 2. The peer's timeouts double from 200 ms: it sends again 0.2, 0.6, 1.4, 3.0,
/// 6.2, 12.6 and 25.4 s after the wall.
@Suite struct PeerResendingTests {
    typealias Evaluator = StallEvaluatorTests

    static let resends: [Double] = [0.2, 0.6, 1.4, 3.0, 6.2, 12.6, 25.4, 51.0]

    /// The download at `now` (seconds): 100 bytes and one data segment every 10 ms until `wall`,
    /// then only the peer's segments sent again at `resends` after it. `unread`: bytes the
    /// application has not read.
    static func download(at now: Double, wall: Double, resends: [Double] = resends, unread: UInt32 = 0) -> TCPSocketSample {
        let last = min(now, wall)
        let resent = resends.map { wall + $0 }.filter { $0 <= now }
        var sample = Evaluator.socket(1)
        sample.counters?.progress = UInt64(last * 10_000)
        let dataSegments = UInt32(last * 100) + UInt32(resent.count)
        sample.counters?.dataSegmentsIn = dataSegments
        sample.counters?.segmentsIn = dataSegments + 50
        // An ACK every other segment, and one (a D-SACK) for each sent again.
        sample.counters?.segmentsOut = 100 + UInt32(last * 50) + UInt32(resent.count)
        // A segment sent again moves neither time (read with ss: lastrcv and lastack grow together).
        let sinceData = UInt32(((now - last) * 1000).rounded())
        sample.counters?.millisecondsSinceDataReceived = sinceData
        sample.counters?.millisecondsSinceAckReceived = sinceData
        sample.counters?.unacknowledged = 0
        sample.unread = unread
        return sample
    }

    static func silent(since: Double) -> [StallNameserverAnswer] {
        [StallNameserverAnswer(interfaceIndex: Evaluator.wired, since: .milliseconds(Int64(since * 1000)), answered: false)]
    }

    @Test func aDownloadWhosePeerSendsAgainFailsFromItsLastDataAndIsFlaggedWithTheNameserversSilence() {
        var evaluator = Evaluator.evaluator()
        let wall = 103.0
        #expect(Evaluator.poll(&evaluator, at: 100, [Self.download(at: 100, wall: wall)]).link(Evaluator.wired).verdict == .flowing)
        // Data came until the wall: progress since the last poll, nothing to judge yet.
        let first = Evaluator.poll(&evaluator, at: 110, [Self.download(at: 110, wall: wall)])
        #expect(first.link(Evaluator.wired).evidence.socketsFailing == 0)
        // No progress since, and the peer sent again 12.6 s after the wall: it waits, since 103.
        let suspected = Evaluator.poll(&evaluator, at: 120, [Self.download(at: 120, wall: wall)])
        let link = suspected.link(Evaluator.wired)
        #expect(link.evidence.socketsFailing == 1 && !link.isStalled, "\(link.evidence)")
        #expect(link.evidence.waiting == .seconds(17), "\(link.evidence)")
        #expect(link.evidence.sinceReceive == .seconds(17), "\(link.evidence)")
        #expect(suspected.nameserverChecks == [Evaluator.wired])
        #expect(suspected.nextPoll == .seconds(2))
        let flagged = Evaluator.poll(&evaluator, at: 122, [Self.download(at: 122, wall: wall)], nameservers: Self.silent(since: 120))
        #expect(flagged.link(Evaluator.wired).isStalled, "\(flagged.link(Evaluator.wired).evidence)")
        // Held while the peer keeps sending again, though its back-off leaves polls without one.
        for now in stride(from: 124.0, through: 150, by: 2) {
            let held = Evaluator.poll(&evaluator, at: now, [Self.download(at: now, wall: wall)], nameservers: Self.silent(since: 120))
            #expect(held.link(Evaluator.wired).isStalled, "at \(now)")
        }
        // The path is back: the ACK gets out, new data comes, cleared at once.
        var back = Self.download(at: 152, wall: 152)
        back.counters?.progress += 1
        back.counters?.millisecondsSinceDataReceived = 5
        #expect(!Evaluator.poll(&evaluator, at: 152, [back]).link(Evaluator.wired).isStalled)
    }

    /// The wall came right after a poll: by the next, the peer sent again three times or more.
    @Test func threeSentAgainAreEvidenceThoughThePollCameRightAfterTheData() {
        var evaluator = Evaluator.evaluator()
        _ = Evaluator.poll(&evaluator, at: 100, [Self.download(at: 100, wall: 109.5)])
        _ = Evaluator.poll(&evaluator, at: 110, [Self.download(at: 110, wall: 109.5)])
        let report = Evaluator.poll(&evaluator, at: 120, [Self.download(at: 120, wall: 109.5)])
        #expect(report.link(Evaluator.wired).evidence.socketsFailing == 1, "\(report.link(Evaluator.wired).evidence)")
    }

    /// One segment sent again right after the data (a tail loss probe), then nothing: an idle
    /// connection, not a wait. Nor is a stopped reader's full window, which the peer probes;
    /// nor a keepalive on a socket idle for minutes; nor anything on a kernel without
    /// `tcpi_data_segs_in`.
    @Test func aTailLossProbeAZeroWindowsProbesAKeepaliveOrAnOldKernelAreNoWait() {
        func never(_ samples: (Double) -> TCPSocketSample) -> [Int] {
            var evaluator = Evaluator.evaluator()
            return stride(from: 100.0, through: 190, by: 10).map {
                Evaluator.poll(&evaluator, at: $0, [samples($0)], nameservers: Self.silent(since: 100)).link(Evaluator.wired).evidence.socketsFailing
            }
        }
        #expect(never { Self.download(at: $0, wall: 109.95, resends: [0.1]) }.allSatisfy { $0 == 0 }, "a tail loss probe")
        #expect(never { Self.download(at: $0, wall: 103, unread: 65_536) }.allSatisfy { $0 == 0 }, "a full window's probes")
        #expect(never { Self.download(at: $0, wall: 103, resends: [45, 90]) }.allSatisfy { $0 == 0 }, "keepalives")
        #expect(never { now in
            var sample = Self.download(at: now, wall: 103)
            sample.counters?.dataSegmentsIn = 0
            return sample
        }.allSatisfy { $0 == 0 }, "no tcpi_data_segs_in")
    }

    /// Evidence without new arrivals stands only as long as a peer whose timeouts double would
    /// take to send its next: one that stops sending again (it gave up, or it was a one-off
    /// late one) is forgotten.
    @Test func aPeerThatStopsSendingAgainIsForgotten() {
        var evaluator = Evaluator.evaluator()
        let wall = 103.0
        let twice: [Double] = [7.5, 15.0]
        for now in [100.0, 110] { _ = Evaluator.poll(&evaluator, at: now, [Self.download(at: now, wall: wall, resends: twice)]) }
        // Two sent again after the poll at 110, which came 7 s past the data: evidence.
        #expect(Evaluator.poll(&evaluator, at: 120, [Self.download(at: 120, wall: wall, resends: twice)])
            .link(Evaluator.wired).evidence.socketsFailing == 1)
        // Last seen at the poll of 120: its next was due by 103 + 2 * 17 = 137; a poll's grace (20 s) more.
        #expect(Evaluator.poll(&evaluator, at: 150, [Self.download(at: 150, wall: wall, resends: twice)])
            .link(Evaluator.wired).evidence.socketsFailing == 1)
        #expect(Evaluator.poll(&evaluator, at: 160, [Self.download(at: 160, wall: wall, resends: twice)])
            .link(Evaluator.wired).evidence.socketsFailing == 0)
    }
}

/// When a download's new data stops between two polls, the next poll comes as a peer that waits
/// would have sent again: one poll after the death, not two.
@Suite struct PeerResendingCadenceTests {
    typealias Evaluator = StallEvaluatorTests
    typealias Download = PeerResendingTests

    @Test func aDownloadThatStoppedIsLookedAtAgainAndFlaggedAtTheLook() {
        var evaluator = Evaluator.evaluator()
        let wall = 106.0
        _ = Evaluator.poll(&evaluator, at: 100, [Download.download(at: 100, wall: wall)])
        // The data stopped 4 s ago: the peer, if it waits, sends again within 4.2 s. The
        // nameserver is asked now, ahead of the look.
        let stopped = Evaluator.poll(&evaluator, at: 110, [Download.download(at: 110, wall: wall)])
        #expect(stopped.nextPoll == .milliseconds(4_500), "\(stopped)")
        #expect(stopped.nameserverChecks == [Evaluator.wired])
        // It did, at 112.2: it waits since 106, and the nameserver has been silent since 110.
        let flagged = Evaluator.poll(&evaluator, at: 114.5, [Download.download(at: 114.5, wall: wall)], nameservers: Download.silent(since: 110))
        #expect(flagged.link(Evaluator.wired).isStalled, "\(flagged.link(Evaluator.wired).evidence)")
        #expect(flagged.link(Evaluator.wired).evidence.waiting == .milliseconds(8_500))
    }

    /// Asked only at the look, the silence needed its patience after it: flagged 2 s later.
    @Test func withoutTheQuestionAheadTheSilenceIsCountedFromTheLook() {
        var evaluator = Evaluator.evaluator()
        let wall = 106.0
        _ = Evaluator.poll(&evaluator, at: 100, [Download.download(at: 100, wall: wall)])
        _ = Evaluator.poll(&evaluator, at: 110, [Download.download(at: 110, wall: wall)])
        let suspected = Evaluator.poll(&evaluator, at: 114.5, [Download.download(at: 114.5, wall: wall)], nameservers: Download.silent(since: 114.5))
        #expect(!suspected.link(Evaluator.wired).isStalled)
        #expect(suspected.nameserverChecks == [Evaluator.wired])
        let flagged = Evaluator.poll(&evaluator, at: 116.5, [Download.download(at: 116.5, wall: wall)], nameservers: Download.silent(since: 114.5))
        #expect(flagged.link(Evaluator.wired).isStalled, "\(flagged.link(Evaluator.wired).evidence)")
    }

    /// A question asked ahead that the server answered explains no failure: one user's download
    /// that dies next still has its question asked. It only pauses the questions asked ahead.
    @Test func anAnswerToAQuestionAskedAheadHoldsBackOnlyTheNextQuestionsAhead() {
        var evaluator = Evaluator.evaluator()
        func user(_ now: Double, wall: Double, resends: [Double] = Download.resends) -> [TCPSocketSample] {
            var sample = Download.download(at: now, wall: wall, resends: resends)
            sample.owner = 1000
            return [sample]
        }
        let answered = [StallNameserverAnswer(interfaceIndex: Evaluator.wired, since: .seconds(110), answered: true)]
        _ = Evaluator.poll(&evaluator, at: 100, user(100, wall: 106, resends: []))
        #expect(Evaluator.poll(&evaluator, at: 110, user(110, wall: 106, resends: [])).nameserverChecks == [Evaluator.wired])
        // The download had ended: the look finds nothing sent again, and the server answered.
        let look = Evaluator.poll(&evaluator, at: 114.5, user(114.5, wall: 106, resends: []), nameservers: answered)
        #expect(look.nameserverChecks.isEmpty, "\(look)")
        // A new download that stops within 30 s of that answer is not asked about ahead...
        let wall = 126.0
        _ = Evaluator.poll(&evaluator, at: 120, user(120, wall: wall))
        #expect(Evaluator.poll(&evaluator, at: 130, user(130, wall: wall)).nameserverChecks.isEmpty)
        // ...but once its peer is seen sending again, it is asked about as before.
        let suspected = Evaluator.poll(&evaluator, at: 134.5, user(134.5, wall: wall))
        #expect(suspected.link(Evaluator.wired).evidence.socketsFailing == 1, "\(suspected.link(Evaluator.wired).evidence)")
        #expect(suspected.nameserverChecks == [Evaluator.wired])
    }

    /// A download that simply ended (nothing sent again): the look finds nothing, and the poll
    /// planned before it comes as it would have; an idle socket asks for no further look.
    @Test func aLookThatFindsNothingKeepsTheCadencePlannedBeforeIt() {
        var evaluator = Evaluator.evaluator()
        _ = Evaluator.poll(&evaluator, at: 100, [Download.download(at: 100, wall: 106, resends: [])])
        #expect(Evaluator.poll(&evaluator, at: 110, [Download.download(at: 110, wall: 106, resends: [])]).nextPoll == .milliseconds(4_500))
        let look = Evaluator.poll(&evaluator, at: 114.5, [Download.download(at: 114.5, wall: 106, resends: [])])
        #expect(look.link(Evaluator.wired).evidence.socketsFailing == 0)
        #expect(look.nextPoll == .milliseconds(5_500), "the busy cadence's poll at 120: \(look)")
        let after = Evaluator.poll(&evaluator, at: 120, [Download.download(at: 120, wall: 106, resends: [])])
        #expect(after.nextPoll == .seconds(40), "nothing moved: backing off as before: \(after)")
    }
}
