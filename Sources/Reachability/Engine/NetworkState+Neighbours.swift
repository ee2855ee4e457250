/// The kernel's neighbour state of the gateways (`NetworkEvent.neighbour`): ARP and ND's own
/// verdict on whether the next hop answers, read from the kernel and never probed by reachd.
/// Only gateways of default routes the state holds are kept (`defaultRouters`), at most
/// `gatewayNeighboursKept` of them: a host on the link answering or refusing ARP for thousands
/// of addresses makes the kernel's table grow, never reachd's.
struct GatewayNeighbour: Hashable, Sendable {
    var state: NeighbourState
    /// Resolution failed and has not succeeded since: FAILED, or INCOMPLETE again after FAILED
    /// (the kernel retries on the next packet). STALE, DELAY and PROBE are a live gateway's
    /// ordinary states and never count.
    var unreachable: Bool
    /// The gateway's link-layer address as last resolved, kept while resolution is under way
    /// again or failed (the network's name, `networkID`, must not flicker with ARP).
    var linkLayerAddress: [UInt8] = []
}

extension NetworkState {
    /// More gateways than any real host has; past this, new ones are not followed.
    static let gatewayNeighboursKept = 64

    /// Whether `address` on link `index` is the gateway of a default route held: the one
    /// neighbour entries the state keeps (the mirror drops the others before they become events).
    public func isGateway(_ address: IPAddress, on index: Int32) -> Bool {
        defaultRouters[LinkRouter(interfaceIndex: index, address: address)] != nil
    }

    /// The kernel's neighbour state of gateway `address` on link `index`; nil when not known
    /// (no packet went that way yet, the entry was garbage-collected, or it is no gateway).
    public func gatewayState(_ address: IPAddress, on index: Int32) -> NeighbourState? {
        gatewayNeighbours[LinkRouter(interfaceIndex: index, address: address)]?.state
    }

    /// Whether ARP/ND gave up on gateway `address` of link `index` (see `GatewayNeighbour`).
    public func isGatewayUnreachable(_ address: IPAddress, on index: Int32) -> Bool {
        gatewayNeighbours[LinkRouter(interfaceIndex: index, address: address)]?.unreachable ?? false
    }

    /// Takes one neighbour fact; true when a gateway's reachability flipped (a route lookup's
    /// answer may change with it).
    mutating func hear(_ neighbour: Neighbour) -> Bool {
        let router = LinkRouter(interfaceIndex: neighbour.interfaceIndex, address: neighbour.address)
        guard defaultRouters[router] != nil else { return false }
        let old = gatewayNeighbours[router]
        guard old != nil || gatewayNeighbours.count < Self.gatewayNeighboursKept else { return false }
        let unreachable = neighbour.state == .failed || (neighbour.state == .incomplete && old?.unreachable == true)
        let linkLayer = neighbour.linkLayerAddress.isEmpty ? old?.linkLayerAddress ?? [] : neighbour.linkLayerAddress
        gatewayNeighbours[router] = GatewayNeighbour(state: neighbour.state, unreachable: unreachable, linkLayerAddress: linkLayer)
        // The link's network has a name from now on (`networkID(of:)`), and perhaps a rule.
        if linkLayer != old?.linkLayerAddress ?? [] { dirty.insert(neighbour.interfaceIndex) }
        return unreachable != (old?.unreachable ?? false)
    }

    /// The kernel dropped the entry (garbage collection, the link went): not known any more.
    mutating func forget(_ neighbour: Neighbour) -> Bool {
        let router = LinkRouter(interfaceIndex: neighbour.interfaceIndex, address: neighbour.address)
        return gatewayNeighbours.removeValue(forKey: router)?.unreachable ?? false
    }

    /// Every hop of `route` through a ready link goes through a gateway ARP/ND gave up on.
    func gatewaysUnreachable(_ route: Route) -> Bool {
        var any = false
        for hop in route.nextHops {
            guard let index = hop.interfaceIndex, links[index]?.link.isReady == true else { continue }
            guard let gateway = hop.gateway, isGatewayUnreachable(gateway, on: index) else { return false }
            any = true
        }
        return any
    }
}

extension NetworkState {
    /// The name of the network link `index` is attached to: that of its default routes' gateway
    /// (IPv4's first, the lowest address of a family first, so one network keeps one name
    /// whichever family the host's path takes); empty with no gateway, or none resolved yet.
    public func networkID(of index: Int32) -> String {
        let gateway = defaultRouters.keys.lazy.filter { $0.interfaceIndex == index }.map(\.address)
            .min { a, b in a.family != b.family ? a.family < b.family : a.bytes.lexicographicallyPrecedes(b.bytes) }
        return networkID(link: index, gateway: gateway)
    }

    /// The name of the network link `index` reaches `gateway` on (`NetworkIdentity`): the
    /// gateway's link-layer address and the link's prefix that holds it. Empty until ARP/ND has
    /// resolved the gateway once (so the name never changes when it does), and for a path with
    /// no gateway; on a link without ARP (a tunnel, PPP), the gateway's address stands for it.
    func networkID(link index: Int32?, gateway: IPAddress?) -> String {
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
