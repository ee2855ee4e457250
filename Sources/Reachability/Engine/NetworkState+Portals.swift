/// Captive portals beyond a router's announcement: the URIs the host's DHCP client records
/// (`NetworkEvent.dhcpPortals`), by interface name, and each link's captive-portal API answer
/// (`NetworkEvent.portalAnswer`). The Engine reads no clock: an answer comes with the instant its
/// session is `ending`, and the adapter's one timer (`nextExpiry`) brings that time in.
struct LinkPortals: Sendable {
    /// What the DHCP client records, by interface name (a lease outlives the link's index).
    var dhcp: [String: DHCPPortal] = [:]
    /// The latest answer of each link's API, for the URI it was asked at.
    var answers: [Int32: PortalAnswer] = [:]
}

extension NetworkState {
    /// The portal API URI a ready link announces and where it came from: a router's
    /// announcement first (the kernel accepted it on this very link), else the DHCP client's.
    func linkPortal(on index: Int32) -> (uri: String, source: PortalSource)? {
        guard let entry = links[index], entry.link.isReady else { return nil }
        if let uri = announcedPortal(on: index) { return (uri, .routerAdvertisement) }
        return portals.dhcp[entry.link.name].map { ($0.uri, $0.source) }
    }

    /// The session the API of link `index` last told, while the link still announces that API.
    func portalSession(on index: Int32) -> PortalSession? {
        guard let answer = portals.answers[index], linkPortal(on: index)?.uri == answer.api else { return nil }
        return answer.session
    }

    /// The link among `names` (those a path leaves through: the primary, the link a tunnel runs
    /// over) whose announced captive-portal API answered for it, as the host's session is chosen
    /// (`deriveHost`); nil while the network says nothing. The probe keeps quiet while there is one.
    public func portalAPIAnswers(through names: [String]) -> String? {
        let announcer = names.lazy.compactMap { self.linkIndexByName[$0] }.first { self.linkPortal(on: $0) != nil }
        guard let announcer, portalSession(on: announcer) != nil else { return nil }
        return links[announcer]?.link.name
    }

    /// Takes what the DHCP client records now; the links they name are derived again.
    mutating func hearDHCPPortals(_ list: [DHCPPortal]) {
        var now: [String: DHCPPortal] = [:]
        for portal in list { now[portal.interfaceName] = portal }
        for name in Set(now.keys).union(portals.dhcp.keys) where now[name] != portals.dhcp[name] {
            if let index = linkIndexByName[name] { dirty.insert(index) }
        }
        portals.dhcp = now
    }

    /// Takes an API's answer for `api` on link `index`: kept while the link is ready and still
    /// announces that URI; nil forgets the answer before it.
    mutating func hearPortalAnswer(index: Int32, api: String, _ answer: PortalAnswer?) {
        guard let answer, linkPortal(on: index)?.uri == api else {
            portals.answers.removeValue(forKey: index)
            return
        }
        portals.answers[index] = answer
    }

    /// Sessions whose lead time began by `now` are `ending` (their links' answers only: a few).
    mutating func clockPortals(at now: ContinuousClock.Instant) {
        for (index, answer) in portals.answers {
            guard let at = answer.endingAt, at <= now, !answer.session.ending else { continue }
            portals.answers[index]?.session.ending = true
        }
    }

    /// The first instant a session's lead time begins; nil when none is due.
    var nextPortalDeadline: ContinuousClock.Instant? {
        portals.answers.values.lazy.filter { !$0.session.ending }.compactMap(\.endingAt).min()
    }

    /// A link went away: its API's answer with it (its DHCP record goes when the client says so).
    mutating func forgetPortalAnswer(of index: Int32) {
        portals.answers.removeValue(forKey: index)
    }
}

extension NetworkEvent {
    /// Facts that can change no route lookup's answer: they do not move the routing epoch.
    var movesNoRoute: Bool {
        switch self {
        case .internetPath, .connectivity, .announcedPortal, .nat64Prefix, .clock, .uplinkConnectivity, .stalls, .nameservers, .radio,
            .dhcpMetered, .dhcpPortals, .portalAnswer, .networkManagerMetered, .neighbour, .neighbourRemoved:
            true
        default: false
        }
    }
}
