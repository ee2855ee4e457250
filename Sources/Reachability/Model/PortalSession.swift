/// Where a link's captive-portal API URI came from (RFC 8910): an IPv6 router advertisement's
/// option 37, DHCPv4's option 114 or DHCPv6's option 103, as the host's DHCP client records them;
/// `networkd`: systemd-networkd's record, which keeps one of the three without saying which.
package enum PortalSource: String, Hashable, Sendable, CaseIterable {
    case routerAdvertisement = "ra"
    case dhcpv4
    case dhcpv6
    case networkd
}

/// A captive-portal API URI that the host's DHCP client recorded for an interface, by name as the
/// client records it; validated as a router's option is (`AnnouncedPortal.uri(fromOptionValue:)`).
package struct DHCPPortal: Hashable, Sendable {
    public var interfaceName: String
    public var uri: String
    public var source: PortalSource

    public init(interfaceName: String, uri: String, source: PortalSource) {
        self.interfaceName = interfaceName
        self.uri = uri
        self.source = source
    }
}

/// What the network's captive-portal API (RFC 8908) said of the host's session on the primary
/// link, as clients are shown it; every field its default when no API answered.
package struct PortalSession: Hashable, Sendable {
    /// `captive`: the network holds the host's traffic until someone logs in.
    public var captive: Bool
    /// `user-portal-url`: the login page for a person (https only); empty when not said.
    public var loginURL: String
    /// `venue-info-url`: the venue's page; empty when not said.
    public var venueURL: String
    /// When the session ends, from `seconds-remaining`, in microseconds since the epoch
    /// (CLOCK_REALTIME, as systemd's timestamps); 0 when not said.
    public var ends: UInt64
    /// `bytes-remaining`; -1 when not said.
    public var bytesRemaining: Int64
    /// `can-extend-session`.
    public var canExtend: Bool
    /// The session ends within the lead time (`[Portal] EndingLead=`): `no-portal` is false.
    public var ending: Bool

    public init(
        captive: Bool = false, loginURL: String = "", venueURL: String = "", ends: UInt64 = 0, bytesRemaining: Int64 = -1,
        canExtend: Bool = false, ending: Bool = false
    ) {
        self.captive = captive
        self.loginURL = loginURL
        self.venueURL = venueURL
        self.ends = ends
        self.bytesRemaining = bytesRemaining
        self.canExtend = canExtend
        self.ending = ending
    }

    public static let none = PortalSession()
}

/// One answer of a link's captive-portal API, as the adapter hands it to the Engine
/// (`NetworkEvent.portalAnswer`): the session as shown, and the instants the Engine needs
/// without reading a clock: when the session ends and when it is `ending`.
package struct PortalAnswer: Hashable, Sendable {
    public var interfaceIndex: Int32
    /// The API URI that was asked: an answer for a URI the link no longer announces is dropped.
    public var api: String
    public var session: PortalSession
    /// `seconds-remaining` counted from when the question was sent, less the lead time; nil
    /// when the API said no time.
    public var endingAt: ContinuousClock.Instant?

    public init(interfaceIndex: Int32, api: String, session: PortalSession, endingAt: ContinuousClock.Instant?) {
        self.interfaceIndex = interfaceIndex
        self.api = api
        self.session = session
        self.endingAt = endingAt
    }
}
