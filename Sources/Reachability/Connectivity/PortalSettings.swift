/// `[Portal]` in reachd.conf: the network's own captive-portal API (RFC 8908), asked whenever a
/// link announces one (RFC 8910), and never a third party.
package struct PortalSettings: Sendable, Hashable {
    /// `EndingLead=`: how long before a session's end `no-portal` turns false, so units bound to
    /// it stop before the cut-off.
    package var endingLead: Duration = .seconds(60)
    /// `CAFile=`: trust only the CAs in this PEM file instead of the system's store (a test's or
    /// a site's own CA); nil: the system's store.
    package var caFile: String?

    package init() {}

    package static let endingLeadRange: ClosedRange<Duration> = .zero ... .seconds(3600)
}
