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
        gatewayNeighbours[router] = GatewayNeighbour(state: neighbour.state, unreachable: unreachable)
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
