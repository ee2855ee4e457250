/// A NAT64 prefix as the state holds it: the announcement and when its lifetime ends.
struct HeldNat64Prefix: Hashable, Sendable {
    var announced: AnnouncedNat64Prefix
    var expiry: ContinuousClock.Instant
}

/// NAT64 prefixes announced by routers (PREF64, RFC 8781), held per link and router. The Engine
/// reads no clock: an announcement comes stamped with when it was received, and the adapter's
/// one timer, armed at `nextAnnouncementExpiry`, brings the time in (`NetworkEvent.clock`).
extension NetworkState {
    mutating func hold(_ announced: AnnouncedNat64Prefix, received: ContinuousClock.Instant) {
        let index = announced.interfaceIndex
        // As for a portal: a stale announcement for a link gone down since has nothing to attach to.
        guard links[index]?.link.isReady == true else { return }
        // Validated here, where every announcement enters and the link's own prefixes are known
        // (its addresses and on-link routes arrive before the option, in the same batch).
        if let reason = AnnouncedNat64Prefix.refusal(of: announced.prefix, onLink: onLinkPrefixes(of: index)) {
            return refuse(RefusedAnnouncement(
                option: .nat64Prefix, interfaceIndex: index, router: announced.router, value: announced.prefix.description, reason: reason))
        }
        guard announced.lifetime > .zero else {
            // Withdrawn (RFC 8781 section 4: lifetime 0), when it is the prefix this router gave.
            if nat64Prefixes[index]?[announced.router]?.announced.prefix == announced.prefix {
                nat64Prefixes[index]?.removeValue(forKey: announced.router)
            }
            return
        }
        nat64Prefixes[index, default: [:]][announced.router] = HeldNat64Prefix(announced: announced, expiry: received + announced.lifetime)
    }

    /// Drops every prefix whose lifetime ended by `now`.
    mutating func expireNat64Prefixes(at now: ContinuousClock.Instant) {
        for (index, routers) in nat64Prefixes {
            let kept = routers.filter { $0.value.expiry > now }
            nat64Prefixes[index] = kept.isEmpty ? nil : kept
        }
    }

    /// When the first held announcement expires: the one instant the adapter's timer must fire
    /// at (with `NetworkEvent.clock`); nil when nothing is held.
    public var nextAnnouncementExpiry: ContinuousClock.Instant? {
        nat64Prefixes.values.lazy.flatMap { $0.values.map(\.expiry) }.min()
    }

    /// The NAT64 prefix for a path through the first of `indices` that has one: the one the
    /// path's `gateway` announced, else the one of the lowest router address (a stable choice).
    func nat64Prefix(on indices: [Int32?], gateway: IPAddress?) -> Nat64Prefix? {
        for index in indices.compactMap({ $0 }) {
            guard let routers = nat64Prefixes[index], let name = links[index]?.link.name else { continue }
            let chosen = gateway.flatMap { routers[$0] }
                ?? routers.values.min { $0.announced.router.bytes.lexicographicallyPrecedes($1.announced.router.bytes) }
            if let chosen { return Nat64Prefix(prefix: chosen.announced.prefix, router: chosen.announced.router, interfaceName: name) }
        }
        return nil
    }
}
