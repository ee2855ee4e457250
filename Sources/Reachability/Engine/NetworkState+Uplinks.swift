/// A link that could carry the internet by itself: ready, with a usable default route of the main
/// or default table through it and an address of its own to send from. What the connectivity
/// probe judges one by one, so `ValidatedInterfaces` can say which of them reach the internet.
package struct Uplink: Hashable, Sendable {
    public var index: Int32
    public var name: String
    /// Per family (AF_INET, AF_INET6), the address a probe through this link is sent from: the
    /// default route's preferred source when the link holds it, else the link's first address
    /// usable beyond it.
    public var sources: [AddressFamily: IPAddress]
    /// Its default routes: when they change (a new gateway), the uplink is judged afresh.
    public var routes: Set<Route>
}

extension NetworkState {
    /// The kinds an uplink can have. Container and VM plumbing (veth, docker0 and other bridges
    /// without an uplink port, tun/tap) classifies as virtual, bridge or vpn and is never
    /// probed; an interface rule that gives such a link an uplink kind makes it one.
    package static let uplinkKinds: Set<InterfaceKind> = [.wired, .wifi, .cellular]

    /// The uplinks now, by index. Costs one pass over the default routes, not over every link.
    public func uplinks() -> [Uplink] {
        var found: [Int32: Uplink] = [:]
        forEachReadyDefaultHop { route, entry, classification in
            guard classification.allowsProbe, Self.uplinkKinds.contains(classification.kind) else { return }
            let family = route.destination.address.family
            let own = entry.addresses.values.filter { $0.address.family == family && $0.isUsableBeyondLink }.map(\.address)
            guard let source = own.first(where: { $0 == route.preferredSource }) ?? own.min(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) })
            else { return }
            let index = entry.link.index
            var uplink = found[index] ?? Uplink(index: index, name: entry.link.name, sources: [:], routes: [])
            uplink.sources[family] = uplink.sources[family] ?? source
            uplink.routes.insert(route)
            found[index] = uplink
        }
        return found.values.sorted { $0.index < $1.index }
    }

    /// The available interfaces whose path reaches the internet by the probe's verdict: the
    /// primary by the host's probe, every other uplink by its own.
    package func validatedInterfaces(available: [String], primary: String, connectivity: ConnectivityStatus) -> [String] {
        available.filter { name in
            if name == primary { return connectivity.verdict == .full }
            return linkIndexByName[name].flatMap { verdicts.uplinks[$0] } == .full
        }
    }

    /// The link of the host's path (its primary interface, or the link a tunnel runs over) that
    /// an `[Interface]` rule keeps the probe off (`Probe=no`), if any: the host's probe then sends
    /// nothing and its verdict stays `unknown`.
    public func unprobedHostInterface() -> String? {
        for name in [host.primaryInterface, host.underlyingInterface] where !name.isEmpty {
            if let index = linkIndexByName[name], let entry = links[index], !effectiveClassification(entry).allowsProbe {
                return name
            }
        }
        return nil
    }
}
