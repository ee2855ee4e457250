/// The answer to "can I reach this target now?", for an address or a host name.
public struct CheckResult: Hashable, Sendable {
    /// The target as the caller gave it.
    public var target: String
    public var flags: ReachabilityFlags
    /// The egress interface (for a host: the one of the first reachable address); empty when none.
    public var interface: String
    /// The addresses evaluated: the target itself, or what the name resolved to.
    public var addresses: [IPAddress]
    /// The next hop when the route has one (not `isDirect`).
    public var gateway: IPAddress?
    /// The source address the kernel would use.
    public var source: IPAddress?
    /// Why the target is not reachable; nil when it is.
    public var reason: Reason?
    /// A sentence for people when the reason needs one (what was invalid, what DNS said).
    public var message: String?

    public init(
        target: String, flags: ReachabilityFlags = [], interface: String = "", addresses: [IPAddress] = [],
        gateway: IPAddress? = nil, source: IPAddress? = nil, reason: Reason? = nil, message: String? = nil
    ) {
        self.target = target
        self.flags = flags
        self.interface = interface
        self.addresses = addresses
        self.gateway = gateway
        self.source = source
        self.reason = reason
        self.message = message
    }

    public var isReachable: Bool { flags.contains(.reachable) }

    package static func invalid(_ target: String, _ message: String) -> CheckResult {
        CheckResult(target: target, reason: .invalidTarget, message: message)
    }
}

/// What the kernel answered to RTM_GETROUTE for one destination.
package enum RouteLookup: Hashable, Sendable {
    /// The route the kernel would use (type, output link, gateway, preferred source).
    case route(Route)
    /// No route: the kernel's errno (ENETUNREACH, EHOSTUNREACH, EACCES for prohibit, EINVAL for blackhole...).
    case failed(errno: Int32)

    /// The route found; for a lookup refused by an unreachable, prohibit or blackhole route or
    /// rule (which the kernel answers with an errno alone), a route of that type toward
    /// `family`'s everything, so the Engine tells a kill switch from no route at all; else nil.
    public func route(family: AddressFamily) -> Route? {
        switch self {
        case let .route(found): found
        case let .failed(errno): RouteType(refusal: errno).map { Route(destination: IPPrefix(family.any, length: 0), type: $0, nextHops: []) }
        }
    }
}
