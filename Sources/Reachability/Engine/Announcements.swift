/// What networks say of themselves beyond the kernel's routes, a store of the state (LinkStores):
/// routers' captive-portal URIs and NAT64 prefixes per link (`LinkAnnouncements`: bounded, shown
/// through a hold window), the refusals and drop reports the adapter takes for its journal, the
/// portal URIs the host's DHCP client records and each link's portal API answer. The Engine
/// reads no clock: an announcement comes stamped with when it was received, an answer with when
/// its session is `ending`, and the adapter's one timer (`nextDeadline`) brings the time in.
package struct Announcements: Sendable {
    package enum Event: Sendable {
        case portal(AnnouncedPortal, received: ContinuousClock.Instant)
        /// Validated against the link's own prefixes (NetworkState+Announcements).
        case nat64Prefix(AnnouncedNat64Prefix, received: ContinuousClock.Instant)
        case refused(RefusedAnnouncement)
        /// Every portal URI the DHCP client records now, or a portal API's answer (nil forgets
        /// the answer before it).
        case captivePortal(CaptivePortalFact)
        /// A batch ended: what its announcements changed is shown (or held back) once per link,
        /// at the latest one's time, so several routers heard in one batch are one publication.
        case batchEnded
        /// The time now: expiries, hold windows that ended, drop reports and sessions' lead times due.
        case clock(ContinuousClock.Instant)
        /// The kernel removed a default route through this router: its lifetime ended (or it
        /// withdrew), and its announcements with it, at once (a kernel fact is never held back).
        case routerGone(index: Int32, IPAddress)
        /// A link that went down may come back on another network: its routers' word is gone.
        case linkDown(Int32)
        case linkGone(Int32)
    }

    /// The kernel's facts the announcements are judged by, as the state holds them.
    package struct Links {
        package var entries: [Int32: NetworkState.LinkEntry]
        package var defaultRouters: [LinkRouter: Int]

        package func isReady(_ index: Int32) -> Bool { entries[index]?.link.isReady == true }
        package func name(_ index: Int32) -> String { entries[index]?.link.name ?? "#\(index)" }
    }

    /// What the routers of each link announce.
    package private(set) var routers: [Int32: LinkAnnouncements] = [:]
    /// Links whose announcements this batch heard, with the latest time (`batchEnded`).
    private var heard: [Int32: ContinuousClock.Instant] = [:]
    /// Refused since the adapter last took them: at most `refusalsKept`, so a state nobody
    /// drains (a test's) holds no more.
    package private(set) var refused: [RefusedAnnouncement] = []
    package static let refusalsKept = 16
    /// Dropped for want of room since the start (the metrics' counter).
    package private(set) var dropped: UInt64 = 0
    /// Drop reports not yet taken by the adapter.
    package private(set) var drops: [AnnouncementDrops] = []
    /// What the DHCP client records, by interface name (a lease outlives the link's index).
    package private(set) var dhcp: [String: DHCPPortal] = [:]
    /// The latest answer of each link's API, for the URI it was asked at.
    package private(set) var answers: [Int32: PortalAnswer] = [:]

    package mutating func take(_ event: Event, links: Links) -> LinksMoved {
        switch event {
        case let .portal(announced, received):
            hear(on: announced.interfaceIndex, at: received, links: links) { list, isDefault in list.hear(announced, at: received, isDefaultRouter: isDefault) }
        case let .nat64Prefix(announced, received):
            hear(on: announced.interfaceIndex, at: received, links: links) { list, isDefault in list.hear(announced, at: received, isDefaultRouter: isDefault) }
        case let .refused(refusal):
            if refused.count < Self.refusalsKept { refused.append(refusal) }
        case let .captivePortal(.dhcp(list)):
            var now: [String: DHCPPortal] = [:]
            for portal in list { now[portal.interfaceName] = portal }
            defer { dhcp = now }
            return LinksMoved(names: Set(now.keys).union(dhcp.keys).filter { now[$0] != dhcp[$0] })
        case let .captivePortal(.answer(index, api, answer)):
            guard let answer, portal(on: index, links: links)?.uri == api else {
                answers.removeValue(forKey: index)
                return .none
            }
            answers[index] = answer
        case .batchEnded:
            // The links are derived again: each interface shows its portal (`InterfaceStatus.portal`).
            defer { heard.removeAll() }
            for (index, received) in heard { routers[index]?.follow(at: received) }
            return LinksMoved(indices: Set(heard.keys))
        case let .clock(now):
            return clock(at: now, links: links)
        case let .routerGone(index, router):
            routers[index]?.forget(router: router)
            return LinksMoved(indices: [index])
        case let .linkDown(index):
            routers.removeValue(forKey: index)
        case let .linkGone(index):
            routers.removeValue(forKey: index)
            answers.removeValue(forKey: index)
        }
        return .none
    }

    /// One router's announcement on a ready link (the kernel accepted it there; a stale one for
    /// a link gone down since, or unknown, has nothing to attach to).
    private mutating func hear(
        on index: Int32, at received: ContinuousClock.Instant, links: Links,
        _ body: (inout LinkAnnouncements, (IPAddress) -> Bool) -> Bool
    ) {
        guard links.isReady(index) else { return }
        let dropped = body(&routers[index, default: LinkAnnouncements()]) {
            links.defaultRouters[LinkRouter(interfaceIndex: index, address: $0)] != nil
        }
        heard[index] = received
        guard dropped else { return }
        self.dropped &+= 1
        if let count = routers[index]?.countDrop(at: received) { drops.append(AnnouncementDrops(interfaceName: links.name(index), count: count)) }
    }

    /// Every link holding announcements (a few; each costs at most its capacity) and every
    /// session whose lead time began by `now` (its links' answers only: a few).
    private mutating func clock(at now: ContinuousClock.Instant, links: Links) -> LinksMoved {
        for index in routers.keys {
            guard let count = routers[index]?.clock(now) else { continue }
            drops.append(AnnouncementDrops(interfaceName: links.name(index), count: count))
        }
        for (index, answer) in answers {
            guard let at = answer.endingAt, at <= now, !answer.session.ending else { continue }
            answers[index]?.session.ending = true
        }
        return LinksMoved(indices: Set(routers.keys))
    }

    /// The portal API URI a ready link announces and where it came from: a router's
    /// announcement first (the kernel accepted it on this very link), else the DHCP client's.
    package func portal(on index: Int32, links: Links) -> (uri: String, source: PortalSource)? {
        guard let entry = links.entries[index], entry.link.isReady else { return nil }
        if let uri = routers[index]?.shown.portal?.uri { return (uri, .routerAdvertisement) }
        return dhcp[entry.link.name].map { ($0.uri, $0.source) }
    }

    /// The first instant something is due (an expiry, the end of a hold window, a drop report, a
    /// session's lead time); nil when nothing is. Linear in the links holding announcements
    /// only (each bounded), never in how many a host on the link sent.
    package var nextDeadline: ContinuousClock.Instant? {
        let announced = routers.values.lazy.compactMap(\.nextDeadline).min()
        let lead = answers.values.lazy.filter { !$0.session.ending }.compactMap(\.endingAt).min()
        return [announced, lead].compactMap { $0 }.min()
    }

    /// Held now, over every link (the metrics' gauge; bounded by the capacity).
    package var held: Int { routers.values.reduce(0) { $0 + $1.heldCount } }

    /// The refusals and drop reports since the last call, for the adapter's journal.
    package mutating func takeRefusals() -> [RefusedAnnouncement] {
        defer { refused.removeAll() }
        return refused
    }

    package mutating func takeDrops() -> [AnnouncementDrops] {
        defer { drops.removeAll() }
        return drops
    }
}
