/// What one link shows, derived from the facts held of it: the interface's status, its own
/// prefixes, the order its addresses are shown in. Reads only; `NetworkState.swift` mutates.
extension NetworkState {
    /// The prefixes of link `index` itself: its addresses' and its on-link (gateway-less) routes',
    /// of any table but the default route.
    package func onLinkPrefixes(of index: Int32) -> [IPPrefix] {
        var prefixes: [IPPrefix] = links[index]?.addresses.values.map { $0.prefix } ?? []
        for key in routesByInterface[index] ?? [] {
            guard let route = routes[key], !route.destination.isDefault,
                route.nextHops.contains(where: { $0.interfaceIndex == index && $0.gateway == nil })
            else { continue }
            prefixes.append(route.destination)
        }
        return prefixes
    }

    /// What an interface shows: its kind, flags, addresses in order, expensive reason and network.
    package func derive(_ entry: LinkEntry) -> InterfaceStatus? {
        let classification = effectiveClassification(entry)
        guard !classification.isIgnored else { return nil }
        var flags = kindFlags(entry)
        // On the interface only: a path through it (the host's flags) changes when the link does.
        if radios.blocks[entry.link.index] != nil, [.wifi, .cellular].contains(classification.kind) { flags.insert(.radioOff) }
        if entry.link.isAdminUp {
            let ready = entry.link.isReady && entry.addresses.values.contains { $0.isUsable }
            flags.insert(ready ? .reachable : .connectionRequired)
            if ready, isStalled(entry.link.index) { flags.insert(.stalled) }
        }
        let addresses = entry.addresses.keys.map(\.prefix).sorted(by: Self.addressOrder)
        let portal = linkPortal(on: entry.link.index)
        return InterfaceStatus(
            index: entry.link.index, name: entry.link.name, kind: classification.kind,
            flags: flags, addresses: addresses, expensiveReason: expensiveReason(entry, classification),
            networkID: networkID(of: entry.link.index), portal: portal?.uri ?? "", portalSource: portal?.source)
    }

    package static func addressOrder(_ a: IPPrefix, _ b: IPPrefix) -> Bool {
        if a.address.family != b.address.family { return a.address.family < b.address.family }
        let (x, y) = (a.address.bytes, b.address.bytes)
        return x == y ? a.length < b.length : x.lexicographicallyPrecedes(y)
    }
}
