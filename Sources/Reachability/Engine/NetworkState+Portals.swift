/// Captive portals beyond a router's announcement (kept by the `Announcements` store): the URIs
/// the host's DHCP client records (`NetworkEvent.dhcpPortals`), by interface name, and each
/// link's captive-portal API answer (`NetworkEvent.portalAnswer`).
extension NetworkState {
    /// The portal API URI a ready link announces and where it came from: a router's
    /// announcement first (the kernel accepted it on this very link), else the DHCP client's.
    package func linkPortal(on index: Int32) -> (uri: String, source: PortalSource)? {
        announcements.portal(on: index, links: announcingLinks)
    }

    /// The session the API of link `index` last told, while the link still announces that API.
    package func portalSession(on index: Int32) -> PortalSession? {
        guard let answer = announcements.answers[index], linkPortal(on: index)?.uri == answer.api else { return nil }
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
}

extension NetworkEvent {
    /// Facts that can change no route lookup's answer: they do not move the routing epoch.
    package var movesNoRoute: Bool {
        switch self {
        case .internetPath, .announcedPortal, .nat64Prefix, .clock, .nameservers, .radio, .verdict, .meteredHint, .captivePortal,
            .neighbour, .neighbourRemoved:
            true
        default: false
        }
    }
}
