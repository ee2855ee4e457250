extension StallEvaluator {
    /// A socket that failed: while it waits (`end` is the poll's time) or as it closed.
    package struct Failure: Sendable {
        package var owner: TrafficOwner
        package var since: Duration
        package var end: Duration
        /// The host itself refuses to send its data (`SocketMoment.heldInHost`).
        package var inHost = false
    }

    /// Each owner's latest receive on one link. A host has a handful of owners: a short array
    /// beats a dictionary (a poll of 10,000 sockets updates it 10,000 times).
    package struct Receipts: Sendable {
        package private(set) var latest: [(owner: TrafficOwner, time: Duration)] = []

        package func receipt(_ owner: TrafficOwner) -> Duration? { latest.first { $0.owner == owner }?.time }

        package var newest: Duration? { latest.map(\.time).max() }

        package mutating func received(_ owner: TrafficOwner, at time: Duration) {
            if let index = latest.firstIndex(where: { $0.owner == owner }) {
                if latest[index].time < time { latest[index].time = time }
            } else {
                latest.append((owner, time))
            }
        }
    }

    package struct LinkMemory: Sendable {
        /// When each owner's judged sockets last received a segment.
        package var receipts = Receipts()
        /// Sockets that closed failing, kept for `window`.
        package var closed: [Failure] = []
        /// The link's sockets showed a stall at the last poll (see `judge`: it holds); one
        /// corroborated by the nameserver's silence alone ends when it answers.
        package var stalledBySockets = false
        /// Retransmissions refused inside the host while this link's connections failed, by poll.
        package var refused: [(time: Duration, count: Int)] = []

        package func receipt(_ owner: TrafficOwner) -> Duration? { receipts.receipt(owner) }
    }

    package struct Judgement {
        package var stalled = false
        /// Something fails that has not (yet) made a stall: worth polling soon.
        package var suspected = false
        /// Stalled only because the nameserver is silent too: keep asking, to see it clear.
        package var byCorroboration = false
        /// How long until an owner with enough failing sockets has waited the window, if it still
        /// fails then: the poll that would flag it need not wait for the next suspect interval.
        package var untilWindow: Duration?
        package var evidence = StallEvidence()
    }

    /// The rule of the type's doc, for one link. `corroborated`: reachd's own question to the
    /// link's nameserver went unanswered for its patience, one more failing connection for every
    /// owner, and the host's evidence beyond any one user's.
    package func judge(_ memory: LinkMemory, failing: [Failure], corroborated: Bool, at now: Duration) -> Judgement {
        var judgement = Judgement()
        var byOwner: [TrafficOwner: [Failure]] = [:]
        for failure in failing {
            // A failure that ended before its owner's last receipt is over.
            if let receipt = memory.receipt(failure.owner), failure.end <= receipt { continue }
            byOwner[failure.owner, default: []].append(failure)
        }
        var hostStalled = false
        var corroboratedOnly = false
        var usersStalled = 0
        var longest = Duration.zero
        var hostPatience = settings.window
        let minimum = max(settings.minimumSockets, 1)
        for (owner, failures) in byOwner {
            func wait(of failures: [Failure]) -> Duration {
                let oldest = failures.map(\.since).min() ?? now
                return now - max(oldest, memory.receipt(owner) ?? oldest)
            }
            let waited = wait(of: failures)
            longest = max(longest, waited)
            judgement.evidence.socketsFailing += failures.count
            judgement.evidence.socketsClosedFailing += failures.count { $0.end < now }
            judgement.evidence.socketsHeldInHost += failures.count(where: \.inHost)
            var flagged = false
            for claim in Self.claims(failures, settings) where claim.failures.count >= minimum {
                if owner == .host { hostPatience = min(hostPatience, claim.patience) }
                let claimWaited = wait(of: claim.failures)
                if claimWaited >= claim.patience {
                    flagged = true
                } else {
                    let until = claim.patience - claimWaited
                    judgement.untilWindow = judgement.untilWindow.map { min($0, until) } ?? until
                }
            }
            if flagged {
                if owner == .host { hostStalled = true } else { usersStalled += 1 }
            } else if corroborated, failures.count + 1 >= minimum, waited >= settings.window {
                // The host's own question failed beside this owner's sockets: two destinations,
                // one of them no user chose.
                corroboratedOnly = true
            }
            // Suspected while the owner received nothing for a while: polls come often until it
            // is confirmed or cleared. A socket to a dead peer beside traffic that keeps
            // receiving is not worth them.
            if waited >= Self.suspicion { judgement.suspected = true }
        }
        // Cleared by the host's own receipts or two users': never one user's, nor nobody's (unattributed).
        let receivedLately = memory.receipts.latest.filter { now - $0.time < settings.window }
        let hostReceivedLately = memory.receipt(.host).map { now - $0 < hostPatience } ?? false
        let usersReceivedLately = receivedLately.count { $0.owner.isUser }
        let bySockets = hostStalled || usersStalled >= 2
        // Once stalled, the link stays so while the host's traffic (or two users') still fails
        // and nothing below clears it: a stall ends on evidence that traffic flows, never because
        // the failures of the moment dipped below MinSockets between two attempts of an
        // application that retries (issue 48: it cleared for 1-2 s in 8 of 23 runs).
        // "Still fails": a socket failing now, or one that closed failing within two polls of a
        // suspected link, so the stall outlives the gap between two attempts, not the window.
        let stillFailing = byOwner.filter { $0.value.contains { now - $0.end <= settings.suspectInterval * 2 } }.keys
        let holding = memory.stalledBySockets && (stillFailing.contains(.host) || stillFailing.count { $0.isUser } >= 2)
        judgement.stalled = (bySockets || corroboratedOnly || holding) && !hostReceivedLately && usersReceivedLately < 2
        judgement.byCorroboration = judgement.stalled && !bySockets && !holding
        judgement.evidence.owners = byOwner.count
        judgement.evidence.nameserverSilent = corroborated
        judgement.evidence.waiting = longest
        judgement.evidence.sinceReceive = memory.receipts.newest.map { now - $0 }
        return judgement
    }

    /// What can flag an owner's traffic, each with its patience: all its failures, after
    /// `window`, which waits out what random loss can do; and those whose data the host itself
    /// refuses to send (`Failure.inHost`), after half of it, since no loss causes that: the half
    /// only skips a rule set reloaded. Apart, so reachd's own rechecks behind the same wall
    /// (SYNs, not held) do not make the held ones wait the whole window. It matters because a
    /// held connection's wait reads short: each segment the peer sends again (the host's ACK
    /// does not get out either) restarts the kernel's back-off, and the wait read from it. So a
    /// wall just after a poll, seen 9.5 s later, read as 2 s old once (the peer's fifth resend
    /// came at 7.1 s) and was flagged 15.1 s after the rule, where issue 48 asks 15 s; now 12.1 s.
    static func claims(_ failures: [Failure], _ settings: StallSettings) -> [(failures: [Failure], patience: Duration)] {
        let held = failures.filter(\.inHost)
        return held.isEmpty ? [(failures, settings.window)] : [(failures, settings.window), (held, settings.window / 2)]
    }

    /// How long an owner's sockets must fail with nothing received before polls come every
    /// `suspectInterval`: past one retransmission timeout at its 200 ms minimum, twice over.
    package static let suspicion: Duration = .seconds(1)
}

extension StallEvaluator {
    /// Segments a second that make the host's traffic busy: polls come every half interval, so
    /// a path that dies under it with no socket closing (connections held open) is seen within
    /// about half of `pollInterval` plus `window`. A trickle (a keep-alive, a chat client's
    /// byte every 10 s) keeps the full interval: its wake-ups would be most of the host's.
    package static let busyRate: UInt64 = 1

    /// A poll at a wait's crossing of the window comes this much after it (the kernel's times
    /// are in milliseconds), and never sooner than `crossingFloor` after the last.
    package static let crossingMargin: Duration = .milliseconds(20)
    package static let crossingFloor: Duration = .milliseconds(200)
}
