/// Passive stall detection, pure: the host's TCP sockets (a sock_diag dump, and the last counters
/// of sockets as they close) and the resolver's DNS timeouts in, a verdict per link out. No I/O
/// and no clock: the caller gives each input's time.
///
/// The rule judges what is true at the instant of a poll, not counters between two polls. Per
/// link and per owner (root is the host's own, each other uid, system accounts included, one;
/// a watched unit's cgroup one, whatever its uid: `separateGroups`):
/// - a socket *fails* while it waits for an acknowledgement through at least one retransmission
///   timeout in a row (`tcpi_retransmits`, with data or a FIN unacknowledged, or a SYN never
///   answered); a socket that closed so (its last counters arrive with the kernel's destroy
///   event) still counts for `window`; so does one whose peer sends again what it received
///   (`PeerResending`: its ACKs do not get out), from when new data last came;
/// - any segment received by a socket of that owner on the link (`tcpi_last_ack_recv`,
///   `tcpi_last_data_recv`, or as it closes, when a poll saw it before) ends the owner's
///   suspicion;
/// - the owner's traffic is stalled when at least `minimumSockets` sockets failed since its last
///   receive and the oldest has waited `window` (8 s) with nothing received; half of it when
///   the host itself refuses to send the data of each (`claims`).
/// The link is stalled for everyone when the host's own traffic is, or that of at least two users,
/// and within `window` neither the host's own traffic received anything nor that of two users
/// or more. Or when DNS timed out `dnsTimeouts` times in a row on the link's servers. Once the
/// sockets showed a stall, it stays while the host's traffic (or two users') still fails,
/// however few sockets: only a receipt ends it, never the failures of the moment dipping below
/// `minimumSockets` between two attempts of an application that retries.
///
/// One failing socket alone cannot tell a dead path from a dead or a very lossy peer. While any
/// owner's traffic is suspected, reachd asks one of the link's nameservers beyond its gateway
/// itself (a destination nobody chose; `nameserverChecks`, `StallNameserverAnswer`): a question
/// unanswered for `nameserverPatience` counts as one more failing connection of each owner's,
/// and as the host's evidence, so a lone upload whose path died is flagged, and a lone
/// connection to a dead peer is not (the server answers). An answer is not a receipt: it changes
/// nothing the sockets show (a provider's network can carry DNS to its own servers and nothing
/// else).
///
/// Why it cannot be steered by one unprivileged user: its sockets are one owner, which alone
/// neither flags a link nor clears what another owner's sockets show; sockets toward the link's
/// own subnet (the gateway) and connections a peer opened to a local service are not judged. A
/// socket first seen as it closes names no owner: its failure only hastens the next poll, and
/// what it received speaks for nobody (as the host's, one account's short GETs once a second
/// cleared root's real stall in 2 s: issue 51). A path that returns is seen by reachd's own
/// rechecks of the host's failing connections: it clears within a poll or two.
///
/// Where this differs from Android's rule (TcpSocketTracker: per poll, 10 segments sent since the
/// last receive, 80% of them retransmitted): counters between polls mix the moments before and
/// after a path died, exponential back-off sends too few segments to reach a count for minutes,
/// and sockets born and closed between two polls are never seen. The kernel's own state of each
/// socket says at once how long it has been waiting.
package struct StallEvaluator: Sendable {
    public var settings: StallSettings
    /// Watched units' cgroups: their sockets are each group's, one owner like a user
    /// (`TrafficOwner.group`), whatever uid they run as.
    public var separateGroups: Set<UInt64> = []

    /// What the last poll learnt of each judged socket, by cookie: who its evidence speaks for,
    /// when its last counters are handed over as it closes.
    private var known: [UInt64: KnownSocket] = [:]
    private var memory: [Int32: LinkMemory] = [:]
    /// Listeners and subnets of the last poll, to judge closing sockets between polls.
    private var attribution = StallAttribution(addresses: [])
    /// Judged sockets closed since the last poll: there is traffic, even if none is left.
    private var closedSincePoll = 0
    /// Segments those closed sockets moved since the last poll, and when it came (`SocketTally.busy`).
    private var segmentsSincePoll: UInt64 = 0
    private var lastPoll: Duration?
    private var interval: Duration
    /// Polls so far: which failing connection a recheck takes turns with.
    private var polls = 0
    /// reachd's own questions to each link's nameserver, and their answers.
    private var questions = StallNameserverQuestions()
    /// The host's count of retransmissions refused inside it, at the last poll that had one.
    private var refusedCount: UInt64?
    /// When the poll planned before a look again (`PeerResending.lookAgain`) was due: a look that
    /// finds nothing moved keeps that cadence.
    private var resume: Duration?

    /// How long an answer stands for failures that began before it. A connection to a dead peer
    /// stays in back-off, suspected, for up to 15 minutes (tcp_retries2): asked at every poll,
    /// that would be 8 queries a second to a server that keeps answering; so 16 every 30 s,
    /// while a failure that begins after the answer (the path dying under an upload that had a
    /// moment of loss) is asked about at once.
    package static let answeredPause: Duration = .seconds(30)

    /// One poll's count of a link's judged sockets and its owners' latest receives.
    private struct LinkTally {
        var link: Int32
        var judged = 0
        var receipts = Receipts()
    }

    /// reachd's own uid: its sockets are the host's (see `TrafficOwner`).
    private let ownUID: UInt32?

    public init(settings: StallSettings = StallSettings(), ownUID: UInt32? = nil) {
        self.settings = settings
        self.ownUID = ownUID
        interval = settings.pollInterval
    }

    /// What a closing socket asks of the poll cadence.
    public enum Closure: Sendable {
        /// Not the host's path (loopback, the link's subnet, a local service's peer).
        case ignored
        /// The host's traffic exists: worth a poll soon if none is planned.
        case traffic
        /// It closed failing: worth a poll soon to see whether others fail too.
        case failing
    }

    /// Whether the last poll judged the socket `cookie`.
    public func knows(_ cookie: UInt64) -> Bool { known[cookie] != nil }

    /// Takes a socket's last counters as it closes (sock_diag's destroy event).
    public mutating func closed(_ sample: TCPSocketSample, at now: Duration) -> Closure {
        let previous = known.removeValue(forKey: sample.cookie)
        guard let link = previous?.link ?? attribution.link(of: sample) else { return .ignored }
        closedSincePoll += 1
        if let counters = sample.counters { segmentsSincePoll &+= Self.segments(counters, since: previous) }
        let moment = SocketMoment(sample, at: now)
        // A closing socket no poll saw carries no owner: its receipt speaks for nobody (the type's doc).
        if let receipt = moment.receipt { memory[link, default: LinkMemory()].receipts.received(previous?.owner ?? .unattributed, at: receipt) }
        guard let waiting = moment.waitingSince, let counters = sample.counters else { return .traffic }
        let since = Self.waitingSince(waiting, counters, before: previous)
        // Unattributed failures are not evidence: anyone may close a socket that failed.
        if let owner = previous?.owner {
            memory[link, default: LinkMemory()].closed.append(Failure(owner: owner, since: since, end: now))
        }
        return .failing
    }

    /// Judges one poll.
    /// - Parameters:
    ///   - now: the poll's time on a monotonic clock (the same clock for every input).
    ///   - samples: every TCP socket of the host the dump returned.
    ///   - addresses: the host's addresses; a socket belongs to the link holding its source address
    ///     (its bound interface first, when it has one).
    ///   - dnsTimeouts: consecutive DNS timeouts per link (interface index), as the resolver counts them.
    ///   - nameservers: what the questions the last report asked for came to.
    ///   - retransmissionsRefused: the host's count of TCP retransmissions that failed inside it
    ///     (TcpExt TCPRetransFail), when it can be read: what it grew by since the last poll is told
    ///     for each link whose connections fail now.
    public mutating func poll(
        at now: Duration, samples: [TCPSocketSample], addresses: [Address], dnsTimeouts: [Int32: Int] = [:],
        nameservers: [StallNameserverAnswer] = [], retransmissionsRefused: UInt64? = nil
    ) -> StallReport {
        var attribution = StallAttribution(addresses: addresses)
        for sample in samples where sample.state == .listen { attribution.listen(sample) }
        self.attribution = attribution
        var sockets = tally(samples, at: now)
        // The first poll has no rate to go by (a socket it finds may be days old: its counts are
        // not this interval's): the next comes sooner, to learn it.
        let elapsed = now - (lastPoll ?? now)
        let busyCount = UInt64(max(elapsed.components.seconds, 1)) * Self.busyRate
        sockets.busy = lastPoll == nil ? !sockets.current.isEmpty : sockets.segments &+ segmentsSincePoll >= busyCount
        known = sockets.current
        closedSincePoll = 0
        segmentsSincePoll = 0
        lastPoll = now
        polls &+= 1
        let unanswered = questions.take(nameservers, patience: settings.nameserverPatience, at: now)
        takeRefused(retransmissionsRefused, failing: sockets.failures, at: now)
        var judged: [Int32: Int] = [:]
        for tally in sockets.tallies {
            judged[tally.link] = tally.judged
            for (owner, receipt) in tally.receipts.latest { memory[tally.link, default: LinkMemory()].receipts.received(owner, at: receipt) }
        }
        let verdicts = judgeLinks(judged: judged, failures: sockets.failures, unanswered: unanswered, dnsTimeouts: dnsTimeouts, at: now)
        let links = verdicts.links
        let nextPoll = schedule(
            suspected: verdicts.suspected || links.contains(where: \.isStalled), untilWindow: verdicts.untilWindow, sockets, at: now)
        // Asked while suspected, and while stalled only when the silence is what stalls it: a
        // stall the sockets show alone needs no question (an outage of hours asks nothing).
        let checks = links.filter { link in
            let index = link.interfaceIndex
            guard verdicts.suspectedLinks.contains(index), !link.isStalled || verdicts.corroborationStalled.contains(index) else { return false }
            guard let answered = questions.answers[index] else { return true }
            // Failures the answer explained are not asked about again; a new one is when it is the
            // host's or two owners' (one account's connections must not have reachd ask for it).
            let fresh = ((memory[index]?.closed ?? []) + (sockets.failures[index] ?? [])).filter { $0.since > answered }
            return fresh.contains { $0.owner == .host } || Set(fresh.map(\.owner)).count >= 2
        }.map(\.interfaceIndex)
        let asked = questions.asking(suspected: checks, ahead: sockets.lookAgainLinks, at: now)
        var rechecks: [StallRecheck] = []
        for link in links where link.causes.contains(.tcpRetransmissions) {
            guard let choices = sockets.candidates[link.interfaceIndex], !choices.isEmpty else { continue }
            rechecks.append(choices[polls % choices.count])
        }
        return StallReport(links: links, nextPoll: nextPoll, socketsIgnored: sockets.ignored, rechecks: rechecks, nameserverChecks: asked)
    }

    /// One poll's sockets, counted per link: what is known of each, each link's receipts, the
    /// failures, the host's own connections that may be opened again.
    private struct SocketTally {
        var current: [UInt64: KnownSocket] = [:]
        var tallies: [LinkTally] = []
        var failures: [Int32: [Failure]] = [:]
        var candidates: [Int32: [StallRecheck]] = [:]
        var ignored = 0
        var moved = false
        var inFlight = false
        /// Segments the sockets moved since the last poll (all of one born since).
        var segments: UInt64 = 0
        /// At least `busyRate` segments a second since the last poll.
        var busy = false
        /// The soonest a socket whose new data stopped asks to be looked at again, and the links
        /// of those that do (their nameserver is asked ahead of the look).
        var lookAgain: Duration?
        var lookAgainLinks: Set<Int32> = []
    }

    private func tally(_ samples: [TCPSocketSample], at now: Duration) -> SocketTally {
        var out = SocketTally()
        out.current.reserveCapacity(known.count)
        out.moved = closedSincePoll > 0
        // Per link, in order of first appearance: a host has a handful of links and owners, so
        // short arrays searched from the previous socket's slot beat dictionaries (a poll of
        // 10,000 sockets does this 10,000 times).
        var slot = 0
        for sample in samples where sample.state != .listen {
            guard let counters = sample.counters, let link = attribution.link(of: sample) else {
                out.ignored += 1
                continue
            }
            let owner = sample.controlGroup != 0 && separateGroups.contains(sample.controlGroup)
                ? .group(sample.controlGroup) : TrafficOwner(uid: sample.owner ?? 0, systemUserMaximum: settings.systemUserMaximum, own: ownUID)
            let before = known[sample.cookie]
            if before?.segmentsIn != counters.segmentsIn || before?.segmentsOut != counters.segmentsOut { out.moved = true }
            out.segments &+= Self.segments(counters, since: before)
            let quiet = before.flatMap { $0.progress == counters.progress ? QuietSocket(since: lastPoll ?? now, receipt: $0.receipt) : nil }
            var moment = SocketMoment(sample, at: now, quiet: quiet)
            let resending = before.flatMap {
                PeerResending.reading(
                    sample, before: $0.resending, dataSegmentsIn: $0.dataSegmentsIn, progress: $0.progress, lastPoll: lastPoll ?? now,
                    at: now, grace: settings.pollInterval)
            }
            if let resending {
                // What the peer sends again is no receipt: new data last came at `since`.
                moment.receipt = resending.since
                if resending.isEvidence, moment.waitingSince == nil { moment.waitingSince = resending.since }
            }
            let heldQuiet = moment.heldInHost && quiet != nil
            let waitingSince = moment.waitingSince.map { Self.waitingSince($0, counters, before: before, firstSeen: now, heldQuiet: heldQuiet) }
            out.current[sample.cookie] = KnownSocket(
                link: link, owner: owner, segmentsIn: counters.segmentsIn, segmentsOut: counters.segmentsOut, progress: counters.progress,
                receipt: moment.receipt, firstSeen: before?.firstSeen ?? now, waitingSince: waitingSince,
                dataSegmentsIn: counters.dataSegmentsIn, resending: resending)
            if slot >= out.tallies.count || out.tallies[slot].link != link {
                slot = out.tallies.firstIndex { $0.link == link } ?? out.tallies.count
                if slot == out.tallies.count { out.tallies.append(LinkTally(link: link)) }
            }
            out.tallies[slot].judged += 1
            // In flight and not failing: one that already fails (a dead peer's) asks no sooner poll.
            if counters.unacknowledged > 0, moment.waitingSince == nil { out.inFlight = true }
            if resending?.isEvidence != true, moment.waitingSince == nil,
                let look = PeerResending.lookAgain(sample, progressed: before.map { $0.progress != counters.progress } ?? false || resending != nil)
            {
                out.lookAgain = min(out.lookAgain ?? look, look)
                out.lookAgainLinks.insert(link)
            }
            if let receipt = moment.receipt { out.tallies[slot].receipts.received(owner, at: receipt) }
            if let since = waitingSince {
                out.failures[link, default: []].append(Failure(owner: owner, since: since, end: now, inHost: moment.heldInHost))
                // Only the host's own connections are opened again: never a destination a user chose.
                if owner == .host, sample.destinationPort != 0 {
                    out.candidates[link, default: []].append(StallRecheck(
                        interfaceIndex: link, source: sample.source, destination: sample.destination, port: sample.destinationPort))
                }
            }
        }
        return out
    }

    /// Each link's verdict: the sockets judged now, the failures remembered, the nameserver's
    /// silence and the DNS timeouts.
    private mutating func judgeLinks(
        judged: [Int32: Int], failures: [Int32: [Failure]], unanswered: Set<Int32>, dnsTimeouts: [Int32: Int], at now: Duration
    ) -> (links: [LinkStall], suspected: Bool, suspectedLinks: Set<Int32>, corroborationStalled: Set<Int32>, untilWindow: Duration?) {
        var links: [LinkStall] = []
        var untilWindow: Duration?
        var suspected = false
        var suspectedLinks: Set<Int32> = []
        var corroborationStalled: Set<Int32> = []
        let involved = Set(judged.keys).union(memory.keys).union(dnsTimeouts.filter { $0.value > 0 }.keys)
        for link in involved.sorted() {
            var remembered = memory[link] ?? LinkMemory()
            remembered.closed.removeAll { now - $0.end > settings.window }
            remembered.refused.removeAll { now - $0.time > settings.window }
            var judgement = judge(
                remembered, failing: remembered.closed + (failures[link] ?? []), corroborated: unanswered.contains(link), at: now)
            suspected = suspected || judgement.suspected
            if judgement.suspected { suspectedLinks.insert(link) }
            if judgement.suspected, let until = judgement.untilWindow { untilWindow = min(untilWindow ?? until, until) }
            if judgement.byCorroboration { corroborationStalled.insert(link) }
            judgement.evidence.socketsJudged = judged[link] ?? 0
            judgement.evidence.dnsTimeouts = dnsTimeouts[link] ?? 0
            judgement.evidence.retransmissionsRefused = remembered.refused.reduce(0) { $0 + $1.count }
            // A link with nothing judged, no failure remembered, no DNS evidence and no receipt
            // within the window is forgotten. A receipt within it stays: connections that each
            // close at once (attempts) leave none open at a poll, and a failure right after must
            // not read "nothing ever received".
            let receivedWithin = remembered.receipts.latest.contains { now - $0.time < settings.window }
            if judged[link] == nil, remembered.closed.isEmpty, judgement.evidence.dnsTimeouts == 0, !receivedWithin {
                memory[link] = nil
                continue
            }
            remembered.stalledBySockets = judgement.stalled && !judgement.byCorroboration
            memory[link] = remembered
            var causes: StallCauses = judgement.stalled ? .tcpRetransmissions : []
            if settings.dnsTimeouts > 0, judgement.evidence.dnsTimeouts >= settings.dnsTimeouts { causes.insert(.dnsTimeouts) }
            let verdict: StallVerdict =
                if !causes.isEmpty { .stalled } else if judged[link] != nil || judgement.evidence.dnsTimeouts > 0 { .flowing } else { .noEvidence }
            // Remembered failures that all ended before their owners' last receipts show
            // nothing: the link is kept in memory but not listed, which reads as no evidence.
            if verdict == .noEvidence, judgement.evidence.socketsFailing == 0 { continue }
            links.append(LinkStall(interfaceIndex: link, verdict: verdict, causes: causes, evidence: judgement.evidence))
        }
        return (links, suspected, suspectedLinks, corroborationStalled, untilWindow)
    }

    /// When the next poll comes: soon while anything is suspected or stalled, never without TCP
    /// traffic, else backing off while nothing moves.
    private mutating func schedule(suspected: Bool, untilWindow: Duration?, _ sockets: SocketTally, at now: Duration) -> Duration? {
        defer { if sockets.lookAgain == nil { resume = nil } }
        if suspected {
            interval = settings.pollInterval
            // At the instant the suspected owner's wait reaches the window, when that comes
            // before the next suspect poll: flagged at 8.0 s of waiting, not at up to 10.
            let crossing = untilWindow.map { max($0, Self.crossingFloor) + Self.crossingMargin } ?? settings.suspectInterval
            return min(settings.suspectInterval, settings.pollInterval, crossing)
        }
        if sockets.current.isEmpty && !sockets.moved {
            // No TCP traffic at all: no timer; a closing socket or the caller's trigger starts again.
            interval = settings.pollInterval
            return nil
        }
        if let resume, !sockets.moved {
            self.resume = nil
            return max(resume - now, Self.crossingFloor)
        }
        let ceiling = max(settings.maximumPollInterval, settings.pollInterval)
        interval = sockets.moved ? settings.pollInterval : min(interval * 2, ceiling)
        // Data in flight at the poll (an upload, a request sent), or busy traffic: the host
        // waits on the path right now, and no closing socket will say so if it dies under
        // connections held open. Half the interval halves the wait for the first poll to see it.
        let next = sockets.inFlight || sockets.busy ? min(interval, settings.pollInterval / 2) : interval
        guard let look = sockets.lookAgain, look < next else { return next }
        resume = now + next
        return max(look, Self.crossingFloor)
    }

    /// Forgets every socket and link: after the namespace or the host's paths were replaced
    /// wholesale, or while the host is offline.
    public mutating func reset() {
        known = [:]
        memory = [:]
        attribution = StallAttribution(addresses: [])
        closedSincePoll = 0
        segmentsSincePoll = 0
        lastPoll = nil
        interval = settings.pollInterval
        questions = StallNameserverQuestions()
        refusedCount = nil
        resume = nil
    }

    /// What the host's count of refused retransmissions grew by since the last poll, told to
    /// each link whose connections fail now: the count is the host's, and a link whose traffic
    /// flows lost nothing to it. A count that went back (another namespace's, a reset) starts over.
    private mutating func takeRefused(_ count: UInt64?, failing: [Int32: [Failure]], at now: Duration) {
        guard let count else { return }
        defer { refusedCount = count }
        guard let before = refusedCount, count > before else { return }
        let grown = Int(clamping: count - before)
        for link in failing.keys { memory[link, default: LinkMemory()].refused.append((now, grown)) }
    }
}
