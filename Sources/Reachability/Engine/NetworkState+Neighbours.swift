/// The kernel's neighbour state of the gateways (`NetworkEvent.neighbour`): ARP and ND's own
/// verdict on whether the next hop answers. Only gateways of default routes the state holds are
/// kept (`defaultRouters`), at most `gatewayNeighboursKept` of them: a host on the link answering
/// or refusing ARP for thousands of addresses makes the kernel's table grow, never reachd's.
///
/// One FAILED is not enough: anyone on the link can claim the gateway's address with a MAC that
/// answers nothing (one forged ARP reply), and the kernel's next resolution of that MAC fails
/// while the real router is fine. So a FAILED gateway is resolved afresh by the adapter
/// (`gatewaysToResolve`: the kernel broadcasts its own requests again, which the real router
/// answers), and only when `freshResolutions` such resolutions failed too is it unreachable.
package struct GatewayNeighbour: Hashable, Sendable {
    package var state: NeighbourState
    /// Resolutions that ended FAILED in a row, since the last answer; 0 while it answers.
    package var failures = 0
    /// The gateway's link-layer address as the kernel's own resolution last confirmed it (or as
    /// first seen), kept while resolution is under way again or failed: the network's name
    /// (`networkID`) changes with it, never with a claim nobody asked for.
    package var linkLayerAddress: [UInt8] = []
    /// When the kernel last had an answer from it, as far as it told (NDA_CACHEINFO).
    package var answered: ContinuousClock.Instant?
    /// False once the kernel dropped the entry (garbage collection, which a host filling the
    /// table can force): what it answered is kept for the network's name, which must not
    /// flicker while the router answers, but the kernel holds no state of it.
    package var inTable = true

    /// Its own FAILED and every fresh resolution's failed too, or it never answered at all;
    /// INCOMPLETE while asked again after that still counts. STALE, DELAY and PROBE are a live gateway's ordinary states.
    package var unreachable: Bool { failures > NetworkState.freshResolutions }
}

extension NetworkState {
    /// More gateways than any real host has; past this, new ones are not followed.
    package static let gatewayNeighboursKept = 64

    /// How many times a FAILED gateway is resolved afresh before it counts as unreachable. Each
    /// takes the kernel's own solicitations (3 at 1 s by default), so two keep the verdict on a
    /// dead router within about 7 s of its first FAILED, and a forged claim costs the host nothing.
    public static let freshResolutions = 2

    /// Whether `address` on link `index` is the gateway of a default route held: the one
    /// neighbour entries the state keeps (the mirror drops the others before they become events).
    public func isGateway(_ address: IPAddress, on index: Int32) -> Bool {
        defaultRouters[LinkRouter(interfaceIndex: index, address: address)] != nil
    }

    /// The kernel's neighbour state of gateway `address` on link `index`; nil when not known
    /// (no packet went that way yet, the entry was garbage-collected, or it is no gateway).
    public func gatewayState(_ address: IPAddress, on index: Int32) -> NeighbourState? {
        gatewayNeighbours[LinkRouter(interfaceIndex: index, address: address)].flatMap { $0.inTable ? $0.state : nil }
    }

    /// Whether ARP/ND gave up on gateway `address` of link `index`, fresh resolutions included
    /// (see `GatewayNeighbour`).
    public func isGatewayUnreachable(_ address: IPAddress, on index: Int32) -> Bool {
        gatewayNeighbours[LinkRouter(interfaceIndex: index, address: address)]?.unreachable ?? false
    }

    /// The gateways whose last resolution FAILED, for the adapter to have the kernel resolve
    /// afresh, with how many failed in a row (its back-off grows with them). At most
    /// `gatewayNeighboursKept`.
    public var gatewaysToResolve: [GatewayToResolve] {
        gatewayNeighbours.compactMap { router, known in
            known.state == .failed ? GatewayToResolve(interfaceIndex: router.interfaceIndex, address: router.address, failures: known.failures) : nil
        }
    }

    /// Takes one neighbour fact; true when a gateway's reachability flipped (a route lookup's
    /// answer may change with it).
    package mutating func hear(_ neighbour: Neighbour) -> Bool {
        let router = LinkRouter(interfaceIndex: neighbour.interfaceIndex, address: neighbour.address)
        guard defaultRouters[router] != nil else { return false }
        let old = gatewayNeighbours[router]
        guard old != nil || gatewayNeighbours.count < Self.gatewayNeighboursKept else { return false }
        var known = old ?? GatewayNeighbour(state: .none)
        // The kernel tells of each resolution's end once (it goes INCOMPLETE again silently on
        // the next packet), so every FAILED is one more that failed; a dump's copy of a FAILED
        // already known is no new one (`reconcilingEvents`). A gateway that never answered
        // (no address known: the kernel's first resolution, or reachd's start) is taken at its
        // word: a forged claim would have come first, and with it an address.
        switch neighbour.state {
        case .failed: known.failures = known.linkLayerAddress.isEmpty ? max(known.failures + 1, Self.freshResolutions + 1) : known.failures + 1
        case .incomplete, .none: break
        case .reachable, .stale, .delay, .probe, .noARP, .permanent:
            known.failures = 0
            // Only an entry that got an answer has a real one to date (a new entry's is made up).
            if let answered = neighbour.answered { known.answered = answered }
        }
        // A new address counts when the kernel's own resolution got it (its broadcast requests
        // answered: from INCOMPLETE, which it goes to silently after FAILED), an administrator
        // set it, or none was known; not when a host on the link claimed the gateway's address
        // unasked (an ARP request, a gratuitous reply), nor in PROBE, where the kernel asks the
        // address it holds by unicast and an answer from another is no answer to it.
        // A new entry (NONE) answered is the kernel's broadcast resolution too: without an
        // entry the kernel takes no reply, and a request's claim makes it STALE.
        let resolved = neighbour.state == .reachable && [.incomplete, .failed, .none].contains(known.state)
        if !neighbour.linkLayerAddress.isEmpty,
           resolved || neighbour.state == .permanent || neighbour.state == .noARP || known.linkLayerAddress.isEmpty {
            // The link's network has a name from now on (`networkID(of:)`), and perhaps a rule.
            if neighbour.linkLayerAddress != known.linkLayerAddress { dirty.insert(neighbour.interfaceIndex) }
            known.linkLayerAddress = neighbour.linkLayerAddress
        }
        known.state = neighbour.state
        known.inTable = true
        gatewayNeighbours[router] = known
        return known.unreachable != (old?.unreachable ?? false)
    }

    /// The events that turn the gateways' entries into a dump's `neighbours`. A FAILED entry
    /// the state already holds as FAILED is the same failure seen again, not a fresh resolution
    /// that failed too (`GatewayNeighbour.failures`).
    package func reconcilingEvents(withNeighbours neighbours: [Neighbour]) -> [NetworkEvent] {
        let dumped = Set(neighbours.map { LinkRouter(interfaceIndex: $0.interfaceIndex, address: $0.address) })
        var events: [NetworkEvent] = gatewayNeighbours.compactMap { router, known in
            dumped.contains(router) ? nil
                : .neighbourRemoved(Neighbour(interfaceIndex: router.interfaceIndex, address: router.address, state: known.state))
        }
        for neighbour in neighbours {
            let router = LinkRouter(interfaceIndex: neighbour.interfaceIndex, address: neighbour.address)
            if neighbour.state == .failed, gatewayNeighbours[router]?.state == .failed { continue }
            events.append(.neighbour(neighbour))
        }
        return events
    }

    /// The kernel dropped the entry (garbage collection): its state is not known any more, but
    /// the address it answered with still names the network (see `GatewayNeighbour.inTable`).
    /// The link or the route going takes it all.
    package mutating func forget(_ neighbour: Neighbour) -> Bool {
        let router = LinkRouter(interfaceIndex: neighbour.interfaceIndex, address: neighbour.address)
        guard let known = gatewayNeighbours[router] else { return false }
        if known.linkLayerAddress.isEmpty {
            gatewayNeighbours.removeValue(forKey: router)
        } else {
            gatewayNeighbours[router] = GatewayNeighbour(
                state: .none, linkLayerAddress: known.linkLayerAddress, answered: known.answered, inTable: false)
        }
        return known.unreachable
    }

    /// Every hop of `route` through a ready link goes through a gateway ARP/ND gave up on.
    package func gatewaysUnreachable(_ route: Route) -> Bool {
        var any = false
        for hop in route.nextHops {
            guard let index = hop.interfaceIndex, links[index]?.link.isReady == true else { continue }
            guard let gateway = hop.gateway, isGatewayUnreachable(gateway, on: index) else { return false }
            any = true
        }
        return any
    }
}

/// A gateway the kernel last failed to resolve (`NetworkState.gatewaysToResolve`).
package struct GatewayToResolve: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var address: IPAddress
    /// Resolutions that failed in a row, this one included.
    public var failures: Int
}

extension NetworkState {
    /// The name of the network link `index` is attached to: that of its default routes' gateway
    /// (IPv4's first, the lowest address of a family first, so one network keeps one name
    /// whichever family the host's path takes); empty with no gateway, or none resolved yet.
    public func networkID(of index: Int32) -> String {
        let gateway = defaultRouters.keys.lazy.filter { $0.interfaceIndex == index }.map(\.address)
            .min { (a: IPAddress, b: IPAddress) -> Bool in
                a.family != b.family ? a.family < b.family : a.bytes.lexicographicallyPrecedes(b.bytes)
            }
        return networkID(link: index, gateway: gateway)
    }

    /// The name of the network link `index` reaches `gateway` on (`NetworkIdentity`): the
    /// gateway's link-layer address and the link's prefix that holds it. Empty until ARP/ND has
    /// resolved the gateway once (so the name never changes when it does), and for a path with
    /// no gateway; on a link without ARP (a tunnel, PPP), the gateway's address stands for it.
    package func networkID(link index: Int32?, gateway: IPAddress?) -> String {
        guard let index, let entry = links[index], let gateway else { return "" }
        guard let prefix = entry.addresses.values.map(\.prefix).first(where: { $0.contains(gateway) && !$0.isDefault })
            ?? entry.addresses.values.map(\.prefix).first(where: {
                $0.address.family == gateway.family && !$0.address.isLinkLocal && !$0.address.isLoopback
            })
        else { return "" }
        let router = LinkRouter(interfaceIndex: index, address: gateway)
        var facts: [UInt8]
        if let known = gatewayNeighbours[router], !known.linkLayerAddress.isEmpty {
            facts = known.linkLayerAddress
        } else if entry.link.flags.contains(.pointToPoint) {
            facts = gateway.bytes
        } else {
            return ""
        }
        // The prefix's network, not the host's address in it: a renewal that changes the address
        // keeps the name.
        for (offset, byte) in prefix.address.bytes.enumerated() {
            let kept = max(0, min(8, Int(prefix.length) - offset * 8))
            facts.append(kept == 8 ? byte : byte & ~(0xFF >> UInt8(kept)))
        }
        facts.append(prefix.length)
        return NetworkIdentity.name(of: facts, key: networkKey)
    }
}

extension NetworkEvent {
    /// RTM_NEWNEIGH or RTM_DELNEIGH: no route moves with it, and only a gateway's flip or new
    /// address shows.
    package var isNeighbourFact: Bool {
        switch self {
        case .neighbour, .neighbourRemoved: true
        default: false
        }
    }
}
