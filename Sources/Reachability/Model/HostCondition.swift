/// A condition on the host's network that a service or a script may require before it runs
/// (`reachctl is CONDITION`, systemd's `ExecCondition=`), judged from one snapshot: the same
/// answer whether reachd or the library in-process took it. Android's JobScheduler gates work on
/// the same kind of words (a network, not metered, validated).
package enum HostCondition: Hashable, Sendable {
    /// The host is online: the default route the kernel would use leaves through a ready link.
    case online
    /// The internet answers: not captive by the network's portal API (RFC 8908), and the
    /// connectivity probe's verdict is full where the probe has one (`[Connectivity] URL=`,
    /// reachd only); without a verdict, online and not stalled.
    case internet
    /// Online through a path that is not expensive (no `ExpensiveReason`: not cellular, not
    /// configured metered, not a phone's tether or hotspot, nor a tunnel over such a link).
    case unmetered
    /// No captive portal holds the host: the network's portal API (RFC 8908) does not say
    /// captive, its session does not end within the lead time, and the connectivity probe did not
    /// meet a portal. Without an API or the probe nothing is known of portals, and this holds.
    case noPortal
    /// The host's own TCP traffic through its path has not stopped flowing (stall detection).
    case notStalled
    /// A configured nameserver is routable through a ready link (`PathFacts.supportsDNS`): names
    /// can be looked up, online or not (a nameserver on the local network counts).
    case dns
    /// Online, and the host's path leaves through a link of this kind: the primary interface's,
    /// or under a tunnel the carrier's too (a VPN over Wi-Fi is `via-vpn` and `via-wifi`).
    case via(InterfaceKind)

    /// Every condition with its word, in the documented order (reachctl(1), `reachctl is`).
    public static let all: [HostCondition] =
        [.online, .internet, .unmetered, .noPortal, .notStalled, .dns]
        + InterfaceKind.allCases.filter { $0 != .loopback }.map { .via($0) }

    /// Other words for a condition: `ethernet` is what most users call a wired link.
    public static let aliases: [String: HostCondition] = ["via-ethernet": .via(.wired)]

    /// The word a user types: `online`, `no-portal`, `via-wifi`.
    public var word: String {
        switch self {
        case .online: "online"
        case .internet: "internet"
        case .unmetered: "unmetered"
        case .noPortal: "no-portal"
        case .notStalled: "not-stalled"
        case .dns: "dns"
        case let .via(kind): "via-" + kind.rawValue
        }
    }

    /// The condition `word` names (a word or an alias); nil for any other word.
    public init?(word: String) {
        if let condition = Self.all.first(where: { $0.word == word }) ?? Self.aliases[word] {
            self = condition
        } else {
            return nil
        }
    }

    /// nil when the condition holds in `snapshot`, else why not in a sentence for the journal
    /// (`the host's path via wwan0 (cellular) is metered`).
    public func failure(in snapshot: ReachabilitySnapshot) -> String? {
        let host = snapshot.host
        let online = host.state == .online
        switch self {
        case .online:
            return online ? nil : Self.notOnline(host)
        case .internet:
            // The network's own word first: while its portal API says captive, the probe is not
            // even sent (it would only be redirected), and nothing beyond the portal answers.
            if let captive = Self.captive(host.portalSession) { return captive }
            switch host.connectivity.verdict {
            case .full:
                return online ? nil : Self.notOnline(host)
            case .portal, .limited, .none:
                let detail = host.connectivity.detail.isEmpty ? "" : " (\(host.connectivity.detail))"
                return "the connectivity probe's verdict is \(host.connectivity.verdict.rawValue)\(detail)"
            case .unknown:
                if !online { return Self.notOnline(host) }
                return host.stalled ? "the host's traffic via \(Self.path(snapshot)) stopped flowing (stalled)" : nil
            }
        case .unmetered:
            if !online { return Self.notOnline(host) }
            guard host.flags.contains(.isExpensive) else { return nil }
            return "the host's path via \(Self.path(snapshot)) is metered" + (host.expensiveReason.map { " (\($0.text))" } ?? "")
        case .noPortal:
            let session = host.portalSession
            if let captive = Self.captive(session) { return captive }
            if session.ending { return "the network's portal API says the session ends within the lead time ([Portal] EndingLead=)" }
            guard host.connectivity.verdict == .portal else { return nil }
            let location = host.connectivity.portal.isEmpty ? "" : " (redirected to \(host.connectivity.portal))"
            return "the connectivity probe met a captive portal\(location)"
        case .notStalled:
            return host.stalled ? "the host's traffic via \(Self.path(snapshot)) stopped flowing (stalled)" : nil
        case .dns:
            return host.pathFacts.supportsDNS ? nil : "no configured nameserver is routable through a ready link"
        case let .via(kind):
            if !online { return Self.notOnline(host) }
            return Self.pathKinds(snapshot).contains(kind) ? nil : "the host's path is via \(Self.path(snapshot))"
        }
    }

    /// Why the network's own word fails a condition: its portal API says the host is captive.
    package static func captive(_ session: PortalSession) -> String? {
        guard session.captive else { return nil }
        return "the network's portal API says the host is captive" + (session.loginURL.isEmpty ? "" : " (log in at \(session.loginURL))")
    }

    /// The kinds of the links the host's path leaves through: the primary interface's, and the
    /// carrier's under a tunnel.
    package static func pathKinds(_ snapshot: ReachabilitySnapshot) -> [InterfaceKind] {
        [snapshot.host.primaryInterface, snapshot.host.underlyingInterface].compactMap { name in
            name.isEmpty ? nil : snapshot.interfaces.first { $0.name == name }?.kind
        }
    }

    /// `wg0 (vpn) over wlan0 (wifi)`: the host's path as a user names it.
    package static func path(_ snapshot: ReachabilitySnapshot) -> String {
        [snapshot.host.primaryInterface, snapshot.host.underlyingInterface].filter { !$0.isEmpty }.map { name in
            let kind = snapshot.interfaces.first { $0.name == name }?.kind
            return kind.map { "\(name) (\($0.rawValue))" } ?? name
        }.joined(separator: " over ")
    }

    /// `the host is offline (noRoute)`.
    package static func notOnline(_ host: HostStatus) -> String {
        "the host is \(host.state.rawValue)" + (host.pathFacts.reason.map { " (\($0.rawValue))" } ?? "")
    }
}
