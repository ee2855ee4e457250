/// A NAT64 prefix as the state holds it: the announcement and when its lifetime ends.
package struct HeldNat64Prefix: Hashable, Sendable {
    package var announced: AnnouncedNat64Prefix
    package var expiry: ContinuousClock.Instant
}

/// What the routers of one link announced (RFC 8910's portal, RFC 8781's PREF64), bounded and
/// published at a bounded rate whatever an on-link host sends.
///
/// Any host on the link can send router advertisements, from as many link-local addresses as it
/// likes, with router lifetime 0 so the kernel keeps nothing of them, yet the kernel passes every
/// option on. So the held state is capped (`routerCapacity` prefixes, one portal), and what is
/// heard reaches the host's answer through a hold window (`hold`): `heard` follows every
/// announcement at once; `shown`, which the host's answer is derived from, takes it over at once
/// when nothing was shown within the window, else once at the window's end, with the values
/// heard then (nothing at all when they flipped back meanwhile). Subscribers see the network's
/// state at most about once a second per link, not an attacker's rate. Kernel facts (a default
/// route removed, the link down) take effect on both at once: only announcements are held back.
package struct LinkAnnouncements: Sendable {
    /// Routers whose NAT64 prefix a link holds. A link has one router, two or three where they
    /// are redundant; RFC 8781 section 5 leaves the choice among several prefixes to the host and
    /// ties each to the router that sent it, which is what the path's gateway picks (see
    /// `NetworkState.nat64Prefix(on:gateway:)`). More routers than this announcing NAT64 on one
    /// link is a broken or hostile link, and each entry held costs memory and time per event.
    package static let routerCapacity = 4
    /// How long after a publication of announced values further changes are coalesced.
    package static let hold: Duration = .seconds(1)
    /// The journal hears of dropped announcements at most this often per link.
    package static let dropReportInterval: Duration = .seconds(60)

    /// What the host's answer is derived from: one prefix per router, and the portal.
    package struct Shown: Hashable, Sendable {
        var prefixes: [IPAddress: IPPrefix] = [:]
        var portal: AnnouncedPortal?
    }

    /// Heard: the latest prefix of each router kept (at most `routerCapacity`), with its expiry.
    package private(set) var prefixes: [IPAddress: HeldNat64Prefix] = [:]
    /// Heard: the portal kept (RFC 8910's option has no lifetime: see `AnnouncedPortal`).
    package private(set) var portal: AnnouncedPortal?
    package private(set) var shown = Shown()
    /// When `shown` last took over what was heard; the hold window runs from there.
    private var lastShown: ContinuousClock.Instant?
    /// The end of the hold window, while what is heard differs from what is shown.
    package private(set) var showDue: ContinuousClock.Instant?
    /// Announcements dropped for want of room since the journal last heard of them.
    package private(set) var unreportedDrops = 0
    private var lastDropReport: ContinuousClock.Instant?

    /// Entries held: the heard prefixes and portal (what the state's size grows with).
    package var heldCount: Int { prefixes.count + (portal == nil ? 0 : 1) }

    /// The first instant something is due: an expiry, the hold window's end, or a drop report.
    /// Bounded work: at most `routerCapacity` prefixes.
    package var nextDeadline: ContinuousClock.Instant? {
        var next = prefixes.values.lazy.map(\.expiry).min()
        for due in [showDue, unreportedDrops > 0 ? lastDropReport.map { $0 + Self.dropReportInterval } : nil] {
            if let due, next.map({ due < $0 }) ?? true { next = due }
        }
        return next
    }

    // MARK: heard

    /// A router's PREF64. `isDefaultRouter` says whether the kernel holds a default route through
    /// a router (of this link). Returns whether it was dropped for want of room.
    package mutating func hear(
        _ announced: AnnouncedNat64Prefix, at received: ContinuousClock.Instant, isDefaultRouter: (IPAddress) -> Bool
    ) -> Bool {
        let router = announced.router
        guard announced.lifetime > .zero else {
            // Withdrawn (RFC 8781 section 4: lifetime 0), when it is the prefix this router gave.
            if prefixes[router]?.announced.prefix == announced.prefix { prefixes.removeValue(forKey: router) }
            return false
        }
        let entry = HeldNat64Prefix(announced: announced, expiry: received + announced.lifetime)
        var dropped = false
        if prefixes[router] == nil, prefixes.count >= Self.routerCapacity {
            // Full: the least worth keeping of those held and the newcomer goes (bounded: capacity + 1).
            func rank(_ held: HeldNat64Prefix) -> (isDefault: Bool, expiry: ContinuousClock.Instant) {
                (isDefaultRouter(held.announced.router), held.expiry)
            }
            let weakest = prefixes.values.min { Self.ranksBelow(rank($0), rank($1)) }!
            dropped = true
            if Self.ranksBelow(rank(weakest), rank(entry)) {
                prefixes.removeValue(forKey: weakest.announced.router)
                prefixes[router] = entry
            }
        } else {
            prefixes[router] = entry
        }
        return dropped
    }

    /// Keeping order: a router the kernel holds a default route through (its prefix is one the
    /// host's traffic can use, as the kernel's default router choice only picks among those),
    /// then the later expiry (the most recent and longest-lived). A newcomer must rank strictly
    /// higher to take a held entry's place, so equals do not churn.
    private static func ranksBelow(
        _ a: (isDefault: Bool, expiry: ContinuousClock.Instant), _ b: (isDefault: Bool, expiry: ContinuousClock.Instant)
    ) -> Bool {
        a.isDefault != b.isDefault ? !a.isDefault : a.expiry < b.expiry
    }

    /// A router's portal URI. The link has one: the latest replaces it, unless the one held comes
    /// from a router the kernel holds a default route through and the newcomer's does not (an
    /// on-link host with router lifetime 0 cannot replace the portal of the network's router).
    /// Returns whether it was dropped.
    package mutating func hear(_ announced: AnnouncedPortal, at received: ContinuousClock.Instant, isDefaultRouter: (IPAddress) -> Bool) -> Bool {
        if let held = portal, held.router != announced.router, isDefaultRouter(held.router), !isDefaultRouter(announced.router) {
            return true
        }
        portal = announced
        return false
    }

    /// Drops every prefix whose lifetime ended by `now`, publishes what the hold window let
    /// wait, and says whether a drop report is due (returning the count it reports). What is
    /// heard otherwise is shown by `follow(at:)`, once per batch (`NetworkState.publish`).
    package mutating func clock(_ now: ContinuousClock.Instant) -> Int? {
        let before = prefixes.count
        prefixes = prefixes.filter { $0.value.expiry > now }
        if prefixes.count != before || showDue.map({ $0 <= now }) == true { follow(at: now) }
        guard unreportedDrops > 0, let last = lastDropReport, now >= last + Self.dropReportInterval else { return nil }
        return takeDropReport(at: now)
    }

    /// Counts one dropped announcement; returns the count to report when a report is due now.
    package mutating func countDrop(at now: ContinuousClock.Instant) -> Int? {
        unreportedDrops += 1
        if let last = lastDropReport, now < last + Self.dropReportInterval { return nil }
        return takeDropReport(at: now)
    }

    private mutating func takeDropReport(at now: ContinuousClock.Instant) -> Int {
        defer { unreportedDrops = 0 }
        lastDropReport = now
        return unreportedDrops
    }

    // MARK: kernel facts

    /// The kernel removed the default route through `router`: its lifetime ended (or it
    /// withdrew), and its announcements with it, shown or not, at once.
    package mutating func forget(router: IPAddress) {
        prefixes.removeValue(forKey: router)
        shown.prefixes.removeValue(forKey: router)
        if portal?.router == router { portal = nil }
        if shown.portal?.router == router { shown.portal = nil }
        if heardView == shown { showDue = nil }
    }

    // MARK: shown

    private var heardView: Shown { Shown(prefixes: prefixes.mapValues(\.announced.prefix), portal: portal) }

    /// `shown` takes over what is heard now, or at the hold window's end.
    package mutating func follow(at now: ContinuousClock.Instant) {
        let heard = heardView
        guard heard != shown else {
            showDue = nil
            return
        }
        if let last = lastShown, now < last + Self.hold {
            showDue = last + Self.hold
            return
        }
        shown = heard
        lastShown = now
        showDue = nil
    }
}
