import ReachabilitySystem  // String.inertExcerpt

/// A router advertisement's option that reachd does not pass on: a captive-portal URI (RFC 8910)
/// that is no strict https URI, or a NAT64 prefix (RFC 8781) no host may synthesize addresses
/// in. The bytes came from any host on the link, so a refusal is not an error of reachd's: the
/// option is dropped, and the journal says once per router what was refused and why, quoting
/// an inert excerpt of the value (`KernelSource`).
package struct RefusedAnnouncement: Hashable, Sendable, CustomStringConvertible {
    public enum Option: String, Hashable, Sendable {
        case captivePortal = "captive-portal URI"
        case nat64Prefix = "NAT64 prefix"
    }

    public var option: Option
    public var interfaceIndex: Int32
    /// The advertisement's source; nil when the kernel did not say (the message is then an error
    /// anyway, unless the option was refused first).
    public var router: IPAddress?
    /// The value as announced (a URI's bytes as text, a prefix's description).
    public var value: String
    /// Why it is refused, for people.
    public var reason: String

    public init(option: Option, interfaceIndex: Int32, router: IPAddress?, value: String, reason: String) {
        self.option = option
        self.interfaceIndex = interfaceIndex
        self.router = router
        self.value = value
        self.reason = reason
    }

    /// The journal's line.
    public var description: String {
        "ignoring the \(option.rawValue) \(value.inertExcerpt()) announced by \(router?.description ?? "a router") on link "
            + "\(interfaceIndex): \(reason); said once per router"
    }
}

/// Why an announced value is refused (`RefusedAnnouncement.reason`), as a validator returns it.
package struct AnnouncementRefusal: Error, Hashable, Sendable {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
}
