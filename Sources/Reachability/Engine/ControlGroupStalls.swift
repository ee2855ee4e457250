/// Passive stall detection per watched control group (a systemd unit's cgroup v2, by id), pure:
/// the host's rule (`StallEvaluator`), not a second one, with one evaluator per group fed only
/// the sockets that group created. In a group's evaluator every socket is the group's own: one
/// owner whoever it runs as, so a unit's failing connections flag that unit as the host's own
/// flag the host. Its verdicts are the unit's alone and never enter the host's.
///
/// Bounded: only the groups the caller names are judged (reachd's `[Units] Watch=`), each with
/// one evaluator's memory; the dump is the host's, taken once.
package struct ControlGroupStalls: Sendable {
    private var evaluators: [UInt64: StallEvaluator] = [:]
    public private(set) var settings: StallSettings

    public init(settings: StallSettings = StallSettings()) {
        self.settings = Self.groupSettings(settings)
    }

    /// The host's settings, with every uid one owner (the group's): no DNS evidence, which is
    /// the host's resolver's and no unit's; and polls twice as often while the group's traffic
    /// moves (10 s by default), so that its verdict comes within 15 s of its traffic dying. The
    /// host's own path gets no such haste: a dead path fails every application at once, and
    /// their closing sockets bring the next poll; a unit's traffic may be all that fails.
    package static func groupSettings(_ settings: StallSettings) -> StallSettings {
        var own = settings
        own.systemUserMaximum = .max
        own.dnsTimeouts = 0
        own.pollInterval = settings.pollInterval / 2
        return own
    }

    /// The groups judged. A group no longer named is forgotten; a new one starts with no evidence.
    public var groups: Set<UInt64> {
        get { Set(evaluators.keys) }
        set {
            evaluators = evaluators.filter { newValue.contains($0.key) }
            for group in newValue where evaluators[group] == nil && group != 0 {
                evaluators[group] = StallEvaluator(settings: settings)
            }
        }
    }

    /// Takes a socket's last counters as it closes: the kernel's destroy event names no group,
    /// so it goes to the group whose poll saw it (a socket born and gone between two polls is
    /// nobody's, as it is for the host's owners). nil when no group knew it.
    public mutating func closed(_ sample: TCPSocketSample, at now: Duration) -> StallEvaluator.Closure? {
        guard let group = evaluators.first(where: { $0.value.knows(sample.cookie) })?.key else { return nil }
        return evaluators[group]?.closed(sample, at: now)
    }

    /// Judges one poll of the host's sockets for each group: its verdicts by group, and when
    /// the groups' traffic wants the next poll (the soonest, nil when none has traffic).
    public mutating func poll(
        at now: Duration, samples: [TCPSocketSample], addresses: [Address]
    ) -> (verdicts: [UInt64: [LinkStall]], nextPoll: Duration?) {
        guard !evaluators.isEmpty else { return ([:], nil) }
        // Listeners tell a peer's connections from the host's whoever listens: every group's.
        let listeners = samples.filter { $0.state == .listen }
        var byGroup: [UInt64: [TCPSocketSample]] = [:]
        for sample in samples where sample.state != .listen && evaluators[sample.controlGroup] != nil {
            byGroup[sample.controlGroup, default: listeners].append(sample)
        }
        var verdicts: [UInt64: [LinkStall]] = [:]
        var next: Duration?
        for group in evaluators.keys {
            guard let report = evaluators[group]?.poll(at: now, samples: byGroup[group] ?? listeners, addresses: addresses) else { continue }
            verdicts[group] = report.links
            if let wanted = report.nextPoll { next = min(next ?? wanted, wanted) }
        }
        return (verdicts, next)
    }

    /// Forgets every socket and verdict (offline, or a namespace replaced), keeping the groups.
    public mutating func reset() {
        for group in evaluators.keys { evaluators[group]?.reset() }
    }
}
