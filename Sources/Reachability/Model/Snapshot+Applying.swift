/// Keeping a snapshot current: every follower of changes (reachctl's monitor and wait, the
/// path monitor, a client of reachd's signals) applies each change with `applying(_:)`, so that
/// they all hold the same picture the publisher of the change holds.
extension ReachabilitySnapshot {
    /// This snapshot after `change`: its generation and host, the changed interfaces replaced or
    /// added and the removed ones gone, by index. The stall evidence stays: no change carries it
    /// (it moves with every poll, `stallEvidence`).
    public func applying(_ change: ReachabilityChange) -> ReachabilitySnapshot {
        let gone = Set(change.removedInterfaces.map(\.index))
        var byIndex = Dictionary(
            interfaces.filter { !gone.contains($0.index) }.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        for interface in change.changedInterfaces { byIndex[interface.index] = interface }
        return ReachabilitySnapshot(
            generation: change.generation, host: change.host, interfaces: byIndex.values.sorted { $0.index < $1.index },
            stallEvidence: stallEvidence)
    }
}

extension ReachabilityChange {
    /// What changed between two snapshots that no change links (a client that missed signals,
    /// or a reachd that restarted): the generation is the newer one's; the host change is
    /// `described` (what the publisher said of the generations between them, in order, as one)
    /// with the aspects the snapshots themselves show added, its rebind only as described.
    public init(from old: ReachabilitySnapshot, to new: ReachabilitySnapshot, described: [HostChange] = []) {
        let before = Dictionary(old.interfaces.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Set(new.interfaces.map(\.index))
        var description = described.reduce(nil as HostChange?) { $0?.followed(by: $1) ?? $1 }
        if old.host != new.host {
            let shown = HostChange(from: old.host, HostAddressing(), to: new.host, HostAddressing())
            description = description.map { HostChange(
                changed: $0.changed + shown.changed, rebind: $0.rebind, sourceAddress: $0.sourceAddress,
                previousSourceAddress: $0.previousSourceAddress) } ?? shown
        }
        self.init(
            generation: new.generation, host: new.host, hostChanged: old.host != new.host || description != nil,
            changedInterfaces: new.interfaces.filter { before[$0.index] != $0 },
            removedInterfaces: old.interfaces.filter { !after.contains($0.index) }, hostChange: description)
    }

    /// Whether anything a follower sees moved (a diff of equal snapshots is empty).
    public var isEmpty: Bool { !hostChanged && changedInterfaces.isEmpty && removedInterfaces.isEmpty }
}
