/// What clients read of the state: the snapshot and the derived status of single interfaces.
extension NetworkState {
    /// Everything a client sees now. Costs one pass over the interfaces: build it on request, not per event.
    public var snapshot: ReachabilitySnapshot {
        ReachabilitySnapshot(
            generation: generation, host: host,
            interfaces: statuses.values.sorted { $0.index < $1.index }, stallEvidence: hostStallEvidence)
    }

    /// The derived status of one visible interface.
    public func interface(index: Int32) -> InterfaceStatus? { statuses[index] }

    /// The derived status of the visible interface called `name`.
    public func interface(named name: String) -> InterfaceStatus? {
        statuses.values.first { $0.name == name }
    }

    /// The number of links known, visible or not.
    public var linkCount: Int { links.count }
}
