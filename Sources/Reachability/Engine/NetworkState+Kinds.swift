extension NetworkState {
    /// The kind (and priority) a link shows: a bridge takes the best kind among its ports.
    func effectiveClassification(_ entry: LinkEntry) -> Classification {
        guard entry.classification.kind == .bridge, let members = ports[entry.link.index] else {
            return entry.classification
        }
        var best = entry.classification
        for index in members {
            guard let port = links[index]?.classification else { continue }
            switch port.kind {
            case .wired, .wifi, .cellular:
                if best.kind == .bridge || port.priority < best.priority {
                    best = port
                }
            default: continue
            }
        }
        best.isIgnored = entry.classification.isIgnored
        best.isMetered = best.isMetered || entry.classification.isMetered
        best.isConstrained = best.isConstrained || entry.classification.isConstrained
        best.allowsProbe = best.allowsProbe && entry.classification.allowsProbe
        return best
    }

    /// The flags any path through this link carries, whatever its state.
    func kindFlags(_ entry: LinkEntry) -> ReachabilityFlags {
        let classification = effectiveClassification(entry)
        var flags = classification.kind.flags
        if classification.isMetered { flags.insert(.isExpensive) }
        if classification.isConstrained { flags.insert(.isConstrained) }
        if entry.link.hardwareType == Link.hardwarePPP { flags.insert(.transientConnection) }
        return flags
    }
}
