extension NetworkState {
    /// The kind (and priority) a link shows: a bridge takes the best kind among its ports.
    package func effectiveClassification(_ entry: LinkEntry) -> Classification {
        var classification = linkClassification(entry)
        // The network's own rule last: it wins over the link's rules and the guesses.
        if !classifier.networks.isEmpty, let rule = classifier.networks[networkID(of: entry.link.index)] {
            rule.apply(to: &classification)
        }
        return classification
    }

    private func linkClassification(_ entry: LinkEntry) -> Classification {
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
        best.isUnmeteredByConfiguration = entry.classification.isUnmeteredByConfiguration
        best.isConstrained = best.isConstrained || entry.classification.isConstrained
        best.allowsProbe = best.allowsProbe && entry.classification.allowsProbe
        return best
    }

    /// The flags any path through this link carries, whatever its state.
    package func kindFlags(_ entry: LinkEntry) -> ReachabilityFlags {
        let classification = effectiveClassification(entry)
        var flags = classification.kind.flags
        if expensiveReason(entry, classification) != nil { flags.insert(.isExpensive) }
        if classification.isConstrained { flags.insert(.isConstrained) }
        if entry.link.hardwareType == Link.hardwarePPP { flags.insert(.transientConnection) }
        return flags
    }

    /// Why paths through this link are expensive, the most authoritative fact first; nil when
    /// nothing says they are. reachd.conf comes first (`Metered=`, interface and network rules);
    /// a cellular link is metered whatever is said. Then NetworkManager's explicit setting (the
    /// user's `connection.metered`, chosen for that very connection): its yes is a reason, its
    /// no silences the guesses below, as `Metered=no` does. Then reachd's own facts (the DHCP
    /// server's hint, the tether driver, the hotspot layout), and last NetworkManager's guess:
    /// a hint from what reachd cannot see (a Wi-Fi beacon), weaker than what reachd saw itself.
    /// NetworkManager's GUESS_NO says nothing: it is what NetworkManager reports of any link it
    /// knows nothing about, so it silences no guess of reachd's.
    package func expensiveReason(_ entry: LinkEntry, _ classification: Classification? = nil) -> ExpensiveReason? {
        let classification = classification ?? effectiveClassification(entry)
        if classification.isMetered { return .configuration }
        if classification.kind == .cellular { return .cellular }
        if classification.isUnmeteredByConfiguration { return nil }
        let managerSays = meteredHints.networkManager.isEmpty ? nil : meteredHints.networkManager[entry.link.name]
        if managerSays == .yes { return .networkManager }
        if managerSays == .no { return nil }
        if meteredHints.dhcp.contains(entry.link.index) { return .dhcp }
        if let driver = entry.device.driver, Classifier.tetherDrivers.contains(driver) { return .tether }
        if hasHotspotLayout(entry) { return .hotspot }
        if managerSays == .guessYes { return .networkManagerGuess }
        return nil
    }

    /// An iPhone hotspot hands out 172.20.10.2-14/28 and routes through 172.20.10.1, always
    /// (Android's hotspots keep no one subnet): an address of that /28 on the link and a main
    /// table default route through that gateway on it. Default routes dirty their link, so this
    /// follows both. Only the few default routes are looked at, and only for a link holding
    /// such an address.
    package func hasHotspotLayout(_ entry: LinkEntry) -> Bool {
        let hasAddress = entry.addresses.keys.contains { key in
            key.prefix.length == 28 && Self.hotspotPrefix.contains(key.prefix.address) && key.prefix.address != Self.hotspotGateway
        }
        guard hasAddress else { return false }
        return defaultRoutes.contains { key in
            key.nextHops.contains { $0.gateway == Self.hotspotGateway && $0.interfaceIndex == entry.link.index }
        }
    }

    package static let hotspotPrefix = IPPrefix("172.20.10.0/28")!
    package static let hotspotGateway = IPAddress("172.20.10.1")!
}
