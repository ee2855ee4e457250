/// The derived reachability of one interface.
public struct InterfaceStatus: Hashable, Sendable {
    public var index: Int32
    public var name: String
    public var kind: InterfaceKind
    /// `reachable` when the link is ready with a usable address; `connectionRequired` when it is
    /// up but not ready; kind flags (`isWiFi`, `isVPN`, ...) always.
    public var flags: ReachabilityFlags
    /// Assigned addresses with prefix length, IPv4 first, in address order.
    public var addresses: [IPPrefix]
    /// Why paths through this interface are expensive (`isExpensive` in `flags`); nil when not.
    package var expensiveReason: ExpensiveReason?
    /// The name of the network the interface is attached to, as the host's `networkID` (empty
    /// without a default route through it, or before its gateway answered ARP/ND once).
    public var networkID: String
    /// The captive-portal API URI announced on this link (RFC 8910: a router's option 37, or
    /// DHCP's option 114 or 103 as the host's DHCP client records it); empty when none.
    public var portal: String
    /// Where `portal` came from; nil when there is none.
    package var portalSource: PortalSource?

    package init(
        index: Int32, name: String, kind: InterfaceKind, flags: ReachabilityFlags, addresses: [IPPrefix],
        expensiveReason: ExpensiveReason? = nil, networkID: String = "", portal: String = "", portalSource: PortalSource? = nil
    ) {
        self.portal = portal
        self.portalSource = portalSource
        self.expensiveReason = expensiveReason
        self.networkID = networkID
        self.index = index
        self.name = name
        self.kind = kind
        self.flags = flags
        self.addresses = addresses
    }
}

/// The derived reachability of the host: the answer for 0.0.0.0 / ::.
public struct HostStatus: Hashable, Sendable {
    public var flags: ReachabilityFlags
    public var state: HostState
    /// The link the kernel would use for the default route now; empty when there is none.
    public var primaryInterface: String
    /// Ready links that carry a default route, by kind priority, then metric.
    public var availableInterfaces: [String]
    /// When the primary interface is a tunnel: the link that carries the tunnel itself, as far as
    /// the kernel tells (the main table's default route, which VPN clients leave in place);
    /// empty otherwise.
    public var underlyingInterface: String
    /// Whether the internet really answers through this path: the opt-in probe's verdict
    /// (`[Connectivity]` in reachd.conf); `unknown` without it.
    public var connectivity: ConnectivityStatus
    /// The captive-portal URI the network announced on the primary interface (or, under a
    /// tunnel, on the link beneath it) in an IPv6 router advertisement or DHCP (RFC 8910), probe
    /// or no probe; empty when none was. `urn:ietf:params:capport:unrestricted` means the network
    /// says it has no portal.
    public var announcedPortal: String
    /// What that URI's captive-portal API (RFC 8908) last said of the host's session, while the
    /// link announces it; `PortalSession.none` when no API answered.
    package var portalSession = PortalSession.none
    /// The NAT64 prefix a router announced (RFC 8781) on the same link as `announcedPortal`;
    /// nil when none was or its lifetime ended.
    package var nat64Prefix: Nat64Prefix?
    /// The available interfaces through which the opt-in probe found the internet answering
    /// (`full`): the primary by the host's probe, each other uplink by a probe sent through it
    /// alone. Empty without the probe.
    public var validatedInterfaces: [String]
    /// The host's own TCP traffic through its path stopped flowing (passive stall detection:
    /// `stalled` is in `flags` too). Only while online; the figures behind it are
    /// `ReachabilitySnapshot.stallEvidence`, apart, so that they never make a change of their own.
    public var stalled: Bool
    /// NWPath's facts of the internet path: families, gateways, why the host is not online.
    public var pathFacts: PathFacts
    /// Why the host's path is expensive (`isExpensive` in `flags`): its egress link's reason, or
    /// under a tunnel its carrier's; nil when it is not.
    package var expensiveReason: ExpensiveReason?
    /// The network the host's path is attached to (`NetworkIdentity`: under a tunnel, the
    /// carrier's): the same there across address renewals and restarts, different elsewhere;
    /// empty while not online or before ARP/ND has resolved the gateway.
    public var networkID: String

    package init(
        flags: ReachabilityFlags = [], state: HostState = .offline,
        primaryInterface: String = "", availableInterfaces: [String] = [], underlyingInterface: String = "",
        connectivity: ConnectivityStatus = .unknown, announcedPortal: String = "", validatedInterfaces: [String] = [],
        stalled: Bool = false, pathFacts: PathFacts? = nil, nat64Prefix: Nat64Prefix? = nil,
        expensiveReason: ExpensiveReason? = nil, networkID: String = ""
    ) {
        self.expensiveReason = expensiveReason
        self.networkID = networkID
        self.nat64Prefix = nat64Prefix
        self.stalled = stalled
        self.flags = flags
        self.state = state
        self.primaryInterface = primaryInterface
        self.availableInterfaces = availableInterfaces
        self.underlyingInterface = underlyingInterface
        self.connectivity = connectivity
        self.announcedPortal = announcedPortal
        self.validatedInterfaces = validatedInterfaces
        // What the Engine derives for a host with no path at all, so an empty state's answer
        // equals the one it starts with (no Changed for nothing).
        self.pathFacts = pathFacts ?? PathFacts(reason: state == .online ? nil : .noRoute)
    }
}

/// Everything a client sees at one moment.
public struct ReachabilitySnapshot: Hashable, Sendable {
    /// Increments with every published change; a gap tells a subscriber it missed one.
    public var generation: UInt64
    public var host: HostStatus
    /// Visible (not ignored) interfaces by index.
    public var interfaces: [InterfaceStatus]
    /// The latest stall poll's figures for the host's path (its primary interface, or the link
    /// beneath a tunnel when that one is stalled); nil when that path had nothing to judge or
    /// stall detection is off. Not part of any change: it moves with every poll.
    package var stallEvidence: StallEvidence?

    package init(generation: UInt64, host: HostStatus, interfaces: [InterfaceStatus], stallEvidence: StallEvidence? = nil) {
        self.generation = generation
        self.host = host
        self.interfaces = interfaces
        self.stallEvidence = stallEvidence
    }
}

/// What one batch of kernel facts changed, as far as a user can see.
public struct ReachabilityChange: Hashable, Sendable {
    public var generation: UInt64
    /// The host status after the change (whether or not it changed).
    public var host: HostStatus
    public var hostChanged: Bool
    /// Interfaces that appeared or whose status changed, by index.
    public var changedInterfaces: [InterfaceStatus]
    /// Interfaces that disappeared (or became ignored), with their last status.
    public var removedInterfaces: [InterfaceStatus]
    /// What the host change changed and whether sockets must be rebound; nil when the host's
    /// answer did not change (`hostChanged` false), or from a reachd too old to say.
    public var hostChange: HostChange?

    public init(
        generation: UInt64, host: HostStatus, hostChanged: Bool,
        changedInterfaces: [InterfaceStatus], removedInterfaces: [InterfaceStatus], hostChange: HostChange? = nil
    ) {
        self.hostChange = hostChange
        self.generation = generation
        self.host = host
        self.hostChanged = hostChanged
        self.changedInterfaces = changedInterfaces
        self.removedInterfaces = removedInterfaces
    }
}

/// How the kernel mirror has fared: receive-buffer overruns (ENOBUFS) and resyncs (fresh dumps,
/// the first sync included), for `reachctl status --verbose` and the metrics of operators; and
/// what routers' announcements cost it (held now, dropped for want of room so far).
package struct MirrorCounters: Hashable, Sendable {
    public var overruns: UInt64
    public var resyncs: UInt64
    /// Portals and NAT64 prefixes held now, over every link (`LinkAnnouncements` bounds them).
    public var announcementsHeld: UInt64
    /// Announcements dropped because their link held as many as it may.
    public var announcementsDropped: UInt64
    /// Times a FAILED gateway was resolved afresh (one datagram to it each, `GatewayRechecks`).
    public var gatewayResolutionsAsked: UInt64

    public init(
        overruns: UInt64 = 0, resyncs: UInt64 = 0, announcementsHeld: UInt64 = 0, announcementsDropped: UInt64 = 0,
        gatewayResolutionsAsked: UInt64 = 0
    ) {
        self.overruns = overruns
        self.resyncs = resyncs
        self.announcementsHeld = announcementsHeld
        self.announcementsDropped = announcementsDropped
        self.gatewayResolutionsAsked = gatewayResolutionsAsked
    }
}
