/// The Engine: a mirror of the kernel's links, addresses and routes, and the reachability
/// derived from them. Pure: facts in, state and changes out; no I/O, no clocks.
///
/// Cost per event does not grow with the number of interfaces: an event marks the links it
/// touches, and only those are re-derived; the host status looks only at default routes.
package struct NetworkState: Sendable {
    package struct LinkEntry: Sendable {
        package var link: Link
        package var device: DeviceFacts
        package var classification: Classification
        package var addresses: [Address.Key: Address] = [:]
    }

    public private(set) var generation: UInt64 = 0
    /// Moves with every fact that can change a route lookup's answer (links, addresses, routes,
    /// rules), visible or not: an answer for a single target (a watch) may change even when
    /// nothing the host shows did.
    public internal(set) var routingEpoch: UInt64 = 0
    public private(set) var host = HostStatus()
    /// Where the host's internet traffic leaves from (NetworkState+Addressing): part of the
    /// host's answer for changes, so a replaced source address is a host change.
    public private(set) var addressing = HostAddressing()
    public private(set) var classifier: Classifier
    /// The host's secret for network names (`networkID`); without one, names are stable but
    /// anyone could compute them.
    public var networkKey = NetworkKey.none

    package private(set) var links: [Int32: LinkEntry] = [:]
    package private(set) var routes: [Route.Key: Route] = [:]
    package private(set) var routesByInterface: [Int32: Set<Route.Key>] = [:]
    /// Default routes (prefix length 0) of the main and default tables. A policy table's default
    /// (a second uplink for one source address) serves only the traffic its rule selects.
    package private(set) var defaultRoutes: Set<Route.Key> = []
    /// The kernel's answers for a global destination, per family (`NetworkEvent.internetPath`).
    package private(set) var internetPaths: [AddressFamily: Route] = [:]
    /// The probe's and the stall watch's verdicts (LinkStores).
    package var verdicts = Verdicts()
    /// What routers and the DHCP client announce, and portal APIs' answers (Announcements).
    package var announcements = Announcements()
    /// The kernel's default routes counted by router (NetworkState+Announcements).
    package var defaultRouters: [LinkRouter: Int] = [:]
    /// The kernel's neighbour state of those routers, when it has one (NetworkState+Neighbours).
    package var gatewayNeighbours: [LinkRouter: GatewayNeighbour] = [:]
    /// The configured nameservers with the kernel's route to each (`NetworkEvent.nameservers`).
    package private(set) var nameservers: [NameserverRoute] = []
    /// The radios' switches and what DHCP and NetworkManager say of cost (LinkStores).
    package private(set) var radios = Radios()
    package private(set) var meteredHints = MeteredHints()
    /// Set by the first `internetPath` fact: from then on the host follows the kernel's answers.
    package private(set) var followsKernelPaths = false
    /// Bridge (or bond) index -> its ports, for kinds taken from ports.
    package private(set) var ports: [Int32: Set<Int32>] = [:]
    /// Derived status of every visible (not ignored) link.
    package private(set) var statuses: [Int32: InterfaceStatus] = [:]
    /// Visible non-loopback links that are ready with a usable address: "local" connectivity.
    package private(set) var readyLinks: Set<Int32> = []
    /// Ready non-loopback links with an address usable beyond the link, per address family:
    /// the kernel can take a source address from any of them.
    package private(set) var sourceCapable: [AddressFamily: Set<Int32>] = [:]
    package var dirty: Set<Int32> = []
    /// Local address -> the links holding it (the kernel allows one address on several links),
    /// for naming the interface of `isLocalAddress` answers.
    package private(set) var addressOwners: [IPAddress: Set<Int32>] = [:]
    /// The kernel's replace identity (table, destination, metric, TOS) -> the routes in that slot,
    /// so NLM_F_REPLACE finds the route it replaces whatever link either one uses.
    private var routesBySlot: [RouteSlot: Set<Route.Key>] = [:]
    /// Name -> index, for scoped addresses (`fe80::1%eth0`) without a pass over every link.
    package private(set) var linkIndexByName: [String: Int32] = [:]
    /// The routes and addresses that lapse on time (`Route.expiry`, `Address.validUntil`): the
    /// few a lifetime applies to, so finding the next deadline never walks every route.
    package var expiringRoutes: Set<Route.Key> = []
    package var expiringAddresses: Set<Address.Key> = []

    public init(classifier: Classifier = Classifier()) {
        self.classifier = classifier
    }

    // MARK: input

    /// Applies one batch of kernel facts. Returns what a user can see changed, or nil when
    /// nothing visible did: one batch yields at most one change.
    public mutating func apply<Events: Sequence<NetworkEvent>>(_ events: Events) -> ReachabilityChange? {
        let epoch = routingEpoch
        var (quiet, any) = (true, false)
        for event in events {
            ingest(event)
            (quiet, any) = (quiet && event.isNeighbourFact, true)
        }
        // Gateways' ARP/ND states that flipped nothing and renamed no network show nothing: no
        // derivation (a host on the link can have the kernel tell of a claim each millisecond).
        // An empty batch still publishes (a dump's held facts were taken before it).
        return any && quiet && routingEpoch == epoch && dirty.isEmpty ? nil : publish()
    }

    /// Replaces everything with a fresh dump (initial sync or resync after an overrun),
    /// reporting only what really differs from before. `held`: facts read before the dump was
    /// asked for, applied first (the dump settles what they say of links, addresses and routes;
    /// what only they carry, a router's options, stays); `following`: facts taken after it.
    public mutating func replace(
        with dump: NetworkDump, after held: [NetworkEvent] = [], then following: [NetworkEvent] = []
    ) -> ReachabilityChange? {
        for event in held { ingest(event) }
        return apply(reconcilingEvents(with: dump) + following)
    }

    /// Re-classifies every link with new configuration (a reload). Touches every link: rare by nature.
    public mutating func reclassify(with classifier: Classifier) -> ReachabilityChange? {
        self.classifier = classifier
        for index in links.keys {
            guard let entry = links[index] else { continue }
            links[index]?.classification = classifier.classify(entry.link, device: entry.device)
            dirty.insert(index)
        }
        return publish()
    }

    private mutating func ingest(_ event: NetworkEvent) {
        if !event.movesNoRoute { routingEpoch &+= 1 }
        switch event {
        case let .link(link, device):
            updateLink(link, device: device)
        case let .linkRemoved(index):
            removeLink(index)
        case let .address(address):
            guard links[address.interfaceIndex] != nil else { return }
            links[address.interfaceIndex]?.addresses[address.key] = address
            addressOwners[address.address, default: []].insert(address.interfaceIndex)
            if address.validUntil == nil { expiringAddresses.remove(address.key) } else { expiringAddresses.insert(address.key) }
            dirty.insert(address.interfaceIndex)
        case let .addressRemoved(address):
            removeAddress(address)
        case let .route(route, replace):
            if replace { removeRoutes(inSlotOf: route) }
            insertRoute(route)
        case let .routeRemoved(route):
            removeRoute(route.key)
        case .rulesChanged:
            break  // the kernel's answers that follow (`internetPath`) carry the consequence
        case let .internetPath(family, route):
            followsKernelPaths = true
            internetPaths[family] = route
        case let .nameservers(list):
            nameservers = list
        case let .announcedPortal(portal, received): take(.portal(portal, received: received))
        case let .nat64Prefix(announced, received):
            hear(announced, received: received)
        case let .clock(now): clock(at: now)
        case let .verdict(verdict): take(verdict)
        case let .neighbour(neighbour):
            // Only a gateway's flip between answering and not moves a lookup's answer.
            if hear(neighbour) { routingEpoch &+= 1 }
        case let .neighbourRemoved(neighbour):
            if forget(neighbour) { routingEpoch &+= 1 }
        case let .radio(index, block):
            guard links[index] != nil else { return }
            derive(radios.take(.switches(index: index, block)))
        case let .meteredHint(hint):
            if case let .dhcp(index, _) = hint, links[index] == nil { return }
            derive(meteredHints.take(hint))
        case let .captivePortal(fact): take(.captivePortal(fact))
        }
    }

    private mutating func updateLink(_ link: Link, device: DeviceFacts?) {
        let old = links[link.index]
        let facts = device ?? old?.device ?? DeviceFacts()
        let classification: Classification
        if let old, old.link.name == link.name, old.link.infoKind == link.infoKind,
            old.link.hardwareType == link.hardwareType, old.device == facts, old.link.flags.contains(.loopback) == link.flags.contains(.loopback)
        {
            classification = old.classification
        } else {
            classification = classifier.classify(link, device: facts)
        }
        var entry = old ?? LinkEntry(link: link, device: facts, classification: classification)
        entry.link = link
        entry.device = facts
        entry.classification = classification
        links[link.index] = entry
        if let old, old.link.name != link.name, linkIndexByName[old.link.name] == link.index {
            linkIndexByName.removeValue(forKey: old.link.name)
        }
        linkIndexByName[link.name] = link.index
        dirty.insert(link.index)

        if old?.link.master != link.master {
            if let previous = old?.link.master {
                ports[previous]?.remove(link.index)
                dirty.insert(previous)
            }
            if let master = link.master {
                ports[master, default: []].insert(link.index)
                dirty.insert(master)
            }
        } else if let master = link.master, old?.classification != classification {
            dirty.insert(master)
        }
        // The kernel flushes a downed link's routes without telling (IPv4 sends no RTM_DELROUTE).
        if !link.isAdminUp, old?.link.isAdminUp ?? true {
            removeRoutes(through: link.index)
        }
        // A link that went down may come back on another network: its announcement is gone.
        if !link.isReady {
            take(Announcements.Event.linkDown(link.index))
            verdicts.forget(link.index)
        }
    }

    private mutating func removeLink(_ index: Int32) {
        guard let old = links.removeValue(forKey: index) else { return }
        if linkIndexByName[old.link.name] == index { linkIndexByName.removeValue(forKey: old.link.name) }
        for key in old.addresses.keys {
            removeOwner(index, of: key.prefix.address)
            expiringAddresses.remove(key)
        }
        if let master = old.link.master {
            ports[master]?.remove(index)
            dirty.insert(master)
        }
        for port in ports.removeValue(forKey: index) ?? [] { dirty.insert(port) }
        removeRoutes(through: index)
        take(.linkGone(index))
        verdicts.forget(index)
        derive(radios.take(.linkGone(index)))
        meteredHints.forget(index)
        for router in gatewayNeighbours.keys where router.interfaceIndex == index { gatewayNeighbours.removeValue(forKey: router) }
        dirty.insert(index)
    }

    package mutating func removeAddress(_ address: Address) {
        let index = address.interfaceIndex
        guard links[index]?.addresses.removeValue(forKey: address.key) != nil else { return }
        expiringAddresses.remove(address.key)
        removeOwner(index, of: address.address)
        dirty.insert(index)
        guard case .v4 = address.address else { return }
        // The kernel silently drops IPv4 routes that used this address as source, and every IPv4
        // route of the link once its last IPv4 address is gone (fib_del_ifaddr / fib_disable_ip).
        let hasIPv4Left = links[index]?.addresses.keys.contains { $0.prefix.address.family == address.address.family } ?? false
        for key in routesByInterface[index] ?? [] {
            guard let route = routes[key], route.destination.address.family == address.address.family else { continue }
            if !hasIPv4Left || route.preferredSource == address.address { removeRoute(key) }
        }
    }

    private mutating func removeOwner(_ index: Int32, of address: IPAddress) {
        addressOwners[address]?.remove(index)
        if addressOwners[address]?.isEmpty == true { addressOwners.removeValue(forKey: address) }
    }

    private mutating func insertRoute(_ route: Route) {
        guard route.table != Route.localTable else { return }
        let key = route.key
        if routes.updateValue(route, forKey: key) == nil { countDefaultRouters(of: route, added: true) }
        if route.expiry == nil { expiringRoutes.remove(key) } else { expiringRoutes.insert(key) }
        routesBySlot[RouteSlot(route), default: []].insert(key)
        for hop in route.nextHops {
            if let index = hop.interfaceIndex { routesByInterface[index, default: []].insert(key) }
        }
        if route.destination.isDefault, route.table == Route.mainTable || route.table == Route.defaultTable {
            defaultRoutes.insert(key)
        }
        // A default route's gateway is part of a link's own facts (the hotspot layout).
        if route.destination.isDefault { for hop in route.nextHops { if let index = hop.interfaceIndex { dirty.insert(index) } } }
    }

    package mutating func removeRoute(_ key: Route.Key) {
        guard let route = routes.removeValue(forKey: key) else { return }
        expiringRoutes.remove(key)
        if route.destination.isDefault {
            countDefaultRouters(of: route, added: false)
            forgetAnnouncements(by: route)
        }
        let slot = RouteSlot(route)
        routesBySlot[slot]?.remove(key)
        if routesBySlot[slot]?.isEmpty == true { routesBySlot.removeValue(forKey: slot) }
        for hop in key.nextHops {
            if let index = hop.interfaceIndex {
                routesByInterface[index]?.remove(key)
                if route.destination.isDefault { dirty.insert(index) }
            }
        }
        defaultRoutes.remove(key)
    }

    private mutating func removeRoutes(inSlotOf route: Route) {
        for key in routesBySlot[RouteSlot(route)] ?? [] where key != route.key { removeRoute(key) }
    }

    private mutating func removeRoutes(through index: Int32) {
        for key in routesByInterface.removeValue(forKey: index) ?? [] { removeRoute(key) }
    }

    // MARK: derivation

    private mutating func publish() -> ReachabilityChange? {
        take(.batchEnded)
        var changed: [InterfaceStatus] = []
        var removed: [InterfaceStatus] = []
        for index in dirty {
            let new = links[index].flatMap { derive($0) }
            let old = statuses[index]
            if new == old { continue }
            if let new {
                statuses[index] = new
                changed.append(new)
            } else if let old {
                statuses.removeValue(forKey: index)
                removed.append(old)
            }
        }
        for index in dirty { updateReadiness(index) }
        // Keeping a large capacity would make every later event walk it (after a sync of
        // thousands of links): keep it only while small.
        dirty.removeAll(keepingCapacity: dirty.count <= 64)

        var newHost = deriveHost()
        newHost.pathFacts = pathFacts(online: newHost.state == .online, uplinks: newHost.availableInterfaces)
        let newAddressing = deriveAddressing(primary: newHost.primaryInterface)
        let hostChanged = newHost != host || newAddressing != addressing
        let description = hostChanged ? HostChange(from: host, addressing, to: newHost, newAddressing) : nil
        host = newHost
        addressing = newAddressing
        guard hostChanged || !changed.isEmpty || !removed.isEmpty else { return nil }
        generation += 1
        return ReachabilityChange(
            generation: generation, host: host, hostChanged: hostChanged,
            changedInterfaces: changed.sorted { $0.index < $1.index },
            removedInterfaces: removed.sorted { $0.index < $1.index }, hostChange: description)
    }

    private mutating func updateReadiness(_ index: Int32) {
        let entry = links[index].flatMap { $0.link.isReady && !$0.link.isLoopback ? $0 : nil }
        if let entry, !entry.classification.isIgnored, entry.addresses.values.contains(where: \.isUsable) {
            readyLinks.insert(index)
        } else {
            readyLinks.remove(index)
        }
        for family in AddressFamily.allCases {
            let capable = entry?.addresses.values.contains { $0.address.family == family && $0.isUsableBeyondLink } ?? false
            if capable { sourceCapable[family, default: []].insert(index) } else { sourceCapable[family]?.remove(index) }
        }
    }
}
