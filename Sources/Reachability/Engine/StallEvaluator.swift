/// Passive stall detection, pure: the host's TCP sockets (a sock_diag dump) and the resolver's
/// DNS timeouts in, a verdict per link out. No I/O and no clock: the caller gives the poll's time.
///
/// Android NetworkStack's rule (TcpSocketTracker), per link: at each poll, take every socket's
/// counters since the previous poll (by cookie; a socket new since then counts from zero); if
/// nothing was received, add what was sent and retransmitted to the link's totals since its last
/// receive, else clear them. The link is stalled when, at this poll, nothing was received, at
/// least `minimumSegmentsSent` segments were sent since the last receive, and at least
/// `retransmittedPercent` of the segments sent in this poll were retransmissions (Android's test),
/// or of those sent since the last receive; or when its DNS servers timed out `dnsTimeouts` times
/// in a row. Any segment received clears the suspicion at the next poll; a link with nothing to
/// judge is never stalled.
///
/// Where this differs from Android: a stalled link stays stalled until a segment arrives (or its
/// sockets are gone). In exponential back-off a dead connection sends nothing for many seconds;
/// Android's share of the last poll is then 0% and its suspicion flaps off and on. The share since
/// the last receive also counts, so a slow trickle of retransmissions that never reaches 80% in
/// one poll still adds up. And the verdict is per link, sockets attributed by their source address
/// or bound interface, where Android judges one network by its socket mark (which needs
/// CAP_NET_ADMIN to read).
public struct StallEvaluator: Sendable {
    public var settings: StallSettings

    /// Each socket's counters at the previous poll, by cookie.
    private var previous: [UInt64: TCPCounters] = [:]
    private var tracks: [Int32: Track] = [:]
    private var polled = false
    private var interval: Duration

    private struct Track: Sendable {
        var sent: UInt64 = 0
        var retransmitted: UInt64 = 0
        var lastReceive: Duration?
        var firstJudged: Duration
        /// Stalled by the TCP rule at the previous poll: only a receive clears it.
        var stalled = false
    }

    private struct Poll {
        var sockets = 0
        var sent: UInt64 = 0
        var received: UInt64 = 0
        var retransmitted: UInt64 = 0
    }

    public init(settings: StallSettings = StallSettings()) {
        self.settings = settings
        interval = settings.pollInterval
    }

    /// Judges one poll.
    /// - Parameters:
    ///   - now: the poll's time on a monotonic clock (any origin, the same for every poll).
    ///   - samples: every TCP socket of the host the dump returned.
    ///   - addresses: the host's addresses; a socket belongs to the link holding its source address
    ///     (its bound interface first, when it has one). Sockets toward the host itself are ignored.
    ///   - dnsTimeouts: consecutive DNS timeouts per link (interface index), as the resolver counts them.
    public mutating func poll(
        at now: Duration, samples: [TCPSocketSample], addresses: [Address], dnsTimeouts: [Int32: Int] = [:]
    ) -> StallReport {
        var owner: [IPAddress: Int32] = [:]
        owner.reserveCapacity(addresses.count)
        for address in addresses { owner[address.address] = address.interfaceIndex }

        let baseline = !polled
        polled = true
        var current: [UInt64: TCPCounters] = [:]
        current.reserveCapacity(samples.count)
        // Per link, in order of first appearance: a host has a handful of links, so a short array
        // searched from the link of the previous socket beats a dictionary (two hashes a socket).
        var polls: [(link: Int32, poll: Poll)] = []
        var slot = 0
        var ignored = 0
        var moved = false
        for sample in samples {
            guard let counters = sample.counters else { continue }
            current[sample.cookie] = counters
            let destination = sample.destination.unmappedV4 ?? sample.destination
            if Self.isLoopback(destination) || owner[destination] != nil {
                ignored += 1
                continue
            }
            let source = sample.source.unmappedV4 ?? sample.source
            guard let link = sample.boundInterface != 0 ? sample.boundInterface : owner[source] else {
                ignored += 1
                continue
            }
            if slot >= polls.count || polls[slot].link != link {
                if let found = polls.firstIndex(where: { $0.link == link }) {
                    slot = found
                } else {
                    polls.append((link, Poll()))
                    slot = polls.count - 1
                }
            }
            polls[slot].poll.sockets += 1
            if !baseline {
                let before = previous[sample.cookie] ?? TCPCounters(segmentsOut: 0, segmentsIn: 0, totalRetransmits: 0)
                // The counters wrap at 2^32; a difference modulo 2^32 is right across one wrap.
                let sent = UInt64(counters.segmentsOut &- before.segmentsOut)
                let received = UInt64(counters.segmentsIn &- before.segmentsIn)
                // A retransmission is also a segment sent: never more of them than were sent.
                let retransmitted = min(UInt64(counters.totalRetransmits &- before.totalRetransmits), sent)
                polls[slot].poll.sent += sent
                polls[slot].poll.received += received
                polls[slot].poll.retransmitted += retransmitted
                if sent != 0 || received != 0 { moved = true }
            }
        }
        previous = current

        var links: [LinkStall] = []
        var judged = Set(polls.map(\.link))
        for (link, count) in dnsTimeouts where count > 0 { judged.insert(link) }
        var nextTracks: [Int32: Track] = [:]
        for link in judged.sorted() {
            let poll = polls.first { $0.link == link }?.poll ?? Poll()
            var track = tracks[link] ?? Track(firstJudged: now)
            if poll.received > 0 {
                track.sent = 0
                track.retransmitted = 0
                track.lastReceive = now
            } else {
                track.sent += poll.sent
                track.retransmitted += poll.retransmitted
            }

            var evidence = StallEvidence()
            evidence.socketsJudged = poll.sockets
            evidence.segmentsSentSinceReceive = track.sent
            evidence.retransmittedSinceReceive = track.retransmitted
            evidence.sinceReceive = now - (track.lastReceive ?? track.firstJudged)
            evidence.dnsTimeouts = dnsTimeouts[link] ?? 0

            evidence.sentThisPoll = poll.sent
            evidence.retransmittedThisPoll = poll.retransmitted

            var causes: StallCauses = []
            let percent = UInt64(min(max(settings.retransmittedPercent, 0), 100))
            let lastPoll = poll.sent > 0 && poll.retransmitted * 100 >= percent * poll.sent
            let sinceReceive = track.retransmitted * 100 >= percent * track.sent
            if !baseline, poll.received == 0, track.sent >= UInt64(max(settings.minimumSegmentsSent, 1)),
                lastPoll || sinceReceive || track.stalled
            {
                causes.insert(.tcpRetransmissions)
            }
            track.stalled = causes.contains(.tcpRetransmissions)
            nextTracks[link] = track
            if settings.dnsTimeouts > 0, evidence.dnsTimeouts >= settings.dnsTimeouts {
                causes.insert(.dnsTimeouts)
            }
            let verdict: StallVerdict
            if !causes.isEmpty {
                verdict = .stalled
            } else if !baseline, poll.received > 0 || track.sent > 0 || evidence.dnsTimeouts > 0 {
                verdict = .flowing
            } else {
                verdict = .noEvidence
            }
            links.append(LinkStall(interfaceIndex: link, verdict: verdict, causes: causes, evidence: evidence))
        }
        tracks = nextTracks

        let busy = moved || links.contains(where: \.isStalled) || (baseline && !polls.isEmpty)
        let ceiling = max(settings.maximumPollInterval, settings.pollInterval)
        interval = busy ? settings.pollInterval : (interval >= ceiling / 2 ? ceiling : interval * 2)
        return StallReport(links: links, nextPoll: interval, socketsIgnored: ignored)
    }

    /// Forgets every socket and link: the next poll is a baseline again (after the namespace or
    /// the host's paths were replaced wholesale).
    public mutating func reset() {
        previous = [:]
        tracks = [:]
        polled = false
        interval = settings.pollInterval
    }

    static func isLoopback(_ address: IPAddress) -> Bool {
        switch address {
        case .v4(let value): value >> 24 == 127
        case .v6(let hi, let lo): hi == 0 && lo == 1
        }
    }
}
