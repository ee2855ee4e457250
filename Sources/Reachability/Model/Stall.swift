/// The thresholds of passive stall detection: Android NetworkStack's data-stall rule (its
/// `DataStallUtils` defaults) over the TCP sockets that already exist, plus DNS timeouts.
public struct StallSettings: Hashable, Sendable {
    /// A link is suspected when at least this many segments were sent since it last received one
    /// (Android: `data_stall_min_packets_threshold`, 10).
    public var minimumSegmentsSent: Int = 10
    /// ... and at least this share, in percent, of the segments sent in the last poll (or since
    /// the last receive) were retransmissions (Android: `data_stall_tcp_packets_fail_percentage`, 80).
    public var retransmittedPercent: Int = 80
    /// Consecutive DNS timeouts on a link's servers that count as a stall on their own
    /// (Android: `data_stall_consecutive_dns_timeout_threshold`, 5). 0 turns DNS evidence off.
    public var dnsTimeouts: Int = 5
    /// The poll interval while there is TCP traffic to judge (Android polls every 20 s).
    public var pollInterval: Duration = .seconds(20)
    /// The longest interval the back-off reaches while there is no traffic.
    public var maximumPollInterval: Duration = .seconds(160)

    public init() {}
}

/// What one poll concluded about one link.
public enum StallVerdict: Hashable, Sendable, CustomStringConvertible {
    /// Nothing to judge: no TCP socket of this link and no DNS timeouts. Never a stall.
    case noEvidence
    /// Traffic was judged and something arrived, or too little was sent to say.
    case flowing
    /// Segments leave and nothing comes back (or DNS times out): the path is suspected dead.
    case stalled

    public var description: String {
        switch self {
        case .noEvidence: "no evidence"
        case .flowing: "flowing"
        case .stalled: "stalled"
        }
    }
}

/// Which rule a stalled verdict rests on.
public struct StallCauses: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Segments sent and retransmitted, none received (the TCP rule).
    public static let tcpRetransmissions = StallCauses(rawValue: 1 << 0)
    /// Consecutive DNS timeouts on the link's servers.
    public static let dnsTimeouts = StallCauses(rawValue: 1 << 1)
}

/// The figures behind a link's verdict, as a user is shown them.
public struct StallEvidence: Hashable, Sendable {
    /// TCP sockets of this link with counters in this poll.
    public var socketsJudged: Int = 0
    /// Segments these sockets sent since the link last received one (at a poll).
    public var segmentsSentSinceReceive: UInt64 = 0
    /// How many of those were retransmissions.
    public var retransmittedSinceReceive: UInt64 = 0
    /// Time since a poll last saw a segment arrive on this link, or since this link's traffic
    /// was first judged when no poll has seen one yet.
    public var sinceReceive: Duration = .zero
    /// Segments sent, and retransmitted, since the previous poll.
    public var sentThisPoll: UInt64 = 0
    public var retransmittedThisPoll: UInt64 = 0
    /// Consecutive DNS timeouts on the link's servers, as reported by the resolver.
    public var dnsTimeouts: Int = 0

    public init() {}

    /// The retransmitted share of the segments sent since the last receive, in percent (0 when
    /// nothing was sent).
    public var retransmittedPercent: Int { Self.percent(retransmittedSinceReceive, of: segmentsSentSinceReceive) }

    /// The retransmitted share of the segments sent since the previous poll, in percent. The
    /// rule judges both shares (Android's is this one): either may be the one that crossed
    /// `RetransmitPercent=`, so both are shown.
    public var retransmittedPercentThisPoll: Int { Self.percent(retransmittedThisPoll, of: sentThisPoll) }

    private static func percent(_ part: UInt64, of whole: UInt64) -> Int { whole == 0 ? 0 : Int(part * 100 / whole) }
}

/// One link's state after a poll.
public struct LinkStall: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var verdict: StallVerdict
    /// Empty unless `verdict` is `.stalled`.
    public var causes: StallCauses
    public var evidence: StallEvidence

    public init(interfaceIndex: Int32, verdict: StallVerdict, causes: StallCauses = [], evidence: StallEvidence) {
        self.interfaceIndex = interfaceIndex
        self.verdict = verdict
        self.causes = causes
        self.evidence = evidence
    }

    public var isStalled: Bool { verdict == .stalled }
}

/// The outcome of one poll: a verdict for every link with evidence, and when to poll again.
public struct StallReport: Hashable, Sendable {
    /// Links with TCP sockets or DNS timeouts, by interface index; a link absent here has no evidence.
    public var links: [LinkStall]
    /// When the next poll is worth making: `pollInterval` while there is traffic, longer (doubling
    /// up to `maximumPollInterval`) while there is none.
    public var nextPoll: Duration
    /// Sockets in the sample that belong to no link of this host (or only to its own addresses).
    public var socketsIgnored: Int

    public init(links: [LinkStall], nextPoll: Duration, socketsIgnored: Int = 0) {
        self.links = links
        self.nextPoll = nextPoll
        self.socketsIgnored = socketsIgnored
    }

    /// The link's verdict; `.noEvidence` for a link the report does not list.
    public func link(_ interfaceIndex: Int32) -> LinkStall {
        links.first { $0.interfaceIndex == interfaceIndex }
            ?? LinkStall(interfaceIndex: interfaceIndex, verdict: .noEvidence, evidence: StallEvidence())
    }

    public var stalledLinks: [Int32] { links.filter(\.isStalled).map(\.interfaceIndex) }
}
