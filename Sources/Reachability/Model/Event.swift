/// One fact from the kernel, as the Engine consumes it.
public enum NetworkEvent: Hashable, Sendable {
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
}

/// A complete picture from a dump: what a (re)sync replaces the state with.
public struct NetworkDump: Sendable {
    public var links: [(Link, DeviceFacts?)]
    public var addresses: [Address]
    public var routes: [Route]

    public init(links: [(Link, DeviceFacts?)] = [], addresses: [Address] = [], routes: [Route] = []) {
        self.links = links
        self.addresses = addresses
        self.routes = routes
    }
}
