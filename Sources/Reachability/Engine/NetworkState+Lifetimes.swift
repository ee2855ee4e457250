/// Routes and addresses that lapse on time. A router's lifetime (RFC 4861) ends silently: the
/// kernel stops routing through its default route at once, but keeps the route, `expires -2sec`,
/// until its garbage collection runs up to 30 s later, and only then says so on netlink. An
/// address's valid lifetime ends likewise a little before the kernel deletes it. So the Engine
/// reads the deadlines itself: the adapter's one timer, armed at `nextExpiry`, brings the time in
/// (`NetworkEvent.clock`), and what lapsed by then goes, as the kernel's own deletion would.
///
/// A new router advertisement moves a route's deadline without any netlink message, so the
/// deadline held may be stale: the adapter confirms with a fresh dump before it brings the time
/// (`nextLapse`), and the dump carries the deadlines as they are now.
extension NetworkState {
    /// The time now (`NetworkEvent.clock`): what was due by then happens, in one order.
    package mutating func clock(at now: ContinuousClock.Instant) {
        take(.clock(now))
        lapse(at: now)
    }

    /// Drops the routes whose expiry and the addresses whose valid lifetime passed by `now`.
    package mutating func lapse(at now: ContinuousClock.Instant) {
        var lapsed = false
        for key in expiringRoutes {
            guard let expiry = routes[key]?.expiry, expiry <= now else { continue }
            removeRoute(key)  // a router's default route takes its announcements with it
            lapsed = true
        }
        for key in expiringAddresses {
            guard let address = links[key.interfaceIndex]?.addresses[key], let end = address.validUntil, end <= now else { continue }
            removeAddress(address)
            lapsed = true
        }
        if lapsed { routingEpoch &+= 1 }
    }

    /// The first deadline of a route or address the state holds: when the adapter must look at
    /// the kernel again; nil when none has a lifetime.
    public var nextLapse: ContinuousClock.Instant? {
        let routeExpiry = expiringRoutes.lazy.compactMap { self.routes[$0]?.expiry }.min()
        let addressEnd = expiringAddresses.lazy.compactMap { self.links[$0.interfaceIndex]?.addresses[$0]?.validUntil }.min()
        return [routeExpiry, addressEnd].compactMap { $0 }.min()
    }

    /// The one instant the adapter's timer must fire at (with `NetworkEvent.clock`): the first
    /// lapse of a route, an address or an announced NAT64 prefix, a portal session's lead; nil when nothing has a lifetime.
    public var nextExpiry: ContinuousClock.Instant? {
        [nextLapse, announcements.nextDeadline].compactMap { $0 }.min()
    }
}
