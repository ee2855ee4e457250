/// What Apple's NWPath tells about the host's internet path, beside flags and kinds: which
/// families it carries, through which gateways, and why it does not when the host is not
/// online. Computed from the same facts as the host's answer (`deriveHost`), so both agree.
public struct PathFacts: Hashable, Sendable {
    /// A usable default path of that family leaves through a ready link that has a global
    /// address of that family.
    public var supportsIPv4: Bool
    public var supportsIPv6: Bool
    /// A configured nameserver is routable through a ready link (the Engine's `supportsDNS`
    /// says how a stub on loopback counts).
    public var supportsDNS: Bool
    /// The nameservers `supportsDNS` judges, in resolv.conf's order (resolved's upstream servers
    /// behind its stub), and those of them that are routable by its rule: so that a DNS line
    /// names them and says what is known of each, never just "a nameserver".
    public var nameservers: [IPAddress] = []
    public var routableNameservers: [IPAddress] = []
    /// The next hops of the internet paths that can carry traffic, IPv4's first.
    public var gateways: [IPAddress]
    /// Why the host is not online; nil when it is.
    public var reason: Reason?

    public init(
        supportsIPv4: Bool = false, supportsIPv6: Bool = false, gateways: [IPAddress] = [], reason: Reason? = nil,
        supportsDNS: Bool = false
    ) {
        self.supportsIPv4 = supportsIPv4
        self.supportsIPv6 = supportsIPv6
        self.supportsDNS = supportsDNS
        self.gateways = gateways
        self.reason = reason
    }
}
