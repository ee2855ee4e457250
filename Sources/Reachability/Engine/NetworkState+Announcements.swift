/// A router of a link, as the kernel's default routes name it (`NetworkState.defaultRouters`).
package struct LinkRouter: Hashable, Sendable {
    package var interfaceIndex: Int32
    package var address: IPAddress
}

/// Announcements dropped on one link for want of room (`LinkAnnouncements.routerCapacity`), for
/// one journal line: the first drop is told at once, the rest at most once a minute per link.
package struct AnnouncementDrops: Hashable, Sendable {
    public var interfaceName: String
    public var count: Int
}

/// What routers announce in their advertisements (RFC 8910 portals, RFC 8781 NAT64 prefixes),
/// kept by the `Announcements` store, held per link in a `LinkAnnouncements` (bounded, and
/// published through a hold window). Every event costs the same whatever a host on the link
/// sends: the work is bounded by the capacity of one link's entries.
extension NetworkState {
    package mutating func hear(_ announced: AnnouncedNat64Prefix, received: ContinuousClock.Instant) {
        let index = announced.interfaceIndex
        // As for a portal: a stale announcement for a link gone down since has nothing to attach to.
        guard links[index]?.link.isReady == true else { return }
        // Validated here, where every announcement enters and the link's own prefixes are known
        // (its addresses and on-link routes arrive before the option, in the same batch).
        if let reason = AnnouncedNat64Prefix.refusal(of: announced.prefix, onLink: onLinkPrefixes(of: index)) {
            return take(.refused(RefusedAnnouncement(
                option: .nat64Prefix, interfaceIndex: index, router: announced.router, value: announced.prefix.description, reason: reason)))
        }
        take(.nat64Prefix(announced, received: received))
    }

    /// The refusals since the last call, for the adapter's journal: the Engine does no I/O.
    public mutating func takeRefusedAnnouncements() -> [RefusedAnnouncement] { announcements.takeRefusals() }

    /// Drop reports for the journal since the last call.
    public mutating func takeAnnouncementDrops() -> [AnnouncementDrops] { announcements.takeDrops() }

    /// Announcements held now, over every link (the metrics' gauge).
    public var announcementsHeld: Int { announcements.held }

    /// Announcements dropped for want of room since the start (the metrics' counter).
    public var announcementsDropped: UInt64 { announcements.dropped }

    /// The portal URI shown for a link, nil when none.
    package func announcedPortal(on index: Int32) -> String? { announcements.routers[index]?.shown.portal?.uri }

    /// The NAT64 prefix for a path through the first of `indices` that has one shown: the one the
    /// path's `gateway` announced, else one of a router the kernel holds a default route through,
    /// else any; the lowest router address among equals (a stable choice). Bounded by the capacity.
    package func nat64Prefix(on indices: [Int32?], gateway: IPAddress?) -> Nat64Prefix? {
        for index in indices.compactMap({ $0 }) {
            guard let shown = announcements.routers[index]?.shown.prefixes, !shown.isEmpty, let name = links[index]?.link.name else { continue }
            let isDefault = { self.defaultRouters[LinkRouter(interfaceIndex: index, address: $0)] != nil }
            let router = gateway.flatMap { shown[$0] == nil ? nil : $0 }
                ?? shown.keys.min { a, b in
                    isDefault(a) != isDefault(b) ? isDefault(a) : a.bytes.lexicographicallyPrecedes(b.bytes)
                }
            if let router, let prefix = shown[router] { return Nat64Prefix(prefix: prefix, router: router, interfaceName: name) }
        }
        return nil
    }

    /// Follows the kernel's default routes by router, for the choices above (O(1) each).
    /// `added` only for a route new to the state, so a repeated one is not counted twice.
    package mutating func countDefaultRouters(of route: Route, added: Bool) {
        guard route.destination.isDefault else { return }
        for hop in route.nextHops {
            guard let index = hop.interfaceIndex, let gateway = hop.gateway else { continue }
            let router = LinkRouter(interfaceIndex: index, address: gateway)
            let count = (defaultRouters[router] ?? 0) + (added ? 1 : -1)
            defaultRouters[router] = count > 0 ? count : nil
            // No longer a gateway: its neighbour entry is no fact of the state's any more.
            if count <= 0 { gatewayNeighbours.removeValue(forKey: router) }
        }
    }

    /// The kernel removed a default route: each router it ran through takes its announcements along.
    package mutating func forgetAnnouncements(by route: Route) {
        for hop in route.nextHops {
            guard let index = hop.interfaceIndex, let gateway = hop.gateway else { continue }
            take(.routerGone(index: index, gateway))
        }
    }
}
