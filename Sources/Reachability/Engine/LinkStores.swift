/// The parts of the state kept by the source they come from, beside the kernel's links,
/// addresses and routes: each a value with its own events and a reducer that says which links
/// it moved, composed by `NetworkState` (NetworkState+Stores), whose derivation reads them.

/// The links a store's reducer moved, to be derived again: by index, or by interface name for a
/// fact kept by name (it holds for a link that appears after it).
package struct LinksMoved: Equatable, Sendable {
    package var indices: Set<Int32> = []
    package var names: Set<String> = []

    package static let none = LinksMoved()
}

/// The rfkill switches of the links' radios (`NetworkEvent.radio`): a link absent has its radio on.
package struct Radios: Sendable {
    package enum Event: Sendable {
        case switches(index: Int32, RadioBlock)
        case linkGone(Int32)
    }

    package private(set) var blocks: [Int32: RadioBlock] = [:]

    package mutating func take(_ event: Event) -> LinksMoved {
        switch event {
        case let .switches(index, block):
            guard blocks[index] ?? [] != block else { return .none }
            blocks[index] = block.isEmpty ? nil : block
            return LinksMoved(indices: [index])
        case let .linkGone(index):
            blocks.removeValue(forKey: index)
            return .none
        }
    }
}

/// What is said of the links' cost beside their kind (`MeteredHint`): a DHCP server's hint per
/// link, and NetworkManager's word per interface name (a name absent has nothing said, `unknown`).
package struct MeteredHints: Sendable {
    package private(set) var dhcp: Set<Int32> = []
    package private(set) var networkManager: [String: NetworkManagerMetered] = [:]

    package mutating func take(_ hint: MeteredHint) -> LinksMoved {
        switch hint {
        case let .dhcp(index, metered):
            guard dhcp.contains(index) != metered else { return .none }
            if metered { dhcp.insert(index) } else { dhcp.remove(index) }
            return LinksMoved(indices: [index])
        case let .networkManager(interface, said):
            guard networkManager[interface] ?? .unknown != said else { return .none }
            networkManager[interface] = said == .unknown ? nil : said
            return LinksMoved(names: [interface])
        }
    }

    /// The link went away (its name's word stays: it holds for a link that appears after it).
    package mutating func forget(_ index: Int32) { dhcp.remove(index) }
}

/// The verdicts on the traffic (`TrafficVerdict`): the probe's on the host's path (unknown
/// without a probe) and on each other uplink (`unknown` forgets it), and the last stall poll's
/// on each ready link (a link absent has no evidence). Kept for ready links only: a link that
/// went down may come back on another network.
package struct Verdicts: Sendable {
    package private(set) var connectivity = ConnectivityStatus.unknown
    package private(set) var uplinks: [Int32: ConnectivityVerdict] = [:]
    package private(set) var stalls: [Int32: LinkStall] = [:]

    /// `isReady`: whether a link is ready now (a verdict on one that is not is dropped as it
    /// comes: its stale verdict would come back with its carrier). Only a link whose stalled
    /// state flips moves: a poll that changes figures alone changes nothing a user sees.
    package mutating func take(_ verdict: TrafficVerdict, isReady: (Int32) -> Bool) -> LinksMoved {
        switch verdict {
        case let .connectivity(status):
            connectivity = status
        case let .uplink(index, verdict):
            guard verdict != .unknown, isReady(index) else {
                uplinks.removeValue(forKey: index)
                return .none
            }
            uplinks[index] = verdict
        case let .stalls(verdicts):
            var kept: [Int32: LinkStall] = [:]
            for verdict in verdicts where isReady(verdict.interfaceIndex) { kept[verdict.interfaceIndex] = verdict }
            let flipped = Set(kept.keys).union(stalls.keys).filter { (kept[$0]?.isStalled ?? false) != (stalls[$0]?.isStalled ?? false) }
            stalls = kept
            return LinksMoved(indices: flipped)
        }
        return .none
    }

    /// The link went down or away: what was judged of it no longer holds.
    package mutating func forget(_ index: Int32) {
        uplinks.removeValue(forKey: index)
        stalls.removeValue(forKey: index)
    }
}
