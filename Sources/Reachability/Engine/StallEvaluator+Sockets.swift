/// What the evaluator keeps of each judged socket from poll to poll, and what it reads from it.
extension StallEvaluator {
    struct KnownSocket: Sendable {
        var link: Int32
        var owner: TrafficOwner
        var segmentsIn: UInt32
        var segmentsOut: UInt32
        /// `TCPCounters.progress` then.
        var progress: UInt64
        /// When it last received, as that poll knew it (`SocketMoment.receipt`).
        var receipt: Duration?
        /// The first poll that saw it: a connection still unanswered has waited at least since.
        var firstSeen: Duration
        /// Since when it had waited at that poll (`SocketMoment.waitingSince`, with this rule).
        var waitingSince: Duration?
        /// `TCPCounters.dataSegmentsIn` then, and what its peer's segments sent again came to.
        var dataSegmentsIn: UInt32
        var resending: PeerResending?
    }

    /// Since when a waiting socket has waited. `SocketMoment`'s figure is a lower bound (a held
    /// socket's refused sends tell it within a factor of 2); one that received nothing since the
    /// last poll, which saw it waiting already, has waited since then at least (a busy
    /// application's refused writes read as the back-off alone at each poll: 6.3 s from 9.5 s
    /// to 12.9 s after the rule). One that never received has waited since it was first seen.
    /// One the host refuses to send for that made no progress since (`heldQuiet`: a
    /// `QuietSocket` held in the host) keeps its wait through segments the peer sends again: its
    /// ACKs do not leave.
    static func waitingSince(
        _ since: Duration, _ counters: TCPCounters, before: KnownSocket?, firstSeen: Duration? = nil, heldQuiet: Bool = false
    ) -> Duration {
        var since = since
        if let earlier = before?.waitingSince, heldQuiet || before?.segmentsIn == counters.segmentsIn { since = min(since, earlier) }
        if counters.segmentsIn == 0, let first = before?.firstSeen ?? firstSeen { since = min(since, first) }
        return since
    }

    /// A delta past 2^31 is a count that went back, not 2 billion segments since a poll.
    static func segments(_ counters: TCPCounters, since before: KnownSocket?) -> UInt64 {
        func plausible(_ delta: UInt32) -> UInt64 { delta < 1 << 31 ? UInt64(delta) : 0 }
        return plausible(counters.segmentsIn &- (before?.segmentsIn ?? 0)) + plausible(counters.segmentsOut &- (before?.segmentsOut ?? 0))
    }
}
