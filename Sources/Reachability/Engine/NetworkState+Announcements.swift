/// A router of a link, as the kernel's default routes name it (`NetworkState.defaultRouters`).
struct LinkRouter: Hashable, Sendable {
    var interfaceIndex: Int32
    var address: IPAddress
}

/// Announcements dropped on one link for want of room (`LinkAnnouncements.routerCapacity`), for
/// one journal line: the first drop is told at once, the rest at most once a minute per link.
package struct AnnouncementDrops: Hashable, Sendable {
    public var interfaceName: String
    public var count: Int
}

/// What routers announce in their advertisements (RFC 8910 portals, RFC 8781 NAT64 prefixes),
/// held per link in a `LinkAnnouncements` (bounded, and published through a hold window). The
/// Engine reads no clock: an announcement comes stamped with when it was received, and the
/// adapter's one timer, armed at `nextAnnouncementDeadline`, brings the time in
/// (`NetworkEvent.clock`). Every event costs the same whatever a host on the link sends: the
/// work is bounded by the capacity of one link's entries.
extension NetworkState {
    mutating func hear(_ announced: AnnouncedNat64Prefix, received: ContinuousClock.Instant) {
        let index = announced.interfaceIndex
        // As for a portal: a stale announcement for a link gone down since has nothing to attach to.
        guard links[index]?.link.isReady == true else { return }
        // Validated here, where every announcement enters and the link's own prefixes are known
        // (its addresses and on-link routes arrive before the option, in the same batch).
        if let reason = AnnouncedNat64Prefix.refusal(of: announced.prefix, onLink: onLinkPrefixes(of: index)) {
            return refuse(RefusedAnnouncement(
                option: .nat64Prefix, interfaceIndex: index, router: announced.router, value: announced.prefix.description, reason: reason))
        }
        let routers = defaultRouters
        let dropped = announcements[index, default: LinkAnnouncements()].hear(announced, at: received) {
            routers[LinkRouter(interfaceIndex: index, address: $0)] != nil
        }
        heardAnnouncements[index] = received
        if dropped { countDrop(on: index, at: received) }
    }

    mutating func hear(_ announced: AnnouncedPortal, received: ContinuousClock.Instant) {
        let index = announced.interfaceIndex
        // The kernel accepted the advertisement on a ready link; a stale one for a link gone
        // down since (or unknown) has nothing to attach to.
        guard links[index]?.link.isReady == true else { return }
        let routers = defaultRouters
        let dropped = announcements[index, default: LinkAnnouncements()].hear(announced, at: received) {
            routers[LinkRouter(interfaceIndex: index, address: $0)] != nil
        }
        heardAnnouncements[index] = received
        if dropped { countDrop(on: index, at: received) }
    }

    /// What a batch's announcements changed is shown (or held back) once per link, at the
    /// latest one's time: several routers heard in one batch are one publication.
    mutating func showHeardAnnouncements() {
        guard !heardAnnouncements.isEmpty else { return }
        // The links are derived again: each interface shows its portal (`InterfaceStatus.portal`).
        for (index, received) in heardAnnouncements {
            announcements[index]?.follow(at: received)
            dirty.insert(index)
        }
        heardAnnouncements.removeAll()
    }

    private mutating func countDrop(on index: Int32, at now: ContinuousClock.Instant) {
        announcementsDropped &+= 1
        guard let count = announcements[index]?.countDrop(at: now) else { return }
        pendingAnnouncementDrops.append(AnnouncementDrops(interfaceName: links[index]?.link.name ?? "#\(index)", count: count))
    }

    /// Expiries, hold windows that ended and drop reports due by `now`, on every link holding
    /// announcements (a few links; each costs at most its capacity).
    mutating func clockAnnouncements(at now: ContinuousClock.Instant) {
        for index in announcements.keys {
            dirty.insert(index)
            guard let count = announcements[index]?.clock(now) else { continue }
            pendingAnnouncementDrops.append(AnnouncementDrops(interfaceName: links[index]?.link.name ?? "#\(index)", count: count))
        }
    }

    /// The first instant something about announcements is due (an expiry, the end of a hold
    /// window, a drop report): the one instant the adapter's timer must fire at (with
    /// `NetworkEvent.clock`); nil when nothing is. Linear in the links holding announcements
    /// only (each bounded), never in how many a host on the link sent.
    public var nextAnnouncementDeadline: ContinuousClock.Instant? {
        announcements.values.lazy.compactMap(\.nextDeadline).min()
    }

    /// Drop reports for the journal since the last call.
    public mutating func takeAnnouncementDrops() -> [AnnouncementDrops] {
        defer { pendingAnnouncementDrops.removeAll() }
        return pendingAnnouncementDrops
    }

    /// Announcements held now, over every link (the metrics' gauge; bounded by the capacity).
    public var announcementsHeld: Int { announcements.values.reduce(0) { $0 + $1.heldCount } }

    /// The portal URI shown for a link, nil when none.
    func announcedPortal(on index: Int32) -> String? { announcements[index]?.shown.portal?.uri }

    /// The NAT64 prefix for a path through the first of `indices` that has one shown: the one the
    /// path's `gateway` announced, else one of a router the kernel holds a default route through,
    /// else any; the lowest router address among equals (a stable choice). Bounded by the capacity.
    func nat64Prefix(on indices: [Int32?], gateway: IPAddress?) -> Nat64Prefix? {
        for index in indices.compactMap({ $0 }) {
            guard let shown = announcements[index]?.shown.prefixes, !shown.isEmpty, let name = links[index]?.link.name else { continue }
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
    mutating func countDefaultRouters(of route: Route, added: Bool) {
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

    /// The kernel removed a default route: when it ran through a router that announced a portal
    /// or a NAT64 prefix, that router's lifetime ended (or it withdrew), and its announcements
    /// with it, at once (a kernel fact is never held back).
    mutating func forgetAnnouncements(by route: Route) {
        for hop in route.nextHops {
            guard let index = hop.interfaceIndex, let gateway = hop.gateway else { continue }
            announcements[index]?.forget(router: gateway)
            dirty.insert(index)
        }
    }
}
