/// One entry of the kernel's neighbour table (ARP for IPv4, ND for IPv6) as RTM_NEWNEIGH and
/// RTM_DELNEIGH tell it: which link, which next hop, and how far its resolution got. The mirror
/// keeps only the entries of gateways (`NetworkState`), never the whole table.
package struct Neighbour: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var address: IPAddress
    public var state: NeighbourState
    /// NDA_LLADDR: the neighbour's link-layer (MAC) address, once resolved; empty when the
    /// kernel gave none (INCOMPLETE, FAILED, links without ARP).
    public var linkLayerAddress: [UInt8]
    /// NDA_CACHEINFO's `ndm_confirmed`: how long before the message the kernel last had an
    /// answer from it (a reply to its ARP/ND, or traffic confirming it); nil when not told.
    public var confirmedAge: Duration?
    /// When the message was read (stamped by the adapter; the decoder reads no clock).
    public var received: ContinuousClock.Instant?

    public init(
        interfaceIndex: Int32, address: IPAddress, state: NeighbourState, linkLayerAddress: [UInt8] = [],
        confirmedAge: Duration? = nil, received: ContinuousClock.Instant? = nil
    ) {
        self.interfaceIndex = interfaceIndex
        self.address = address
        self.state = state
        self.linkLayerAddress = linkLayerAddress
        self.confirmedAge = confirmedAge
        self.received = received
    }

    /// When the kernel last had an answer from it, as the message told; nil when unstamped.
    public var answered: ContinuousClock.Instant? {
        guard let received, let confirmedAge else { return nil }
        return received - confirmedAge
    }
}

/// `ndm_state`, the NUD_* value of <linux/neighbour.h>. The kernel sets one bit at a time.
package enum NeighbourState: Hashable, Sendable {
    /// NUD_INCOMPLETE: resolution under way (ARP requests or neighbour solicitations sent).
    case incomplete
    /// NUD_REACHABLE: confirmed lately.
    case reachable
    /// NUD_STALE, NUD_DELAY, NUD_PROBE: once confirmed, being (or to be) confirmed again on use.
    /// Normal on any idle or busy link; never a fault.
    case stale, delay, probe
    /// NUD_FAILED: resolution gave up: nobody answered.
    case failed
    /// NUD_NOARP, NUD_PERMANENT: no resolution needed (point-to-point links, static entries).
    case noARP, permanent
    /// NUD_NONE or a value of no known meaning.
    case none

    public init(nud: UInt16) {
        switch nud {
        case 0x01: self = .incomplete
        case 0x02: self = .reachable
        case 0x04: self = .stale
        case 0x08: self = .delay
        case 0x10: self = .probe
        case 0x20: self = .failed
        case 0x40: self = .noARP
        case 0x80: self = .permanent
        default: self = .none
        }
    }

    /// The name `ip neigh` prints (REACHABLE, FAILED, ...).
    public var name: String {
        switch self {
        case .incomplete: "INCOMPLETE"
        case .reachable: "REACHABLE"
        case .stale: "STALE"
        case .delay: "DELAY"
        case .probe: "PROBE"
        case .failed: "FAILED"
        case .noARP: "NOARP"
        case .permanent: "PERMANENT"
        case .none: "NONE"
        }
    }
}
