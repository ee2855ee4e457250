/// Whether the internet really answers through the host's path, as the opt-in probe judged it
/// (`[Connectivity] URL=`). A route through a ready link is what `State` says; this says what
/// happened when reachd asked a known server over that route.
///
/// The names follow NetworkManager's connectivity states, so tools that speak both read them
/// alike; `ProbeExpectation` says how an answer maps onto them.
public enum ConnectivityVerdict: String, Sendable, Hashable, CaseIterable {
    /// The probe is off, or has not answered yet on this path.
    case unknown
    /// The probe failed: DNS failed or timed out, the connection was refused or never answered,
    /// or there is no route at all.
    case none
    /// Something intercepted the probe: a redirect, or content where the expected answer should
    /// be (a hotel or airport login page). `interventionRequired` is set on the host's flags.
    case portal
    /// A server answered, but with an error (4xx/5xx, or a 200 too short to be a page): the path
    /// reaches something, not the internet as it should.
    case limited
    /// The expected answer came back: the internet works through this path. The host's flags
    /// carry `validated`.
    case full
}

/// The host's connectivity answer and what it rests on.
public struct ConnectivityStatus: Sendable, Hashable {
    public var verdict: ConnectivityVerdict
    /// Where a portal redirected the probe (its Location header), when it did.
    public var portal: String
    /// A sentence for people: what the probe saw (`HTTP 204`, `connect: Connection refused`).
    public var detail: String

    public init(verdict: ConnectivityVerdict = .unknown, portal: String = "", detail: String = "") {
        self.verdict = verdict
        self.portal = portal
        self.detail = detail
    }

    public static let unknown = ConnectivityStatus()

    /// reachd's `Validate` answer when its probe is off (`[Connectivity] URL=` not set): unknown,
    /// and saying why, so that a client can tell "never judged" from "not judged yet".
    public static let probeOff = ConnectivityStatus(detail: "the connectivity probe is off: [Connectivity] URL= is not set")

    /// Whether this is `probeOff`: no verdict will ever come.
    public var isProbeOff: Bool { verdict == .unknown && detail == Self.probeOff.detail }

    /// The flags the answer adds to the host's: `interventionRequired` for a portal,
    /// `validated` for full.
    public var flags: ReachabilityFlags {
        switch verdict {
        case .portal: .interventionRequired
        case .full: .validated
        case .unknown, .none, .limited: []
        }
    }
}
