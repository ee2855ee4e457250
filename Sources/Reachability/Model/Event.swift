/// One fact, from the kernel or a source beside it, as the Engine consumes it.
package enum NetworkEvent: Hashable, Sendable {
    /// RTM_NEWLINK: a link appeared or changed. `device` carries the sysfs facts read for it;
    /// nil keeps the facts already known (the adapter reads sysfs only for new or renamed links).
    case link(Link, device: DeviceFacts?)
    /// RTM_DELLINK.
    case linkRemoved(index: Int32)
    /// RTM_NEWADDR: added or updated (lifetimes, flags such as tentative).
    case address(Address)
    /// RTM_DELADDR.
    case addressRemoved(Address)
    /// RTM_NEWROUTE; `replace` is NLM_F_REPLACE: the route takes over its slot from any other next hop.
    case route(Route, replace: Bool)
    /// RTM_DELROUTE.
    case routeRemoved(Route)
    /// RTM_NEWRULE / RTM_DELRULE: policy routing changed (paths may move with no route event).
    case rulesChanged
    /// The kernel's own answer (RTM_GETROUTE) for a global destination of `family`: the path
    /// internet traffic takes now, over every table and `ip rule`; nil when it has none. Once the
    /// Engine has been given one, the host's answer follows these instead of the 0/0 routes of the
    /// main table (see `NetworkState.deriveHost`).
    case internetPath(family: AddressFamily, route: Route?)
    /// RTM_NEWNDUSEROPT with a router advertisement's captive-portal option (RFC 8910): what the
    /// network says about a portal on that link, stamped by the adapter with when it was received
    /// (announcements are published through a hold window). Moves no route, so no routing epoch.
    case announcedPortal(AnnouncedPortal, received: ContinuousClock.Instant)
    /// RTM_NEWNDUSEROPT with a router advertisement's PREF64 option (RFC 8781), stamped by the
    /// adapter with when it was received: held until `received + lifetime`. Moves no route.
    case nat64Prefix(AnnouncedNat64Prefix, received: ContinuousClock.Instant)
    /// Not from the kernel: the loop's timer for `NetworkState.nextExpiry` (or the end of a dump),
    /// with the time now. Announcements, routes and addresses whose lifetime ended by then are
    /// dropped, and announcements a hold window kept back are published; a route or address that
    /// lapsed moves the routing epoch.
    case clock(ContinuousClock.Instant)
    /// Not from the kernel alone: the nameservers resolv.conf names (after `NameserverRoute`'s
    /// rule for a systemd-resolved stub), each with the kernel's route to it, looked up again
    /// with every batch as the internet paths are. Gives `supportsDNS`; moves no route.
    case nameservers([NameserverRoute])
    /// Not from rtnetlink: the rfkill state of a link's radio (/dev/rfkill, or sysfs read on the
    /// link's own events); empty when it is on. Counts only for Wi-Fi and cellular links
    /// (`radioOff`), moves no route.
    case radio(index: Int32, RadioBlock)
    /// Not from the kernel: a verdict of reachd's probe or stall watch on the traffic. Moves no route.
    case verdict(TrafficVerdict)
    /// Not from rtnetlink: what a DHCP server or NetworkManager says of a link's cost. Counts
    /// toward `isExpensive`, moves no route.
    case meteredHint(MeteredHint)
    /// Not from rtnetlink: the DHCP client's portal URIs, or a portal API's answer. Moves no route.
    case captivePortal(CaptivePortalFact)
    /// RTM_NEWNEIGH: the kernel's ARP/ND state of a neighbour. Kept only for the gateways of
    /// default routes (`NetworkState.isGateway`); a gateway FAILED on every live hop of the host's
    /// path makes it `gatewayUnreachable`. Moves the routing epoch only when a gateway starts or
    /// stops failing.
    case neighbour(Neighbour)
    /// RTM_DELNEIGH: the entry is gone (garbage collection); its state is unknown again.
    case neighbourRemoved(Neighbour)
}

/// The facts of the sources beside the kernel, each source's own kind, as `NetworkEvent`
/// carries them; built as before (`.connectivity(status)`, `.dhcpMetered(index:_:)`...).
extension NetworkEvent {
    /// Not from the kernel: the connectivity probe's verdict on the host's path (reachd's opt-in
    /// `[Connectivity]` probe). It joins the host's answer (`HostStatus.connectivity`, and the
    /// `validated` or `interventionRequired` flag) but moves no route, so no routing epoch.
    package static func connectivity(_ status: ConnectivityStatus) -> NetworkEvent { .verdict(.connectivity(status)) }
    /// Not from the kernel: the probe's verdict on one uplink other than the primary, reached
    /// through that link alone (`Uplink`); `unknown` forgets it. Moves no route.
    package static func uplinkConnectivity(index: Int32, _ verdict: ConnectivityVerdict) -> NetworkEvent {
        .verdict(.uplink(index: index, verdict))
    }
    /// Not from the kernel: one stall poll's verdicts (`StallReport.links`), every link with
    /// evidence; a link not listed has none. An empty list forgets every verdict (detection off,
    /// or no path to watch). Joins the interfaces' and the host's answer (`stalled`), moves no route.
    package static func stalls(_ verdicts: [LinkStall]) -> NetworkEvent { .verdict(.stalls(verdicts)) }
    /// Not from rtnetlink: whether the DHCP server of a link's lease says the network is metered
    /// (option 43 carrying `ANDROID_METERED`, as Android's hotspots send it), read from the lease
    /// the host's DHCP client records (`DHCPLeases`). Counts toward `isExpensive`, moves no route.
    package static func dhcpMetered(index: Int32, _ metered: Bool) -> NetworkEvent { .meteredHint(.dhcp(index: index, metered)) }
    /// Not from rtnetlink: what NetworkManager, while it runs, says of the cost of the device
    /// whose IP interface has this name (its `Metered`); `unknown` forgets it (the device went,
    /// or NetworkManager did). By name, as NetworkManager names its devices, so it holds for a
    /// link that appears after it. Counts toward `isExpensive`, moves no route.
    package static func networkManagerMetered(interface: String, _ said: NetworkManagerMetered) -> NetworkEvent {
        .meteredHint(.networkManager(interface: interface, said))
    }
    /// Not from rtnetlink: every captive-portal URI the host's DHCP client records now (DHCPv4
    /// option 114, DHCPv6 option 103; `DHCPLeases`), replacing those said before. Shown for a
    /// ready link of that name that no router announced a portal on. Moves no route.
    package static func dhcpPortals(_ list: [DHCPPortal]) -> NetworkEvent { .captivePortal(.dhcp(list)) }
    /// Not from the kernel: a link's captive-portal API answered (`PortalAnswer`), or, with
    /// a nil session, was found wanting (the answer before it no longer holds). Moves no route.
    package static func portalAnswer(index: Int32, api: String, _ answer: PortalAnswer?) -> NetworkEvent {
        .captivePortal(.answer(index: index, api: api, answer))
    }
}

/// The probe's and the stall watch's verdicts (`NetworkEvent.verdict`).
package enum TrafficVerdict: Hashable, Sendable {
    case connectivity(ConnectivityStatus)
    case uplink(index: Int32, ConnectivityVerdict)
    case stalls([LinkStall])
}

/// What is said of a link's cost beside its kind (`NetworkEvent.meteredHint`).
package enum MeteredHint: Hashable, Sendable {
    case dhcp(index: Int32, Bool)
    case networkManager(interface: String, NetworkManagerMetered)
}

/// Captive portals beside routers' announcements (`NetworkEvent.captivePortal`).
package enum CaptivePortalFact: Hashable, Sendable {
    case dhcp([DHCPPortal])
    case answer(index: Int32, api: String, PortalAnswer?)
}

/// One configured nameserver and the kernel's answer for it (RTM_GETROUTE): nil when it has
/// no route, a route of a blocking type when a rule or route refuses it.
package struct NameserverRoute: Hashable, Sendable {
    public var address: IPAddress
    public var route: Route?

    public init(address: IPAddress, route: Route?) {
        self.address = address
        self.route = route
    }
}

/// A complete picture from a dump: what a (re)sync replaces the state with.
package struct NetworkDump: Sendable {
    public var links: [(Link, DeviceFacts?)]
    public var addresses: [Address]
    public var routes: [Route]
    /// The kernel's internet paths taken right after the dump (see `NetworkEvent.internetPath`).
    public var internetPaths: [(family: AddressFamily, route: Route?)]
    /// The radio state of the dump's Wi-Fi and cellular links (see `NetworkEvent.radio`).
    public var radios: [(index: Int32, block: RadioBlock)]
    /// The kernel's neighbour table (the state keeps the gateways' entries only).
    public var neighbours: [Neighbour]

    public init(
        links: [(Link, DeviceFacts?)] = [], addresses: [Address] = [], routes: [Route] = [],
        internetPaths: [(family: AddressFamily, route: Route?)] = [], radios: [(index: Int32, block: RadioBlock)] = [],
        neighbours: [Neighbour] = []
    ) {
        self.neighbours = neighbours
        self.links = links
        self.addresses = addresses
        self.routes = routes
        self.internetPaths = internetPaths
        self.radios = radios
    }
}
