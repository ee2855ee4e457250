import Testing
@testable import Reachability

/// The pure stall evaluator with hand-made samples: each boundary of the rule (sockets in
/// retransmission back-off, nothing received for the window, two sockets, owners), attribution,
/// closing sockets, DNS evidence and the cadence. Time is virtual (a Duration per input).
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
    static let otherPeer = IPAddress("203.0.113.8")!

    /// A socket of the wired link toward `peer`. `waiting`: in back-off for about that long (k
    /// timeouts in a row at a 200 ms base); `received`: its last receive that long ago.
    static func socket(
        _ cookie: UInt64, waiting: Duration? = nil, received: Duration? = .milliseconds(100), state: TCPState = .established,
        from source: String = "192.0.2.2", sourcePort: UInt16 = 40000, to destination: IPAddress = peer,
        interface: Int32 = 0, owner: UInt32? = 0
    ) -> TCPSocketSample {
        var counters = TCPCounters(segmentsOut: 100, segmentsIn: received == nil ? 0 : 50, totalRetransmits: 0)
        if let received {
            let ms = UInt32(received.components.seconds * 1000 + received.components.attoseconds / 1_000_000_000_000_000)
            counters.millisecondsSinceAckReceived = ms
            counters.millisecondsSinceDataReceived = ms
        } else {
            counters.millisecondsSinceAckReceived = 4_000_000_000
            counters.millisecondsSinceDataReceived = 4_000_000_000
        }
        if let waiting {
            // The smallest k whose back-off from 200 ms covers `waiting`: 200 ms * (2^k - 1) >= waiting.
            var k = 1
            while Duration.milliseconds(200) * ((1 << k) - 1) < waiting { k += 1 }
            counters.consecutiveTimeouts = UInt8(k)
            counters.retransmissionTimeoutMicroseconds = UInt32(200_000 << k)
            counters.unacknowledged = 1
            counters.totalRetransmits = UInt32(k)
        }
        return TCPSocketSample(
            cookie: cookie, state: state, source: IPAddress(source)!, sourcePort: sourcePort, destination: destination,
            boundInterface: interface, counters: counters, owner: owner)
    }

    static func evaluator(_ settings: StallSettings = StallSettings()) -> StallEvaluator { StallEvaluator(settings: settings) }

    static func poll(
        _ evaluator: inout StallEvaluator, at seconds: Double, _ samples: [TCPSocketSample], dns: [Int32: Int] = [:],
        nameservers: [StallNameserverAnswer] = []
    ) -> StallReport {
        evaluator.poll(at: .milliseconds(Int64(seconds * 1000)), samples: samples, addresses: addresses, dnsTimeouts: dns, nameservers: nameservers)
    }

    @Test func twoSocketsWaitingThroughTheWindowWithNothingReceivedAreAStall() {
        var evaluator = Self.evaluator()
        let healthy = Self.poll(&evaluator, at: 100, [Self.socket(1), Self.socket(2)])
        #expect(healthy.link(Self.wired).verdict == .flowing)
        // 12.6 s of back-off (6 timeouts), nothing received for 13 s.
        let report = Self.poll(&evaluator, at: 113, [
            Self.socket(1, waiting: .seconds(12), received: .seconds(13)),
            Self.socket(2, waiting: .seconds(12), received: .seconds(13)),
        ])
        let link = report.link(Self.wired)
        #expect(link.verdict == .stalled && link.causes == .tcpRetransmissions)
        #expect(link.evidence.socketsJudged == 2 && link.evidence.socketsFailing == 2 && link.evidence.owners == 1)
        #expect(link.evidence.waiting >= .seconds(12), "\(link.evidence)")
        #expect(link.evidence.sinceReceive == .seconds(13))
        #expect(report.stalledLinks == [Self.wired])
        #expect(report.nextPoll == .seconds(2), "a stall is watched closely, to see it clear")
    }

    @Test func theFirstPollAlreadyJudges_noBaseline() {
        var evaluator = Self.evaluator()
        let report = Self.poll(&evaluator, at: 5, [
            Self.socket(1, waiting: .seconds(12), received: .seconds(13)),
            Self.socket(2, waiting: .seconds(12), received: .seconds(13)),
        ])
        #expect(report.link(Self.wired).isStalled)
    }

    @Test func lessThanTheWindowIsASuspicionThatPollsSoon() {
        var evaluator = Self.evaluator()
        // 3 s of back-off (4 timeouts), nothing received for 3.5 s: suspected, not yet stalled.
        let report = Self.poll(&evaluator, at: 10, [
            Self.socket(1, waiting: .seconds(3), received: .milliseconds(3500)),
            Self.socket(2, waiting: .seconds(3), received: .milliseconds(3500)),
        ])
        #expect(report.link(Self.wired).verdict == .flowing)
        #expect(report.nextPoll == .seconds(2))
    }

    /// A suspicion whose wait reaches the window before the next suspect poll is polled at that
    /// instant: flagged at 8 s of waiting, not on the 2 s grid (up to 10 s). A socket that
    /// received in between clears it as before.
    @Test func aWaitThatReachesTheWindowBeforeTheNextSuspectPollIsPolledThen() {
        var evaluator = Self.evaluator()
        let failing = [Self.socket(1, waiting: .seconds(7), received: .seconds(7)), Self.socket(2, waiting: .seconds(7), received: .seconds(7))]
        let report = Self.poll(&evaluator, at: 10, failing)
        #expect(!report.link(Self.wired).isStalled)
        #expect(report.nextPoll == .seconds(1) + StallEvaluator.crossingMargin, "\(String(describing: report.nextPoll))")
        let flagged = evaluator.poll(
            at: .seconds(11) + StallEvaluator.crossingMargin,
            samples: [Self.socket(1, waiting: .seconds(8), received: .seconds(8)), Self.socket(2, waiting: .seconds(8), received: .seconds(8))],
            addresses: Self.addresses)
        #expect(flagged.link(Self.wired).isStalled, "\(flagged.link(Self.wired).evidence)")
        // 7.95 s in: the poll still waits its floor, never a busy loop.
        var close = Self.evaluator()
        let almost = [
            Self.socket(1, waiting: .milliseconds(7950), received: .milliseconds(7950)),
            Self.socket(2, waiting: .milliseconds(7950), received: .milliseconds(7950)),
        ]
        #expect(Self.poll(&close, at: 10, almost).nextPoll == StallEvaluator.crossingFloor + StallEvaluator.crossingMargin)
    }

    @Test func oneSocketAloneNeverFlags_itCannotTellADeadPathFromALossyOne() {
        var evaluator = Self.evaluator()
        let report = Self.poll(&evaluator, at: 100, [Self.socket(1, waiting: .seconds(50), received: .seconds(51))])
        #expect(report.link(Self.wired).verdict == .flowing)
        var one = StallSettings()
        one.minimumSockets = 1
        var lenient = Self.evaluator(one)
        #expect(Self.poll(&lenient, at: 100, [Self.socket(1, waiting: .seconds(50), received: .seconds(51))]).link(Self.wired).isStalled)
    }

    @Test func anyReceiveOnTheLinkClearsIt_oneDeadPeerBesideLiveOnesIsNotAStall() {
        var evaluator = Self.evaluator()
        let report = Self.poll(&evaluator, at: 100, [
            Self.socket(1, waiting: .seconds(25), received: .seconds(26)),
            Self.socket(2, waiting: .seconds(25), received: .seconds(26)),
            Self.socket(3, received: .milliseconds(300), to: Self.otherPeer),
        ])
        #expect(report.link(Self.wired).verdict == .flowing)
        #expect(report.nextPoll == .seconds(10), "a dead peer beside traffic that receives is no suspicion (half: the first poll)")
    }

    @Test func aStallStaysUntilAReceiveThenClears() {
        var evaluator = Self.evaluator()
        let failing = { (at: Double) in [
            Self.socket(1, waiting: .seconds(at - 100), received: .seconds(at - 99)),
            Self.socket(2, waiting: .seconds(at - 100), received: .seconds(at - 99)),
        ] }
        #expect(Self.poll(&evaluator, at: 112, failing(112)).link(Self.wired).isStalled)
        #expect(Self.poll(&evaluator, at: 114, failing(114)).link(Self.wired).isStalled)
        // One socket's next retransmission is answered.
        let cleared = Self.poll(&evaluator, at: 116, [
            Self.socket(1, received: .milliseconds(200)),
            Self.socket(2, waiting: .seconds(16), received: .seconds(17)),
        ])
        #expect(cleared.link(Self.wired).verdict == .flowing)
    }

    /// issue 48: an application that retries through a dead path has, between two attempts,
    /// one failing socket (the new one) where MinSockets asks two: the stall holds, and ends
    /// only on a receipt; a user's lone failure does not hold the host's stall.
    @Test func aStallHoldsWhileTheHostStillFailsBelowMinSocketsAndEndsOnAReceipt() {
        var evaluator = Self.evaluator()
        let failing = { (at: Double) in [
            Self.socket(1, waiting: .seconds(at - 100), received: .seconds(at - 99)),
            Self.socket(2, waiting: .seconds(at - 100), received: .seconds(at - 99)),
        ] }
        #expect(Self.poll(&evaluator, at: 112, failing(112)).link(Self.wired).isStalled)
        // Both gave up; the next attempt alone is in back-off (a SYN retransmitted).
        let between = [Self.socket(3, waiting: .seconds(1), received: nil, state: .synSent)]
        #expect(Self.poll(&evaluator, at: 122, between).link(Self.wired).isStalled, "cleared for want of a second failure")
        // Its retransmission is answered: traffic flows.
        let answered = Self.poll(&evaluator, at: 124, [Self.socket(3, received: .milliseconds(100))])
        #expect(answered.link(Self.wired).verdict == .flowing)

        // Stalled again; then only one user's socket fails: the host's stall is not held by it.
        #expect(Self.poll(&evaluator, at: 140, failing(140)).link(Self.wired).isStalled)
        let usersOnly = [Self.socket(4, waiting: .seconds(2), received: nil, state: .synSent, sourcePort: 40004, owner: 1000)]
        #expect(!Self.poll(&evaluator, at: 150, usersOnly).link(Self.wired).isStalled)
    }

    @Test func waitingBeganAfterAnIdlePeriod_theIdleTimeIsNotWaiting() {
        var evaluator = Self.evaluator()
        // Idle for a minute (last receive 60 s ago), then requests sent 1.5 s ago retransmitted
        // once or twice: a slow answer, not a stall.
        let report = Self.poll(&evaluator, at: 100, [
            Self.socket(1, waiting: .milliseconds(600), received: .seconds(60)),
            Self.socket(2, waiting: .milliseconds(1400), received: .seconds(60)),
        ])
        #expect(report.link(Self.wired).verdict == .flowing)
        #expect(report.link(Self.wired).evidence.waiting < .seconds(2), "\(report.link(Self.wired).evidence)")
    }

    /// Connections that each close at once leave nothing open at a poll between them; their
    /// receipts stay for the window, so failures right after still say when the link last
    /// received (a fresh-clone run's `reachctl status` said "nothing ever received" 11 s after
    /// answered attempts), and a link quiet for longer is forgotten as before.
    @Test func aLinkWithNothingOpenKeepsItsReceiptsForTheWindow() {
        var evaluator = Self.evaluator()
        _ = Self.poll(&evaluator, at: 100, [Self.socket(1)])
        #expect(evaluator.closed(Self.socket(2, received: .milliseconds(20), state: .closed), at: .seconds(101)) == .traffic)
        _ = Self.poll(&evaluator, at: 102, [])
        let attempts = [
            Self.socket(3, waiting: .seconds(3), received: nil, state: .synSent, sourcePort: 40003),
            Self.socket(4, waiting: .seconds(3), received: nil, state: .synSent, sourcePort: 40004),
        ]
        let failing = Self.poll(&evaluator, at: 105, attempts).link(Self.wired)
        #expect(failing.evidence.sinceReceive != nil, "\(failing.evidence)")
        var quiet = Self.evaluator()
        _ = Self.poll(&quiet, at: 100, [Self.socket(1)])
        _ = Self.poll(&quiet, at: 109, [])
        #expect(Self.poll(&quiet, at: 112, attempts).link(Self.wired).evidence.sinceReceive == nil)
    }

    @Test func connectionAttemptsThatCloseUnansweredAddUp() {
        var evaluator = Self.evaluator()
        _ = Self.poll(&evaluator, at: 100, [Self.socket(1)])
        // Connects that each wait 3 s (SYNs retransmitted, linear 1 s timeouts) and close, one a
        // second, the last receive 100 s ago at the poll that saw socket 1.
        var outcome = StallEvaluator.Closure.ignored
        for second in 0..<9 {
            var attempt = Self.socket(UInt64(10 + second), received: nil, state: .closed)
            attempt.counters?.consecutiveTimeouts = 3
            attempt.counters?.retransmissionTimeoutMicroseconds = 1_000_000
            outcome = evaluator.closed(attempt, at: .seconds(101 + Int64(second)))
        }
        #expect(outcome == .traffic || outcome == .failing)
        // Closed sockets carry no owner: they alone are no evidence...
        #expect(!Self.poll(&evaluator, at: 110, []).link(Self.wired).isStalled)
        // ...but the same attempts, seen by a poll first, are.
        var seen = Self.evaluator()
        var attempts: [TCPSocketSample] = []
        for second in 0..<4 {
            var attempt = Self.socket(UInt64(20 + second), received: nil, state: .synSent)
            attempt.counters?.consecutiveTimeouts = 1
            attempt.counters?.retransmissionTimeoutMicroseconds = 1_000_000
            attempts.append(attempt)
        }
        _ = Self.poll(&seen, at: 99, [Self.socket(1, received: .seconds(1))])
        _ = Self.poll(&seen, at: 101.5, attempts)
        for (offset, attempt) in attempts.enumerated() {
            var closed = attempt
            closed.state = .closed
            closed.counters?.consecutiveTimeouts = 3
            _ = seen.closed(closed, at: .seconds(103 + Int64(offset)))
        }
        let report = Self.poll(&seen, at: 108.5, [])
        #expect(report.link(Self.wired).isStalled, "\(report.link(Self.wired))")
        #expect(report.link(Self.wired).evidence.socketsFailing == 4)
    }

    /// A closing socket no poll saw names no owner: what it received may be one user's short
    /// request, which must not clear the host's stall (issue 51); one a poll saw speaks for its
    /// owner, and the host's own receipt, or two users', clears it.
    @Test func aClosingSocketThatReceivedClearsOnlyForTheOwnerAPollSaw() {
        func stalledRoot(waited: Double) -> [TCPSocketSample] {
            [Self.socket(1, waiting: .seconds(waited), received: .seconds(waited + 1)),
             Self.socket(2, waiting: .seconds(waited), received: .seconds(waited + 1))]
        }
        var evaluator = Self.evaluator()
        #expect(Self.poll(&evaluator, at: 100, stalledRoot(waited: 12)).link(Self.wired).isStalled)
        var short = Self.socket(9, received: .milliseconds(50), state: .closed, to: Self.otherPeer)
        short.owner = nil
        #expect(evaluator.closed(short, at: .seconds(101)) == .traffic, "still a sign of traffic: a poll soon")
        let report = Self.poll(&evaluator, at: 102, stalledRoot(waited: 14))
        #expect(report.link(Self.wired).isStalled, "an unattributed receipt cleared the host's stall: \(report.link(Self.wired))")
        #expect(report.link(Self.wired).evidence.sinceReceive == .milliseconds(1050), "still shown as the link's last receive")

        // Root's own connection, seen by a poll, receives and closes: cleared.
        var seen = Self.evaluator()
        _ = Self.poll(&seen, at: 100, stalledRoot(waited: 12) + [Self.socket(3, waiting: .seconds(1), received: .seconds(2), to: Self.otherPeer)])
        var closing = Self.socket(3, received: .milliseconds(50), state: .closed, to: Self.otherPeer)
        closing.owner = nil
        _ = seen.closed(closing, at: .seconds(101))
        #expect(Self.poll(&seen, at: 102, stalledRoot(waited: 14)).link(Self.wired).verdict == .flowing)

        // Two users' traffic receiving: evidence beyond one user, it clears; one user's does not.
        var users = Self.evaluator()
        let one = [Self.socket(5, received: .milliseconds(30), to: Self.otherPeer, owner: 1000)]
        #expect(Self.poll(&users, at: 100, stalledRoot(waited: 12) + one).link(Self.wired).isStalled)
        let two = one + [Self.socket(6, received: .milliseconds(30), to: Self.otherPeer, owner: 1001)]
        #expect(Self.poll(&users, at: 102, stalledRoot(waited: 14) + two).link(Self.wired).verdict == .flowing)
    }

    /// Issue 51: nobody's short GETs, once a second, to a server that answers, beside root's 20
    /// connections into a dead upstream: each GET lives a few milliseconds, so polls rarely see
    /// it and its receipt arrives unattributed as it closes; the odd one a poll saw is nobody's.
    /// Root's stall stays for the whole minute, the figures name root's sockets.
    @Test func oneUsersShortRequestsOnceASecondDoNotClearTheHostsStall() {
        var evaluator = Self.evaluator()
        func root(_ waited: Double) -> [TCPSocketSample] {
            (0..<20).map { (n: Int) in
                Self.socket(UInt64(100 + n), waiting: .seconds(waited), received: .seconds(waited + 1), sourcePort: UInt16(41000 + n))
            }
        }
        #expect(Self.poll(&evaluator, at: 100, root(10)).link(Self.wired).isStalled)
        var cookie: UInt64 = 1000
        for second in 101...160 {
            cookie += 1
            var get = Self.socket(cookie, received: .milliseconds(5), state: .closed, to: Self.otherPeer, owner: nil)
            get.counters?.segmentsIn = 4
            if second % 10 == 0 {
                // Caught alive by a poll: nobody's, then it closes.
                var alive = get
                alive.state = .established
                alive.owner = 65534
                _ = Self.poll(&evaluator, at: Double(second) - 0.5, root(Double(second) - 90.5) + [alive])
            }
            _ = evaluator.closed(get, at: .seconds(Int64(second)))
            if second % 2 == 0 {
                let report = Self.poll(&evaluator, at: Double(second) + 0.1, root(Double(second) - 89.9))
                #expect(report.link(Self.wired).isStalled, "cleared at \(second) s: \(report.link(Self.wired))")
                #expect(report.link(Self.wired).evidence.socketsFailing == 20)
            }
        }
    }

    /// One failing socket and reachd's own question to a nameserver beyond the gateway, silent
    /// for its patience: two destinations, one of them no user chose, fail together.
    @Test func aLoneSocketIsFlaggedWhenTheNameserverIsSilentToo_notWhenItAnswers() {
        func lone(owner: UInt32 = 0) -> [TCPSocketSample] { [Self.socket(1, waiting: .seconds(12), received: .seconds(13), owner: owner)] }
        func silent(since: Double) -> [StallNameserverAnswer] {
            [StallNameserverAnswer(interfaceIndex: Self.wired, since: .milliseconds(Int64(since * 1000)), answered: false)]
        }
        var evaluator = Self.evaluator()
        let first = Self.poll(&evaluator, at: 100, lone())
        #expect(!first.link(Self.wired).isStalled)
        #expect(first.nameserverChecks == [Self.wired], "a suspected link is worth a question: \(first)")
        // Asked at 100; silent 1 s: not yet past its patience (2 s).
        #expect(!Self.poll(&evaluator, at: 101, lone(), nameservers: silent(since: 100)).link(Self.wired).isStalled)
        let flagged = Self.poll(&evaluator, at: 102, lone(), nameservers: silent(since: 100))
        #expect(flagged.link(Self.wired).isStalled && flagged.link(Self.wired).causes == .tcpRetransmissions)
        #expect(flagged.link(Self.wired).evidence.socketsFailing == 1, "the question is not a socket: \(flagged.link(Self.wired).evidence)")
        #expect(flagged.nameserverChecks == [Self.wired], "still asked: its answer is what clears it")
        #expect(flagged.link(Self.wired).evidence.nameserverSilent)
        // It answers (the path is back, or never was dead: the peer was): cleared, though the
        // socket still waits deep in back-off.
        let answered = [StallNameserverAnswer(interfaceIndex: Self.wired, since: .seconds(100), answered: true)]
        #expect(!Self.poll(&evaluator, at: 106, lone(), nameservers: answered).link(Self.wired).isStalled)

        // The answer explained the socket's failure (its peer's): not asked about again until 30 s
        // later; a failure that began after the answer is asked about at once.
        #expect(Self.poll(&evaluator, at: 108, lone()).nameserverChecks.isEmpty)
        let fresh = Self.socket(2, waiting: .seconds(1), received: .seconds(2), to: Self.otherPeer)
        #expect(Self.poll(&evaluator, at: 110, lone() + [fresh]).nameserverChecks == [Self.wired])
        #expect(Self.poll(&evaluator, at: 137, lone()).nameserverChecks == [Self.wired], "30 s after the answer")

        // A socket that has not waited the window yet is not flagged by a silent server.
        var early = Self.evaluator()
        #expect(!Self.poll(&early, at: 100, [Self.socket(1, waiting: .seconds(3), received: .seconds(4))], nameservers: silent(since: 90))
            .link(Self.wired).isStalled)
        // Silence on another link corroborates nothing here.
        var elsewhere = Self.evaluator()
        let other = [StallNameserverAnswer(interfaceIndex: Self.wifi, since: .seconds(90), answered: false)]
        #expect(!Self.poll(&elsewhere, at: 100, lone(), nameservers: other).link(Self.wired).isStalled)
        // A user's lone socket with the host's own question silent: evidence beyond that user.
        var user = Self.evaluator()
        #expect(Self.poll(&user, at: 100, lone(owner: 65534), nameservers: silent(since: 90)).link(Self.wired).isStalled)
        // Nothing suspected, nothing asked; a stall the sockets show alone asks nothing either.
        var calm = Self.evaluator()
        #expect(Self.poll(&calm, at: 100, [Self.socket(1)]).nameserverChecks.isEmpty)
        var two = Self.evaluator()
        let bySockets = Self.poll(&two, at: 100, [
            Self.socket(1, waiting: .seconds(12), received: .seconds(13)), Self.socket(2, waiting: .seconds(12), received: .seconds(13)),
        ])
        #expect(bySockets.link(Self.wired).isStalled && bySockets.nameserverChecks.isEmpty)
    }

    @Test func oneUnprivilegedUserCanNeitherFlagNorClear() {
        var evaluator = Self.evaluator()
        let nobody: UInt32 = 65534
        // nobody's black-holed connects alone: no stall for everyone.
        let alone = Self.poll(&evaluator, at: 100, [
            Self.socket(1, waiting: .seconds(25), received: nil, state: .synSent, owner: nobody),
            Self.socket(2, waiting: .seconds(25), received: nil, state: .synSent, owner: nobody),
            Self.socket(3, waiting: .seconds(25), received: nil, state: .synSent, owner: nobody),
        ])
        #expect(!alone.link(Self.wired).isStalled)
        // The host's own traffic is stalled; nobody's download keeps receiving: still stalled.
        let hidden = Self.poll(&evaluator, at: 120, [
            Self.socket(4, waiting: .seconds(12), received: .seconds(13)),
            Self.socket(5, waiting: .seconds(12), received: .seconds(13)),
            Self.socket(6, received: .milliseconds(10), to: Self.otherPeer, owner: nobody),
        ])
        #expect(hidden.link(Self.wired).isStalled)
        // Two users each stalled: evidence beyond one user.
        var two = Self.evaluator()
        let both = Self.poll(&two, at: 100, [
            Self.socket(1, waiting: .seconds(12), received: .seconds(13), owner: 1000),
            Self.socket(2, waiting: .seconds(12), received: .seconds(13), owner: 1000),
            Self.socket(3, waiting: .seconds(12), received: .seconds(13), owner: 1001),
            Self.socket(4, waiting: .seconds(12), received: .seconds(13), owner: 1001),
        ])
        #expect(both.link(Self.wired).isStalled && both.link(Self.wired).evidence.owners == 2)
        // A system account (www-data, 33) is one user like any other (issue 51): alone, its
        // connections into a black hole flag nothing; two accounts are evidence beyond one.
        var service = Self.evaluator()
        #expect(!Self.poll(&service, at: 100, [
            Self.socket(1, waiting: .seconds(25), received: nil, state: .synSent, owner: 33),
            Self.socket(2, waiting: .seconds(25), received: nil, state: .synSent, owner: 33),
        ]).link(Self.wired).isStalled)
        var system = Self.evaluator()
        let accounts = Self.poll(&system, at: 100, [
            Self.socket(1, waiting: .seconds(12), received: .seconds(13), owner: 100),
            Self.socket(2, waiting: .seconds(12), received: .seconds(13), owner: 100),
            Self.socket(3, waiting: .seconds(12), received: .seconds(13), owner: 998),
            Self.socket(4, waiting: .seconds(12), received: .seconds(13), owner: 998),
        ])
        #expect(accounts.link(Self.wired).isStalled && accounts.link(Self.wired).evidence.owners == 2)
    }

    @Test func peersOfLocalServicesAndTheLinksOwnSubnetAreNotJudged() {
        var evaluator = Self.evaluator()
        let listener = TCPSocketSample(
            cookie: 50, state: .listen, source: .anyV6, sourcePort: 22, destination: .anyV6, counters: nil)
        let report = Self.poll(&evaluator, at: 100, [
            listener,
            // A remote peer connected to the local ssh server and stopped acknowledging.
            Self.socket(1, waiting: .seconds(25), received: .seconds(26), sourcePort: 22),
            Self.socket(2, waiting: .seconds(25), received: .seconds(26), sourcePort: 22),
            // The gateway itself, on the link's subnet.
            Self.socket(3, waiting: .seconds(25), received: .seconds(26), to: IPAddress("192.0.2.1")!),
            Self.socket(4, waiting: .seconds(25), received: .seconds(26), to: IPAddress("192.0.2.1")!),
            // Link-local, loopback, the host's own address.
            Self.socket(5, waiting: .seconds(25), to: IPAddress("169.254.1.1")!),
            Self.socket(6, waiting: .seconds(25), to: IPAddress("127.0.0.1")!),
            Self.socket(7, waiting: .seconds(25), to: IPAddress("198.51.100.9")!),
        ])
        #expect(report.links.isEmpty, "\(report.links)")
        #expect(report.socketsIgnored == 7)
    }

    @Test func verdictsArePerLinkByAddressOrBoundInterface() {
        var evaluator = Self.evaluator()
        let report = Self.poll(&evaluator, at: 100, [
            Self.socket(1, waiting: .seconds(12), received: .seconds(13), from: "198.51.100.9"),
            Self.socket(2, waiting: .seconds(12), received: .seconds(13), from: "198.51.100.9"),
            Self.socket(3, received: .milliseconds(10)),
            Self.socket(4, received: .milliseconds(10), from: "2001:db8:1::2", to: IPAddress("2001:db8:9::1")!),
        ])
        #expect(report.link(Self.wifi).isStalled)
        #expect(report.link(Self.wired).verdict == .flowing && report.link(Self.wired).evidence.socketsJudged == 2)
        // A socket bound to the wired link counts there whatever its address.
        var bound = Self.evaluator()
        let byInterface = Self.poll(&bound, at: 100, [
            Self.socket(1, waiting: .seconds(12), received: .seconds(13), from: "198.51.100.9", interface: Self.wired),
            Self.socket(2, waiting: .seconds(12), received: .seconds(13), from: "198.51.100.9", interface: Self.wired),
        ])
        #expect(byInterface.link(Self.wired).isStalled && byInterface.link(Self.wifi).verdict == .noEvidence)
    }

    @Test func cadence_noTrafficNoTimer_movingTrafficTwentySeconds_idleSocketsBackOff() {
        var evaluator = Self.evaluator()
        #expect(Self.poll(&evaluator, at: 0, []).nextPoll == nil)
        var healthy = Self.socket(1)
        // Born since the last poll, its 150 segments in a second are busy traffic: half of 20 s.
        #expect(Self.poll(&evaluator, at: 1, [healthy]).nextPoll == .seconds(10))
        // The same counters again: nothing moved.
        #expect(Self.poll(&evaluator, at: 21, [healthy]).nextPoll == .seconds(40))
        #expect(Self.poll(&evaluator, at: 61, [healthy]).nextPoll == .seconds(80))
        #expect(Self.poll(&evaluator, at: 141, [healthy]).nextPoll == .seconds(160))
        #expect(Self.poll(&evaluator, at: 301, [healthy]).nextPoll == .seconds(160))
        healthy.counters?.segmentsIn += 1
        #expect(Self.poll(&evaluator, at: 461, [healthy]).nextPoll == .seconds(20))
        // A socket closed since the last poll is traffic too, once.
        #expect(evaluator.closed(Self.socket(1, state: .closed), at: .seconds(470)) == .traffic)
        #expect(Self.poll(&evaluator, at: 481, []).nextPoll == .seconds(20))
        #expect(Self.poll(&evaluator, at: 501, []).nextPoll == nil)
        // Data in flight (an upload): half the interval, moving or not.
        var upload = Self.socket(2)
        upload.counters?.unacknowledged = 64
        #expect(Self.poll(&evaluator, at: 510, [upload]).nextPoll == .seconds(10))
        #expect(Self.poll(&evaluator, at: 520, [upload]).nextPoll == .seconds(10))
    }

    /// Issue 48: connections held open through a path that dies close nothing, so only a poll
    /// sees them; busy traffic (a segment a second since the last poll) gets a poll every half
    /// interval, and a trickle (a keep-alive) keeps the full one and its few wake-ups.
    @Test func cadence_busyTrafficHalvesTheInterval_aTrickleKeepsIt() {
        var evaluator = Self.evaluator()
        var chatty = Self.socket(1)
        // The first poll has no rate to go by: half the interval, and a socket's past counts
        // for nothing (it may be days old).
        #expect(Self.poll(&evaluator, at: 0, [chatty]).nextPoll == .seconds(10))
        chatty.counters?.segmentsOut += 1
        chatty.counters?.segmentsIn += 1
        #expect(Self.poll(&evaluator, at: 20, [chatty]).nextPoll == .seconds(20), "two segments in 20 s: a trickle")
        chatty.counters?.segmentsOut += 10
        chatty.counters?.segmentsIn += 10
        #expect(Self.poll(&evaluator, at: 40, [chatty]).nextPoll == .seconds(10), "20 segments in 20 s: busy")
        // What a socket that closed since the last poll moved counts too (all of it: born since).
        #expect(evaluator.closed(Self.socket(2, state: .closed), at: .seconds(45)) == .traffic)
        #expect(Self.poll(&evaluator, at: 50, [chatty]).nextPoll == .seconds(10))
        chatty.counters?.segmentsOut += 1
        #expect(Self.poll(&evaluator, at: 60, [chatty]).nextPoll == .seconds(20), "quiet again")
        // A count that went back (a reused cookie) is not 4 billion segments.
        chatty.counters?.segmentsOut -= 5
        #expect(Self.poll(&evaluator, at: 80, [chatty]).nextPoll == .seconds(20))
    }

    @Test func dnsTimeoutsCountAtTheThreshold() {
        var evaluator = Self.evaluator()
        #expect(Self.poll(&evaluator, at: 0, [], dns: [Self.wired: 4]).link(Self.wired).verdict == .flowing)
        let report = Self.poll(&evaluator, at: 1, [], dns: [Self.wired: 5])
        #expect(report.link(Self.wired).isStalled && report.link(Self.wired).causes == .dnsTimeouts)
        var off = StallSettings()
        off.dnsTimeouts = 0
        var never = Self.evaluator(off)
        #expect(!Self.poll(&never, at: 0, [], dns: [Self.wired: 50]).link(Self.wired).isStalled)
    }

    @Test func socketsWithoutCountersAreNotJudged() {
        var evaluator = Self.evaluator()
        var sample = Self.socket(1, waiting: .seconds(12))
        sample.counters = nil
        let report = Self.poll(&evaluator, at: 10, [sample])
        #expect(report.links.isEmpty && report.socketsIgnored == 1)
    }

    /// Between two timeouts the time since the last retransmission adds to the back-off: as seen
    /// on Linux 6.18 (rto 6.528 s after 5 timeouts from 204 ms, the 5th retransmission 4.8 s
    /// ago, the last ACK 12.1 s ago), the socket has waited about 11 s, not 6.3.
    @Test func theTimeSinceTheLastRetransmissionAddsToTheBackOff() throws {
        var sample = Self.socket(1, received: .milliseconds(12_092))
        sample.counters?.consecutiveTimeouts = 5
        sample.counters?.retransmissionTimeoutMicroseconds = 6_528_000
        sample.counters?.unacknowledged = 1
        sample.counters?.millisecondsSinceDataSent = 4_828
        let since = try #require(SocketMoment(sample, at: .seconds(100)).waitingSince)
        #expect(since == .seconds(100) - .milliseconds(6_324) - .milliseconds(4_828))
        // Never more than since the last ACK.
        sample.counters?.millisecondsSinceAckReceived = 9_000
        #expect(SocketMoment(sample, at: .seconds(100)).waitingSince == .seconds(91))
        // A time since data sent longer than the timeout running was no retransmission of data.
        sample.counters?.millisecondsSinceAckReceived = 60_000
        sample.counters?.millisecondsSinceDataSent = 50_000
        #expect(SocketMoment(sample, at: .seconds(100)).waitingSince == .seconds(100) - .milliseconds(6_324))
    }

    @Test func implausibleTimesAreUnknown_neverAReceipt() {
        // A SYN_SENT socket's ACK time was never set: the kernel reports jiffies since boot.
        let moment = SocketMoment(Self.socket(1, waiting: .seconds(3), received: nil, state: .synSent), at: .seconds(100))
        #expect(moment.receipt == nil && moment.waitingSince != nil)
        // A closed socket that received without an ACK time was reset: a receive, now.
        var reset = Self.socket(2, received: nil, state: .closed)
        reset.counters?.segmentsIn = 1
        #expect(SocketMoment(reset, at: .seconds(100)).receipt == .seconds(100))
    }

    @Test func resetForgetsEverything() {
        var evaluator = Self.evaluator()
        _ = Self.poll(&evaluator, at: 100, [Self.socket(1, waiting: .seconds(12), received: .seconds(13))])
        evaluator.reset()
        let report = Self.poll(&evaluator, at: 101, [])
        #expect(report.links.isEmpty && report.nextPoll == nil)
    }
}

extension StallEvaluatorTests {
    /// Issue 51: the nameserver check is bounded per stall. After an answer, one account's new
    /// failing connections (nobody connecting into a black hole every second) are not asked
    /// about again until the pause (30 s) is over: at most one question per 30 s on its behalf.
    /// A new failure of the host's own, or a second owner's, is asked about at once.
    @Test func oneUsersNewFailuresDoNotHaveTheNameserverAskedAtEveryPoll() {
        var evaluator = Self.evaluator()
        let nobody: UInt32 = 65534
        func attempts(_ at: Int) -> [TCPSocketSample] {
            // Two of nobody's connects, each begun 1.5 s before the poll, new cookies each time.
            (0..<2).map {
                Self.socket(UInt64(at * 10 + $0), waiting: .milliseconds(1500), received: nil, state: .synSent, sourcePort: UInt16(42000 + $0), owner: nobody)
            }
        }
        let first = Self.poll(&evaluator, at: 100, attempts(100))
        #expect(first.nameserverChecks == [Self.wired])
        let answered = [StallNameserverAnswer(interfaceIndex: Self.wired, since: .seconds(100), answered: true)]
        _ = Self.poll(&evaluator, at: 102, attempts(102), nameservers: answered)
        var asked = 0
        for second in stride(from: 104, to: 130, by: 2) {
            let report = Self.poll(&evaluator, at: Double(second), attempts(second))
            #expect(report.link(Self.wired).evidence.socketsFailing >= 2, "suspected: \(report.link(Self.wired))")
            if !report.nameserverChecks.isEmpty { asked += 1 }
        }
        #expect(asked == 0, "asked \(asked) times within the pause on one account's behalf")
        // A second owner's new failure, or the host's, is asked about at once.
        var other = Self.socket(7, waiting: .seconds(1), received: .seconds(2), to: Self.otherPeer, owner: 1000)
        other.sourcePort = 40007
        #expect(Self.poll(&evaluator, at: 130, attempts(130) + [other]).nameserverChecks == [Self.wired])
    }
}
