/// Who a judged socket's evidence speaks for. Root is the host's own: no other user can open a
/// socket as root; so is reachd's own account (its rechecks of the host's failing connections
/// and the administrator's probe). Every other uid, a system account such as www-data too, is
/// one user.
package enum TrafficOwner: Hashable, Sendable {
    case host
    case user(UInt32)
    /// A socket first seen as it closed: the kernel's destroy event names no owner, so its
    /// receipt may be anyone's, one user's short requests included. It speaks for nobody: it
    /// neither ends an owner's suspicion nor counts as a second owner.
    case unattributed
    /// A watched unit's cgroup (`StallEvaluator.separateGroups`), whatever its uid: one owner
    /// as a user is, so one unit's failing connections never flag the host alone (its own
    /// verdict is `ControlGroupStalls`'), nor do its receipts clear another owner's.
    case group(UInt64)

    package init(uid: UInt32, systemUserMaximum: UInt32, own: UInt32? = nil) {
        // nobody (65534) is above any SYS_UID_MAX: anyone may run as nobody.
        self = uid <= systemUserMaximum || uid == own ? .host : .user(uid)
    }

    package var isUser: Bool {
        switch self {
        case .user, .group: true
        case .host, .unattributed: false
        }
    }
}

/// Which sockets stall detection judges, and what one socket says at one instant. Pure.
///
/// Judged: connections the host started to destinations beyond the link's own subnets. Not
/// judged: sockets toward loopback or the host's own addresses, toward link-local addresses or a
/// peer on the link's subnet (the gateway itself answers while the path beyond it is dead), and
/// connections a peer opened to a local service (their local port is a listener's): a remote
/// peer that stops acknowledging says nothing of the host's path.
package struct StallAttribution {
    /// The link holding each local address.
    private var owner: [IPAddress: Int32] = [:]
    /// Each link's subnets (prefixes shorter than a host route).
    private var subnets: [Int32: [IPPrefix]] = [:]
    /// Local ports with a listener on any address, and listeners bound to one address.
    private var wildcardListeners: Set<UInt16> = []
    private var boundListeners: Set<Listener> = []

    private struct Listener: Hashable {
        var address: IPAddress
        var port: UInt16
    }

    package init(addresses: [Address]) {
        owner.reserveCapacity(addresses.count)
        for address in addresses {
            owner[address.address] = address.interfaceIndex
            let full = address.address.family == .ipv4 ? 32 : 128
            if address.prefix.length < full { subnets[address.interfaceIndex, default: []].append(address.prefix) }
        }
    }

    /// Learns a listening socket (state LISTEN) of this poll.
    package mutating func listen(_ sample: TCPSocketSample) {
        if sample.source.isUnspecified {
            wildcardListeners.insert(sample.sourcePort)
        } else {
            boundListeners.insert(Listener(address: sample.source, port: sample.sourcePort))
        }
    }

    /// The link whose path `sample` judges; nil when it judges none.
    package func link(of sample: TCPSocketSample) -> Int32? {
        let destination = sample.destination
        if destination.isUnspecified || destination.isLoopback || destination.isLinkLocal || owner[destination] != nil {
            return nil
        }
        if wildcardListeners.contains(sample.sourcePort)
            || boundListeners.contains(Listener(address: sample.source, port: sample.sourcePort))
        {
            return nil
        }
        guard let link = sample.boundInterface != 0 ? sample.boundInterface : owner[sample.source] else { return nil }
        if let prefixes = subnets[link], prefixes.contains(where: { $0.contains(destination) }) { return nil }
        return link
    }
}

/// A socket that made no progress (`TCPCounters.progress`) since the last poll that saw it.
package struct QuietSocket {
    /// That poll's time.
    package var since: Duration
    /// When it last received, as that poll knew it.
    package var receipt: Duration?
}

/// What one socket's counters say at the instant they were read: when it last received a
/// segment, and whether (since when) it waits in retransmission back-off.
package struct SocketMoment {
    /// When the socket last received a segment; nil when it never did (or cannot say).
    package var receipt: Duration?
    /// When it began waiting, when it waits for an acknowledgement through at least one
    /// retransmission timeout (or its SYN was retransmitted); nil when it does not.
    package var waitingSince: Duration?
    /// It waits because the host itself refuses to send its data (`TCPCounters.sendsRefused`).
    package var heldInHost = false

    /// The kernel's times since an event are jiffies differences: a field never set (an ACK on a
    /// socket that never had one) reads as the time since boot or garbage. Past a day it is read
    /// as unknown.
    package static let plausible: UInt32 = 86_400_000

    /// `quiet`: what the last poll knew of it, when it made no progress since.
    package init(_ sample: TCPSocketSample, at now: Duration, quiet: QuietSocket? = nil) {
        guard let counters = sample.counters else { return }
        let sinceReceipt = min(counters.millisecondsSinceAckReceived, counters.millisecondsSinceDataReceived)
        if sample.state == .synSent || counters.segmentsIn == 0 {
            receipt = nil
        } else if sinceReceipt < Self.plausible {
            receipt = now - .milliseconds(sinceReceipt)
        } else if sample.state == .closed {
            // A closed socket that received without an ACK time: a reset, just now.
            receipt = now
        }

        // A closed socket's queue is purged before its last counters are taken: timeouts in a
        // row at its end say it closed waiting (an application that gave up on a dead path).
        if counters.sendsRefused > 0, sample.state == .established {
            // Each refused send backs off from the base timeout the kernel reports: the k-th
            // refused probe goes rto * (2^k - 1) after the first refused send. The kernel counts
            // a refused send as data sent, so the time since data was last sent is how long ago
            // the k-th went (when it is less than the back-off now running, rto * 2^k): without
            // it a socket held 12 s read as held 6.3 s (k = 5). Never more than since the last ACK.
            let k = Int(min(counters.sendsRefused, 30))
            let rto = Duration.microseconds(Int64(counters.retransmissionTimeoutMicroseconds))
            var waited = rto * ((1 << k) - 1)
            let sinceSent = Duration.milliseconds(counters.millisecondsSinceDataSent)
            if sinceSent < rto * (1 << k) { waited += sinceSent }
            var sinceAck = Duration.milliseconds(counters.millisecondsSinceAckReceived)
            if let quiet {
                // Nothing of its data can have left since that poll: an ACK since acknowledged
                // nothing (the peer sending its own data again, as the host's ACKs do not reach
                // it, every one of its back-offs): no receipt, and no bound on the wait.
                receipt = quiet.receipt
                sinceAck = max(sinceAck, now - quiet.since)
            }
            if counters.millisecondsSinceAckReceived < Self.plausible { waited = min(waited, sinceAck) }
            heldInHost = true
            waitingSince = now - waited
            return
        }
        let outstanding = sample.state == .synSent || sample.state == .closed || counters.unacknowledged > 0
        guard outstanding, counters.consecutiveTimeouts > 0 else { return }
        // A lower bound on how long the oldest unacknowledged segment has waited: timeouts in a
        // row that each double the timeout (which the kernel reports backed off) add up to
        // rto * (1 - 2^-k) by the k-th retransmission, and a retransmission of data counts as
        // data sent, so the time since data was last sent is how long ago the k-th one went
        // (when it is less than the timeout now running; a FIN or a SYN carries no data and
        // leaves it alone). A SYN's first timeouts may be linear instead (tcp_syn_linear_timeouts,
        // Linux 6.5, 4 by default, the initial 1 s each, the timeout reported unchanged): up to 4
        // of them add up to k s at least. Never more than since the last ACK: an idle socket's
        // last ACK may be long before its first unanswered segment, so that alone bounds nothing.
        let k = Int(min(counters.consecutiveTimeouts, 30))
        let rto = Duration.microseconds(Int64(counters.retransmissionTimeoutMicroseconds))
        var waited = rto - rto / (1 << k)
        if counters.segmentsIn == 0 {
            waited = max(waited, min(rto, .seconds(1)) * min(k, 4))
        } else {
            let sinceSent = Duration.milliseconds(counters.millisecondsSinceDataSent)
            if sinceSent < rto { waited += sinceSent }
            if counters.millisecondsSinceAckReceived < Self.plausible {
                waited = min(waited, .milliseconds(counters.millisecondsSinceAckReceived))
            }
        }
        waitingSince = now - waited
    }
}

/// A peer sending again what the host already received: data segments arrive and nothing new
/// does (`TCPCounters.progress` stands), while the host owes it nothing. The host's ACKs do not
/// reach it (a path dead on its way out, a wall of the host's own output): a download's only
/// sign, since the host has nothing in flight and never backs off itself.
package struct PeerResending: Sendable, Equatable {
    /// When new data last arrived: the peer has waited for its acknowledgement since about then.
    package var since: Duration
    /// Data segments that arrived since without progress, as far as polls saw.
    package var segments: UInt32
    /// The last poll that counted one.
    package var lastSeen: Duration
    /// Whether they say the peer waits, not a one-off: at least three (one is a tail loss probe,
    /// two a timeout's besides; a peer whose timeouts double from 200 ms sends its third 1.4 s
    /// after the data), or one after a poll that came 1.4 s past the data.
    package var isEvidence = false

    static let evidence: UInt32 = 3
    static let late: Duration = .milliseconds(1400)
    /// How long after the data a first one still counts: a peer's keepalive on a socket idle
    /// for longer (a byte sent again, from some systems) is not a wait.
    static let span: Duration = .seconds(30)

    /// The counters of an established socket that owes its peer nothing and holds nothing for its
    /// reader: nothing unread (else the peer probes a full window), nothing of its own in flight,
    /// not backed off, no send refused. Only such a socket's arrivals can be a peer's resending.
    private static func owingNothing(_ sample: TCPSocketSample) -> TCPCounters? {
        guard let counters = sample.counters, sample.state == .established, sample.unread == 0,
            counters.unacknowledged == 0, counters.consecutiveTimeouts == 0, counters.sendsRefused == 0
        else { return nil }
        return counters
    }

    /// When to look at a socket again whose new data stopped at least `late` ago, with nothing of
    /// its own in flight, that received since the last poll (`progressed`) or has a peer that
    /// may be sending again: as a peer whose timeouts double from 200 ms has sent again by then
    /// if it waits (its next comes within the time since the data, plus 200 ms). Without it, the
    /// first sign of a download whose ACKs die came two polls after the death (20.4 s median).
    package static func lookAgain(_ sample: TCPSocketSample, progressed: Bool) -> Duration? {
        guard progressed, let counters = owingNothing(sample), counters.dataSegmentsIn > 0 else { return nil }
        let sinceData = Duration.milliseconds(counters.millisecondsSinceDataReceived)
        guard sinceData >= late, sinceData <= span else { return nil }
        return sinceData + .milliseconds(500)
    }

    /// What the socket says now, given what the last poll knew (`before`, and that poll's data
    /// segments and progress); nil when it shows no peer resending. A reader with data unread
    /// (the peer probing its full window), a socket of its own in back-off or with data in
    /// flight, or a kernel without `tcpi_data_segs_in` show none. Once evidence, it stands
    /// without new arrivals only as long as a peer whose timeouts double would take to send its
    /// next: twice the time from the data to the last one seen, and a poll's grace.
    package static func reading(
        _ sample: TCPSocketSample, before: PeerResending?, dataSegmentsIn: UInt32, progress: UInt64,
        lastPoll: Duration, at now: Duration, grace: Duration
    ) -> PeerResending? {
        guard let counters = owingNothing(sample), counters.progress > 0, counters.progress == progress else { return nil }
        let arrived = counters.dataSegmentsIn &- dataSegmentsIn
        guard arrived < 1 << 31 else { return nil }
        if arrived == 0 {
            guard let before, before.isEvidence, now - before.since <= (before.lastSeen - before.since) * 2 + grace else { return nil }
            return before
        }
        var resending = before ?? PeerResending(since: now, segments: 0, lastSeen: now)
        if before == nil {
            let sinceData = Duration.milliseconds(counters.millisecondsSinceDataReceived)
            guard sinceData <= span else { return nil }
            resending.since = now - sinceData
        }
        resending.segments += arrived
        resending.lastSeen = now
        resending.isEvidence = resending.isEvidence || resending.segments >= evidence || lastPoll - resending.since >= late
        return resending
    }
}
