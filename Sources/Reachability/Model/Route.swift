#if canImport(Glibc)
import Glibc
#endif

/// A route in the kernel's FIB (RTM_NEWROUTE). Only the fields reachability needs.
package struct Route: Hashable, Sendable {
    public var table: UInt32
    public var destination: IPPrefix
    public var type: RouteType
    /// `RTA_PRIORITY`, the metric; lower wins.
    public var metric: UInt32
    public var tos: UInt8
    public var preferredSource: IPAddress?
    /// One entry for a plain route, several for multipath (RTA_MULTIPATH).
    public var nextHops: [NextHop]
    /// When the kernel stops using the route (RTA_CACHEINFO's `rta_expires`: a router's lifetime,
    /// an RA prefix's); nil when it never expires. The kernel keeps an expired route until its
    /// garbage collection, up to 30 s later, and only then says so, so the Engine reads this
    /// deadline itself (NetworkState+Lifetimes). Not part of the route's identity: a new RA
    /// moves it, silently.
    public var expiry: ContinuousClock.Instant?

    public init(
        table: UInt32 = Route.mainTable, destination: IPPrefix, type: RouteType = .unicast,
        metric: UInt32 = 0, tos: UInt8 = 0, preferredSource: IPAddress? = nil, nextHops: [NextHop],
        expiry: ContinuousClock.Instant? = nil
    ) {
        self.table = table
        self.destination = destination
        self.type = type
        self.metric = metric
        self.tos = tos
        self.preferredSource = preferredSource
        self.nextHops = nextHops
        self.expiry = expiry
    }

    public static let mainTable: UInt32 = 254
    public static let localTable: UInt32 = 255
    public static let defaultTable: UInt32 = 253

    /// What identifies a route to the kernel. IPv6 keeps several routes with the same
    /// destination and metric that differ by next hop, so the next hops are part of it;
    /// a NLM_F_REPLACE update removes the others (see `NetworkState`).
    public struct Key: Hashable, Sendable {
        public var table: UInt32
        public var destination: IPPrefix
        public var metric: UInt32
        public var tos: UInt8
        public var nextHops: [NextHop]
    }
    public var key: Key {
        Key(table: table, destination: destination, metric: metric, tos: tos, nextHops: nextHops)
    }
}

package struct NextHop: Hashable, Sendable {
    public var gateway: IPAddress?
    public var interfaceIndex: Int32?

    public init(gateway: IPAddress? = nil, interfaceIndex: Int32?) {
        self.gateway = gateway
        self.interfaceIndex = interfaceIndex
    }
}

/// `RTN_*` route types.
package enum RouteType: UInt8, Sendable, Hashable {
    case unspecified = 0, unicast = 1, local = 2, broadcast = 3, anycast = 4, multicast = 5
    case blackhole = 6, unreachable = 7, prohibit = 8, throwRoute = 9, nat = 10, externalResolve = 11

    /// The type behind a refused route lookup: the kernel answers one that meets an unreachable
    /// (EHOSTUNREACH), prohibit (EACCES) or blackhole (EINVAL) route or rule with that errno
    /// alone. nil for any other errno, ENETUNREACH (no route at all) among them.
    public init?(refusal errno: Int32) {
        switch errno {
        case EHOSTUNREACH: self = .unreachable
        case EACCES: self = .prohibit
        case EINVAL: self = .blackhole
        default: return nil
        }
    }

    /// Answers a packet with an error or drops it (`ip route add unreachable|prohibit|blackhole`,
    /// or an `ip rule` of those types): how kill switches stop traffic when their tunnel is down.
    public var isBlocking: Bool { [.unreachable, .prohibit, .blackhole].contains(self) }
}
