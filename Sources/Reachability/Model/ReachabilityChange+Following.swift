extension ReachabilityChange {
    /// This change, then `later`, as one: what a follower told once of both must hear (the core
    /// gathers one turn's inputs into one update). The host is the later one's; an interface is
    /// changed with its last status, or removed when the later change removed it.
    public func followed(by later: ReachabilityChange) -> ReachabilityChange {
        var changed = Dictionary(changedInterfaces.map { ($0.index, $0) }) { _, last in last }
        var removed = Dictionary(removedInterfaces.map { ($0.index, $0) }) { _, last in last }
        for status in later.removedInterfaces {
            changed.removeValue(forKey: status.index)
            removed[status.index] = status
        }
        for status in later.changedInterfaces {
            removed.removeValue(forKey: status.index)
            changed[status.index] = status
        }
        let description = hostChange.map { earlier in later.hostChange.map { earlier.followed(by: $0) } ?? earlier } ?? later.hostChange
        return ReachabilityChange(
            generation: later.generation, host: later.host, hostChanged: hostChanged || later.hostChanged,
            changedInterfaces: changed.values.sorted { $0.index < $1.index },
            removedInterfaces: removed.values.sorted { $0.index < $1.index }, hostChange: description)
    }
}
