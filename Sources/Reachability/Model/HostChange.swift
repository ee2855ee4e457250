/// Where the host's internet traffic leaves from, beside its answer (`HostStatus`): the facts a
/// client needs to tell "rebind your sockets" from "a flag moved". The Engine keeps it with the
/// host's answer, and a move in it is a host change of its own (`Changed` fires).
public struct HostAddressing: Hashable, Sendable {
    /// Per family, IPv4 first, the address a new connection to the internet takes as its source:
    /// the kernel's own choice on the internet path (the preferred source of its route answer),
    /// only while that family's path can carry traffic. The first is the primary path's.
    public var sources: [IPAddress]
    /// The primary interface's addresses usable beyond the link (no link-local, none still in
    /// duplicate address detection), in address order.
    public var addresses: [IPPrefix]
    /// Those of `addresses` that are deprecated: their preferred lifetime ended, so existing
    /// connections keep them but new ones take another.
    public var deprecated: [IPPrefix]
    /// The configured nameservers (resolv.conf), in their order.
    public var nameservers: [IPAddress]

    public init(sources: [IPAddress] = [], addresses: [IPPrefix] = [], deprecated: [IPPrefix] = [], nameservers: [IPAddress] = []) {
        self.sources = sources
        self.addresses = addresses
        self.deprecated = deprecated
        self.nameservers = nameservers
    }

    /// The primary path's source address; nil while the host has no path that carries traffic.
    public var sourceAddress: IPAddress? { sources.first }
}

/// What one host change changed, computed from the host's answer and addressing before and
/// after: which aspects moved, and whether a client must rebind its sockets.
///
/// `rebind` is true exactly when a source address the host's internet traffic left from went
/// away or was replaced: for either family, the source before was an address and after it is
/// another or none. A new primary interface with another source counts; going offline (or
/// losing the path of a family) from having a source counts as going away; coming online from
/// none, or gaining a second family, does not (there is nothing bound to rebind).
public struct HostChange: Hashable, Sendable {
    /// One aspect of the host's answer; its raw value is the word reachd's `HostChangeDescribed`
    /// signal and `reachctl monitor --json` use.
    public enum Aspect: String, CaseIterable, Hashable, Sendable {
        /// `HostState`: online, local, offline.
        case state
        /// The primary interface (the link of the default route the kernel uses now).
        case primary
        /// The link beneath a tunnel.
        case underlying
        /// The source address of the internet path, of either family (`HostAddressing.sources`).
        case sourceAddress
        /// Addresses added to or removed from the primary interface.
        case addresses
        /// Addresses of the primary interface deprecated, or no longer.
        case deprecated
        /// The internet path's gateways.
        case gateway
        /// The nameservers, or whether one is routable (`supportsDNS`).
        case dns
        /// Which families the path carries (`supportsIPv4`, `supportsIPv6`).
        case families
        /// `isExpensive` (metered) or why.
        case expensive
        /// `isConstrained`.
        case constrained
        /// Passive stall detection's verdict on the path.
        case stall
        /// The connectivity probe's verdict.
        case connectivity
        /// A captive portal: the probe's, the one a router or DHCP announced, or its API's session.
        case portal
        /// The NAT64 prefix announced on the path.
        case nat64
        /// The available or validated interfaces.
        case interfaces
        /// The network the path is attached to (`networkID`).
        case network
        /// Why the host is not online.
        case reason
        /// Any other flag of the host's answer (kinds, reachable, radio, ...).
        case flags
    }

    /// The aspects that moved, in `Aspect`'s order; empty when nothing did.
    public var changed: [Aspect]
    public var rebind: Bool
    /// The primary path's source address after the change; nil without one.
    public var sourceAddress: IPAddress?
    /// The primary path's source address before the change; nil without one.
    public var previousSourceAddress: IPAddress?

    public init(changed: [Aspect], rebind: Bool, sourceAddress: IPAddress? = nil, previousSourceAddress: IPAddress? = nil) {
        self.changed = Aspect.allCases.filter(Set(changed).contains)
        self.rebind = rebind
        self.sourceAddress = sourceAddress
        self.previousSourceAddress = previousSourceAddress
    }

    /// The description of the move from `old` to `new`. Pure, so that the Engine, a client
    /// comparing two snapshots and a test all describe a change alike.
    public init(from old: HostStatus, _ oldAddressing: HostAddressing, to new: HostStatus, _ newAddressing: HostAddressing) {
        var changed: Set<Aspect> = []
        func note(_ aspect: Aspect, _ moved: Bool) { if moved { changed.insert(aspect) } }
        note(.state, old.state != new.state)
        note(.primary, old.primaryInterface != new.primaryInterface)
        note(.underlying, old.underlyingInterface != new.underlyingInterface)
        note(.sourceAddress, oldAddressing.sources != newAddressing.sources)
        note(.addresses, oldAddressing.addresses != newAddressing.addresses)
        note(.deprecated, oldAddressing.deprecated != newAddressing.deprecated)
        note(.gateway, old.pathFacts.gateways != new.pathFacts.gateways)
        note(.dns, oldAddressing.nameservers != newAddressing.nameservers || old.pathFacts.supportsDNS != new.pathFacts.supportsDNS)
        note(.families, old.pathFacts.supportsIPv4 != new.pathFacts.supportsIPv4 || old.pathFacts.supportsIPv6 != new.pathFacts.supportsIPv6)
        note(.expensive, old.flags.contains(.isExpensive) != new.flags.contains(.isExpensive) || old.expensiveReason != new.expensiveReason)
        note(.constrained, old.flags.contains(.isConstrained) != new.flags.contains(.isConstrained))
        note(.stall, old.stalled != new.stalled || old.flags.contains(.stalled) != new.flags.contains(.stalled))
        note(.connectivity, old.connectivity.verdict != new.connectivity.verdict || old.connectivity.detail != new.connectivity.detail)
        note(.portal, old.connectivity.portal != new.connectivity.portal || old.announcedPortal != new.announcedPortal || old.portalSession != new.portalSession)
        note(.nat64, old.nat64Prefix != new.nat64Prefix)
        note(.interfaces, old.availableInterfaces != new.availableInterfaces || old.validatedInterfaces != new.validatedInterfaces)
        note(.network, old.networkID != new.networkID)
        note(.reason, old.pathFacts.reason != new.pathFacts.reason)
        // The flags no aspect above names, so that every move of the answer is named once.
        let named: ReachabilityFlags = [.isExpensive, .isConstrained, .stalled]
        let probe: ReachabilityFlags = [.interventionRequired, .validated]  // `ConnectivityStatus.flags`
        note(.flags, old.flags.subtracting(named).subtracting(probe) != new.flags.subtracting(named).subtracting(probe))
        // The probe's flags move with its verdict, unless the path changed under it.
        if old.flags.intersection(probe) != new.flags.intersection(probe), !changed.contains(.connectivity) { changed.insert(.flags) }
        let rebind = AddressFamily.allCases.contains { family in
            guard let before = oldAddressing.sources.first(where: { $0.family == family }) else { return false }
            return newAddressing.sources.first(where: { $0.family == family }) != before
        }
        self.init(
            changed: Array(changed), rebind: rebind, sourceAddress: newAddressing.sourceAddress,
            previousSourceAddress: oldAddressing.sourceAddress)
    }

    /// This change, then `later`, as one: what a client that saw only the state after both (one
    /// snapshot read for two signals) must be told.
    public func followed(by later: HostChange) -> HostChange {
        HostChange(
            changed: changed + later.changed, rebind: rebind || later.rebind, sourceAddress: later.sourceAddress,
            previousSourceAddress: previousSourceAddress)
    }

    /// The aspects' words, as the signal and JSON carry them.
    public var changedNames: [String] { changed.map(\.rawValue) }
}
