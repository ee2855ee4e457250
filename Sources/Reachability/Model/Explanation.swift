/// The answer to "why?" (`reachctl why`, D-Bus `Explain`): the chain from the radio to the
/// answer for the host or one target, each layer with its state and the facts it rests on, and
/// the first layer that fails with what would fix it. Built from the same facts as the answer
/// itself (`NetworkState.explain`), so the two never disagree.
package struct Explanation: Hashable, Sendable {
    /// The layers, in the order a packet needs them.
    public enum LayerName: String, Hashable, Sendable, CaseIterable {
        /// rfkill: the Wi-Fi or cellular radio of the egress link is switched on.
        case radio
        /// The egress link is up, has carrier and is not dormant.
        case link
        /// It has a usable address of the path's family (not tentative, not failed DAD).
        case address
        /// The kernel's ARP/ND has not given up on the route's gateway.
        case gateway
        /// The kernel has a route for the caller's traffic and does not refuse it.
        case route
        /// A systemd service's sandbox lets its traffic out (`UnitPolicy`): in a unit's
        /// explanations only (`reachctl why --unit`), never the host's.
        case policy
        /// The host's own firewall lets the path's traffic leave: no retransmission of a failing
        /// connection was refused inside the host.
        case firewall
        /// A nameserver is routable and lookups do not keep timing out.
        case dns
        /// The host's own TCP traffic through the path is not stalled.
        case traffic
        /// The connectivity probe found the internet, not a captive portal.
        case portal
    }

    /// How a layer stands.
    public enum Status: String, Hashable, Sendable {
        case ok
        case broken
        /// Nothing to judge it by: no probe configured, no traffic seen, no route to look at.
        case unknown
    }

    public struct Layer: Hashable, Sendable {
        public var name: LayerName
        public var status: Status
        /// The facts the status rests on, each a short phrase ("up0: up, carrier, operstate up").
        public var evidence: [String]
        /// What would fix it; empty unless broken.
        public var fix: String

        public init(name: LayerName, status: Status, evidence: [String], fix: String = "") {
            self.name = name
            self.status = status
            self.evidence = evidence
            self.fix = fix
        }
    }

    /// Whose TCP traffic the `traffic` layer judged.
    public enum TrafficScope: String, Hashable, Sendable {
        /// The host's own (every explanation but a watched unit's).
        case host
        /// The explained unit's own sockets, told apart by its cgroup (reachd.conf's `[Units] Watch=`).
        case unit
    }

    /// The target as asked; empty for the host's own answer.
    public var target: String
    /// Whose traffic the route was looked up for; nil when the lookup was the system's (uid 0).
    public var uid: UInt32?
    /// The systemd service whose traffic is explained (`reachctl why --unit`); nil for the
    /// host's or the caller's.
    public var unit: String?
    /// Every layer of `hostLayers` in its order, and for a unit its `policy` after the route's.
    public var layers: [Layer]
    /// Whose traffic the `traffic` layer judged: `.unit` in CheckUnit's explanation of a watched unit.
    public var trafficScope: TrafficScope = .host

    public init(target: String, uid: UInt32?, layers: [Layer]) {
        self.target = target
        self.uid = uid
        self.layers = layers
    }

    /// The first layer that fails; nil when none does.
    public var brokenLayer: LayerName? { layers.first { $0.status == .broken }?.name }

    /// The layers of the host's and a caller's explanations: all but `policy`, a unit's alone.
    public static let hostLayers = LayerName.allCases.filter { $0 != .policy }

    public subscript(name: LayerName) -> Layer? { layers.first { $0.name == name } }

    /// The same explanation with the DNS layer replaced by what a host check said of `result`
    /// (a host name's target): broken with its DNS reason, else ok with the addresses found.
    public func resolving(_ result: CheckResult) -> Explanation {
        var copy = self
        copy.target = result.target
        let layer: Layer =
            switch result.reason {
            case .dnsTimeout?:
                Layer(
                    name: .dns, status: .broken, evidence: ["\(result.target): " + (result.message ?? "no answer before the deadline")],
                    fix: "the nameservers do not answer: check them (resolvectl status, /etc/resolv.conf) and the path to them")
            case .dnsNotFound?:
                Layer(
                    name: .dns, status: .broken, evidence: ["\(result.target): " + (result.message ?? "no such name")],
                    fix: "the name does not exist: check its spelling, or the search domains in /etc/resolv.conf")
            case .dnsFailure?:
                Layer(
                    name: .dns, status: .broken, evidence: ["\(result.target): " + (result.message ?? "the lookup failed")],
                    fix: "the nameservers answered with an error: check them (resolvectl status, /etc/resolv.conf)")
            default:
                Layer(
                    name: .dns, status: result.addresses.isEmpty ? .unknown : .ok,
                    evidence: result.addresses.isEmpty
                        ? ["\(result.target): not looked up (\(result.reason?.rawValue ?? "no path"))"]
                        : ["\(result.target) is " + result.addresses.map(\.description).joined(separator: ", ")])
            }
        copy.layers = layers.map { $0.name == .dns ? layer : $0 }
        return copy
    }
}

/// Why a target cannot be explained: not an address (nor empty, for the host). Says which.
package struct ExplanationRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}
