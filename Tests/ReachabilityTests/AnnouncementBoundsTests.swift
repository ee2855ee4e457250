import Testing
@testable import Reachability
@testable import ReachabilityEngine

/// The pure Engine against a hostile on-link host (issue 35 items 1 and 4): router advertisements
/// from endless distinct routers hold at most `LinkAnnouncements.routerCapacity` prefixes and one
/// portal per link, the network's own router keeps its place, drops are counted and reported once
/// per burst, and values that flap are published at most once per hold window.
struct AnnouncementBoundsTests {
    static let wellKnown = IPPrefix(Fact.ip("64:ff9b::"), length: 96)
    static let other = IPPrefix(Fact.ip("2001:db8:64::"), length: 96)
    /// RFC 8781's longest lifetime: 8191 units of 8 s, about 18 h.
    static let longest = Duration.seconds(8191 * 8)

    static func pref64(
        _ prefix: IPPrefix = wellKnown, lifetime: Duration = .seconds(1800), by router: String = "fe80::1", at received: ContinuousClock.Instant
    ) -> NetworkEvent {
        .nat64Prefix(AnnouncedNat64Prefix(interfaceIndex: 2, router: Fact.ip(router), prefix: prefix, lifetime: lifetime), received: received)
    }

    static func portal(_ uri: String, by router: String = "fe80::1", at received: ContinuousClock.Instant) -> NetworkEvent {
        .announcedPortal(AnnouncedPortal(interfaceIndex: 2, router: Fact.ip(router), uri: uri), received: received)
    }

    /// The n-th hostile router: a distinct link-local address.
    static func hostile(_ n: Int) -> String { "fe80::a:\(String(n / 65536, radix: 16)):\(String(n % 65536, radix: 16))" }

    /// eth0 (index 2) online over IPv4, with fe80::1 the kernel's IPv6 default router on it.
    static func online() throws -> NetworkState {
        var state = NetworkState()
        _ = state.apply([
            .link(Fact.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Fact.v4(2, "192.0.2.10")),
            .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false),
            .route(Fact.defaultV6(via: "fe80::1", dev: 2), replace: false),
        ])
        try #require(state.host.state == .online)
        return state
    }

    // MARK: caps and the choice

    @Test func aFloodFromThousandsOfRouters_holdsTheCapacity_keepsTheDefaultRoutersPrefix_andChangesNothingShown() throws {
        var state = try Self.online()
        let start = ContinuousClock.now
        _ = state.apply([Self.pref64(at: start)])
        #expect(state.host.nat64Prefix?.prefix == Self.wellKnown)
        var changes = 0
        for n in 0..<10_000 {
            let event = Self.pref64(Self.other, lifetime: Self.longest, by: Self.hostile(n), at: start + .milliseconds(n))
            if state.apply([event]) != nil { changes += 1 }
        }
        #expect(state.announcements.routers[2]?.prefixes.count == LinkAnnouncements.routerCapacity)
        #expect(state.announcementsHeld == LinkAnnouncements.routerCapacity)
        #expect(state.announcementsDropped == UInt64(10_000 - (LinkAnnouncements.routerCapacity - 1)))
        #expect(state.announcements.routers[2]?.prefixes[Fact.ip("fe80::1")] != nil, "the kernel's default router keeps its place")
        #expect(state.host.nat64Prefix?.prefix == Self.wellKnown && state.host.nat64Prefix?.router == Fact.ip("fe80::1"))
        #expect(changes == 0, "the host's answer never moved: \(changes) changes")
        // The newest of the others are the ones kept (the latest expiry).
        let kept = Set(state.announcements.routers[2]?.prefixes.keys.map(\.description) ?? [])
        #expect(kept == Set(["fe80::1"] + (9_997..<10_000).map { Self.hostile($0) }), "\(kept)")
    }

    @Test func whenFull_aNewcomerTakesTheEarliestExpiringPlace_onlyIfItOutlivesIt_andNeverADefaultRoutersPlace() throws {
        var state = try Self.online()
        let start = ContinuousClock.now
        _ = state.apply([Self.pref64(lifetime: .seconds(16), at: start)])  // fe80::1, the default router, expires first
        _ = state.apply((2...4).map { Self.pref64(Self.other, lifetime: .seconds(600 * $0), by: "fe80::\($0)", at: start) })
        let held = { Set(state.announcements.routers[2]?.prefixes.keys.map(\.description) ?? []) }
        // Expiring before every other router's: dropped.
        _ = state.apply([Self.pref64(Self.other, lifetime: .seconds(600), by: "fe80::5", at: start)])
        #expect(held() == ["fe80::1", "fe80::2", "fe80::3", "fe80::4"])
        // Outliving fe80::2's: takes its place, not fe80::1's (whose expiry is the earliest).
        _ = state.apply([Self.pref64(Self.other, lifetime: .seconds(3000), by: "fe80::6", at: start)])
        #expect(held() == ["fe80::1", "fe80::3", "fe80::4", "fe80::6"])
        #expect(state.announcementsDropped == 2)
        // A router already held updates in place: nothing dropped.
        _ = state.apply([Self.pref64(Self.wellKnown, lifetime: .seconds(60), by: "fe80::3", at: start)])
        #expect(state.announcementsDropped == 2)
        // Once fe80::1 is no default router, its prefix is the first to go.
        _ = state.apply([.routeRemoved(Fact.defaultV6(via: "fe80::1", dev: 2))])
        #expect(held() == ["fe80::3", "fe80::4", "fe80::6"], "the kernel's removal forgets its prefix at once")
    }

    @Test func thePortalOfADefaultRouter_isNotReplacedByARouterWithoutOne_butByItsOwnOrAnotherDefaultRouters() throws {
        var state = try Self.online()
        let start = ContinuousClock.now
        _ = state.apply([Self.portal("https://portal.example/", at: start)])
        #expect(state.host.announcedPortal == "https://portal.example/")
        let later = start + LinkAnnouncements.hold * 2
        #expect(state.apply([Self.portal("https://evil.example/", by: "fe80::66", at: later)]) == nil)
        #expect(state.announcements.routers[2]?.portal?.uri == "https://portal.example/" && state.announcementsDropped == 1)
        _ = state.apply([.route(Fact.defaultV6(via: "fe80::2", dev: 2, metric: 2048), replace: false)])
        _ = state.apply([Self.portal("https://second.example/", by: "fe80::2", at: later)])
        #expect(state.host.announcedPortal == "https://second.example/")
        _ = state.apply([Self.portal("https://again.example/", by: "fe80::1", at: later + LinkAnnouncements.hold)])
        #expect(state.host.announcedPortal == "https://again.example/")
        #expect(state.announcementsHeld == 1, "one portal per link")
    }

    @Test func drops_areToldOncePerBurst_thenAtMostOnceAMinutePerLink_atTheTimersDeadline() throws {
        var state = try Self.online()
        let start = ContinuousClock.now
        // 4 fit; the 5th (at 4 ms) is the first dropped.
        let flood = (0..<500).map { n in
            (start + .milliseconds(n), Self.pref64(Self.other, lifetime: Self.longest, by: Self.hostile(n), at: start + .milliseconds(n)))
        }
        _ = Self.drive(&state, flood)
        #expect(state.takeAnnouncementDrops() == [AnnouncementDrops(interfaceName: "eth0", count: 1)], "the first drop, at once")
        #expect(state.takeAnnouncementDrops().isEmpty)
        let due = start + .milliseconds(4) + LinkAnnouncements.dropReportInterval
        _ = Self.drive(&state, [(due - .milliseconds(1), .clock(due - .milliseconds(1)))])
        #expect(state.takeAnnouncementDrops().isEmpty, "not before a minute has passed")
        #expect(state.announcements.nextDeadline == due, "the rest is due a minute after the first line")
        _ = state.apply([.clock(due)])
        #expect(state.takeAnnouncementDrops() == [AnnouncementDrops(interfaceName: "eth0", count: 500 - 5)])
        #expect(state.announcementsDropped == 500 - 4)
        #expect(try #require(state.announcements.nextDeadline) > due + .seconds(3600), "nothing left to tell: the next is an expiry")
    }

    // MARK: coalescing

    /// Feeds `events` one batch each, firing the clock whenever the state's deadline has come,
    /// as the core's one timer does; returns how many changes were published.
    static func drive(_ state: inout NetworkState, _ events: [(ContinuousClock.Instant, NetworkEvent)]) -> Int {
        var published = 0
        for (time, event) in events {
            while let due = state.announcements.nextDeadline, due <= time {
                if state.apply([.clock(due)]) != nil { published += 1 }
            }
            if state.apply([event]) != nil { published += 1 }
        }
        return published
    }

    @Test func alternatingPrefixesForTenSeconds_arePublishedAtMostOncePerHoldWindow_andEndOnTheLastValue() throws {
        var state = try Self.online()
        let start = ContinuousClock.now
        // 1,000 advertisements a second from fe80::1, alternating, for 10 s.
        let events = (0..<10_000).map { n in
            (start + .milliseconds(n), Self.pref64(n.isMultiple(of: 2) ? Self.wellKnown : Self.other, at: start + .milliseconds(n)))
        }
        let published = Self.drive(&state, events)
        #expect(published >= 5 && published <= 11, "\(published) publications in 10 s")
        // The last one heard (odd: other) is shown, at the latest at the window's end.
        if let due = state.announcements.nextDeadline, due <= start + .seconds(11) { _ = state.apply([.clock(due)]) }
        #expect(state.host.nat64Prefix?.prefix == Self.other)
        #expect(state.announcements.nextDeadline == start + .milliseconds(9_999) + .seconds(1800))
    }

    @Test func alternatingPortals_arePublishedAtMostOncePerHoldWindow() throws {
        var state = try Self.online()
        let start = ContinuousClock.now
        let events = (0..<5_000).map { n in
            (start + .milliseconds(2 * n), Self.portal(n.isMultiple(of: 2) ? "https://a.example/" : "https://b.example/", at: start + .milliseconds(2 * n)))
        }
        #expect(Self.drive(&state, events) <= 11)
        _ = state.apply([.clock(start + .seconds(11))])
        #expect(state.host.announcedPortal == "https://b.example/")
    }

    @Test func aValueThatFlipsBackWithinTheWindow_publishesNothing_butKernelFactsActAtOnce() throws {
        var state = try Self.online()
        let start = ContinuousClock.now
        #expect(state.apply([Self.pref64(at: start)]) != nil, "the first change is published at once")
        #expect(state.apply([Self.pref64(Self.other, at: start + .milliseconds(100))]) == nil, "held back")
        #expect(state.announcements.nextDeadline == start + LinkAnnouncements.hold)
        #expect(state.apply([Self.pref64(at: start + .milliseconds(200))]) == nil)
        #expect(state.announcements.nextDeadline == start + .milliseconds(200) + .seconds(1800), "nothing to publish: no window to wait for")
        #expect(state.apply([.clock(start + LinkAnnouncements.hold)]) == nil)

        // Within a window, a kernel fact is not held back: a link, and the router's route.
        _ = state.apply([Self.portal("https://portal.example/", at: start + .milliseconds(1_100))])
        #expect(state.host.announcedPortal == "https://portal.example/")
        _ = state.apply([Self.pref64(Self.other, at: start + .milliseconds(1_200))])
        let linked = state.apply([.link(Fact.ethernet(3, "eth1"), device: DeviceFacts())])
        let link = try #require(linked)
        #expect(link.changedInterfaces.map(\.name) == ["eth1"])
        #expect(state.host.nat64Prefix?.prefix == Self.wellKnown, "the announcement still waits for its window")
        let routeRemoved = state.apply([.routeRemoved(Fact.defaultV6(via: "fe80::1", dev: 2))])
        let removed = try #require(routeRemoved)
        #expect(removed.host.nat64Prefix == nil && removed.host.announcedPortal == "", "the router's route gone: at once")
        #expect(state.announcements.nextDeadline == nil)
    }

    @Test func severalRoutersInOneBatch_areOnePublication() throws {
        var state = try Self.online()
        let start = ContinuousClock.now
        let batch = state.apply([
            Self.pref64(by: "fe80::2", at: start), Self.pref64(by: "fe80::1", at: start), Self.portal("https://portal.example/", at: start),
        ])
        let change = try #require(batch)
        #expect(change.host.nat64Prefix?.router == Fact.ip("fe80::1"), "the default router's")
        #expect(change.host.announcedPortal == "https://portal.example/")
        #expect(state.announcements.nextDeadline == start + .seconds(1800))
    }
}
