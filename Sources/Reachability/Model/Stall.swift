/// The thresholds and cadence of passive stall detection over the host's own TCP sockets
/// (`StallEvaluator` says the rule), plus DNS timeouts.
package struct StallSettings: Hashable, Sendable {
    /// How long a link's outgoing traffic may wait with nothing received before the link is
    /// stalled. A healthy path answers within a few round trips; 8 s is past the back-off of five
    /// retransmission timeouts in a row at the kernel's 200 ms minimum (6.2 s), which random loss
    /// of 40% reaches about once in ten losses, and past a 2 s round trip's own timeouts.
    public var window: Duration = .seconds(8)
    /// Failing sockets needed (at once, or closed within `window`): one socket alone cannot tell
    /// a dead path from a dead peer or a lossy one.
    public var minimumSockets: Int = 2
    /// Consecutive DNS timeouts on a link's servers that count as a stall on their own
    /// (Android: `data_stall_consecutive_dns_timeout_threshold`, 5). 0 turns DNS evidence off.
    public var dnsTimeouts: Int = 5
    /// The poll interval while there is TCP traffic to judge and nothing is suspected (Android
    /// polls every 20 s).
    public var pollInterval: Duration = .seconds(20)
    /// The longest interval the back-off reaches while sockets exist but none moves.
    public var maximumPollInterval: Duration = .seconds(160)
    /// The poll interval while a stall is suspected or flagged: it is confirmed or cleared within
    /// this much of the evidence.
    public var suspectInterval: Duration = .seconds(2)
    /// How long reachd's own question to a suspect link's nameserver may go unanswered before
    /// it counts as one more failing connection of the host's (`StallNameserverAnswer`): one
    /// poll's 16 queries, all lost; at 40% random loss each way that is about one chance in a
    /// thousand. A path that died already kept a connection waiting for `window`; this only
    /// tells a dead path from a dead peer, so it may be short.
    public var nameserverPatience: Duration = .seconds(2)
    /// Owners up to this uid are the host's own: their evidence alone can flag a link for
    /// everyone. Root only: a system account is one user like any other (www-data's two
    /// connections into a black hole flagged the host when every uid up to Debian's SYS_UID_MAX,
    /// 999, was the host's, and anyone who can run code as a service's account is that account).
    public var systemUserMaximum: UInt32 = 0

    public init() {}
}

/// What one poll concluded about one link.
package enum StallVerdict: Hashable, Sendable, CustomStringConvertible {
    /// Nothing to judge: no TCP socket of this link and no DNS timeouts. Never a stall.
    case noEvidence
    /// Traffic was judged and something arrived, or what waits has not waited long enough to say.
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
package struct StallCauses: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Sockets in retransmission back-off, nothing received (the TCP rule).
    public static let tcpRetransmissions = StallCauses(rawValue: 1 << 0)
    /// Consecutive DNS timeouts on the link's servers.
    public static let dnsTimeouts = StallCauses(rawValue: 1 << 1)
}

/// The figures behind a link's verdict, as a user is shown them.
package struct StallEvidence: Hashable, Sendable {
    /// TCP sockets of this link the last poll judged: connections the host started to
    /// destinations beyond the link's own subnets.
    public var socketsJudged: Int = 0
    /// Sockets waiting in retransmission back-off (or closed so within the window) with nothing
    /// received since they began waiting.
    public var socketsFailing: Int = 0
    /// The owners (root's count as the host's, each other uid as one) those belong to.
    public var owners: Int = 0
    /// How long the oldest of them has waited with nothing received on the link for its owner.
    public var waiting: Duration = .zero
    /// Time since a judged socket of this link last received a segment; nil when none ever did.
    public var sinceReceive: Duration?
    /// Consecutive DNS timeouts on the link's servers, as reported by the resolver.
    public var dnsTimeouts: Int = 0
    /// reachd's own queries to a nameserver beyond the link went unanswered past their
    /// patience: one more failing connection beside each owner's (`StallNameserverAnswer`).
    public var nameserverSilent: Bool = false
    /// Retransmissions the host itself refused to send within the window, while this link's
    /// connections failed: the kernel's count of retransmissions that failed inside the host
    /// (TcpExt TCPRetransFail: a firewall rule of the output or postrouting hook, or a queue
    /// discipline, dropped the segment before it left). Counted for the whole host, so told
    /// for each link whose connections failed as it grew.
    public var retransmissionsRefused: Int = 0
    /// Of `socketsFailing`, those that closed failing within the window (the rest are open).
    public var socketsClosedFailing: Int = 0
    /// Of `socketsFailing`, those whose data the host itself refuses to send
    /// (`TCPCounters.sendsRefused`): nothing of theirs left.
    public var socketsHeldInHost: Int = 0

    public init() {}
}

/// One link's state after a poll.
package struct LinkStall: Hashable, Sendable {
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

/// A connection to open again while a link is stalled: from `source` (so the kernel routes it
/// as the failing one) to `destination`:`port`.
package struct StallRecheck: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var source: IPAddress
    public var destination: IPAddress
    public var port: UInt16

    public init(interfaceIndex: Int32, source: IPAddress, destination: IPAddress, port: UInt16) {
        self.interfaceIndex = interfaceIndex
        self.source = source
        self.destination = destination
        self.port = port
    }
}

/// What reachd's own question to one of a suspect link's nameservers came to by a poll
/// (`StallReport.nameserverChecks` asks for them). The server is a destination no caller chose,
/// beyond the link's gateway: an answer proves the path works, whatever one peer does; silence
/// corroborates the sockets that fail.
package struct StallNameserverAnswer: Hashable, Sendable {
    public var interfaceIndex: Int32
    /// When its first query went, on the evaluator's clock.
    public var since: Duration
    /// Whether the server answered anything (even a refusal, or its port unreachable).
    public var answered: Bool

    public init(interfaceIndex: Int32, since: Duration, answered: Bool) {
        self.interfaceIndex = interfaceIndex
        self.since = since
        self.answered = answered
    }
}

/// The outcome of one poll: a verdict for every link with evidence, and when to poll again.
package struct StallReport: Hashable, Sendable {
    /// Links with TCP sockets or DNS timeouts, by interface index; a link absent here has no evidence.
    public var links: [LinkStall]
    /// When the next poll is worth making: `suspectInterval` while a stall is suspected or
    /// flagged, `pollInterval` while traffic moves (doubling up to `maximumPollInterval` while it
    /// does not); nil when there is no TCP traffic to judge at all, until something shows some.
    public var nextPoll: Duration?
    /// Sockets in the sample that were not judged: toward this host, its own subnets or
    /// link-local addresses, opened by a peer to a local service, or on no link of this host.
    public var socketsIgnored: Int
    /// For each link stalled by the TCP rule, one connection the host's own sockets were trying:
    /// reachd opens it again until the next poll, so a path that returns is seen at once rather
    /// than at the next retransmission of connections deep in exponential back-off.
    public var rechecks: [StallRecheck]
    /// Links whose traffic is suspected or stalled: reachd asks one of each link's nameservers
    /// beyond its gateway until the next poll, which hands the outcome back
    /// (`StallNameserverAnswer`).
    public var nameserverChecks: [Int32]
    /// The verdicts of each watched control group's own sockets, by cgroup id
    /// (`ControlGroupStalls`); a group without evidence has none listed.
    public var controlGroups: [UInt64: [LinkStall]] = [:]

    public init(
        links: [LinkStall], nextPoll: Duration?, socketsIgnored: Int = 0, rechecks: [StallRecheck] = [],
        nameserverChecks: [Int32] = []
    ) {
        self.links = links
        self.nextPoll = nextPoll
        self.socketsIgnored = socketsIgnored
        self.rechecks = rechecks
        self.nameserverChecks = nameserverChecks
    }

    /// The link's verdict; `.noEvidence` for a link the report does not list.
    public func link(_ interfaceIndex: Int32) -> LinkStall {
        links.first { $0.interfaceIndex == interfaceIndex }
            ?? LinkStall(interfaceIndex: interfaceIndex, verdict: .noEvidence, evidence: StallEvidence())
    }

    public var stalledLinks: [Int32] { links.filter(\.isStalled).map(\.interfaceIndex) }
}
