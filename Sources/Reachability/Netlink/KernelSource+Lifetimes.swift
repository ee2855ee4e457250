/// A route lapses silently, and comes back silently: a router advertisement that arrives while
/// the kernel still keeps the lapsed route (until its garbage collection, up to 30 s) renews its
/// lifetime without any netlink message, as it does for a live one. What an advertisement does
/// make the kernel say, its options for userspace (RDNSS, DNSSL, a portal, PREF64) and its
/// prefixes' addresses renewed, is the cue: while a lapsed route is kept, such a message brings
/// a dump, which finds the route alive again, and the message is applied with it, as one batch.
/// An advertisement with neither is seen at the next dump or message.
extension KernelSource {
    /// Whether a router the kernel stopped routing through may have come back: a lapsed route
    /// is kept, and no resync (which would look anyway) is pending.
    package var mayReviveLapsedRoute: Bool { !keptLapsed.isEmpty && !needsResync && !isDumping }
}

extension RoutingMessage {
    /// What a router advertisement makes the kernel send (an ND option, an IPv6 address renewed).
    package var mayComeFromRouterAdvertisement: Bool {
        switch self {
        case .announcedPortal, .nat64Prefix, .refusedAnnouncement: true
        case let .ignored(type): type == RT.newNDUserOption
        case let .address(address): address.address.family == .ipv6
        default: false
        }
    }
}
