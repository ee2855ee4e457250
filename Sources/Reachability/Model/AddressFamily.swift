/// IPv4 or IPv6: the one spelling of an address family above the kernel's wire bytes.
///
/// The raw values are the kernel's (AF_INET, AF_INET6), so the netlink adapters convert with
/// `rawValue` and `init(rawValue:)` at the edge and nothing above them handles a bare `UInt8`.
public enum AddressFamily: UInt8, Sendable, Hashable, CaseIterable, Comparable {
    case ipv4 = 2
    case ipv6 = 10

    /// The unspecified address of the family: what a check of "the internet" is asked about.
    public var any: IPAddress { self == .ipv4 ? .anyV4 : .anyV6 }

    /// The other family, for the paths that may carry a tunnel of this one.
    public var other: AddressFamily { self == .ipv4 ? .ipv6 : .ipv4 }

    /// "IPv4" or "IPv6", for sentences.
    public var name: String { self == .ipv4 ? "IPv4" : "IPv6" }

    public static func < (a: AddressFamily, b: AddressFamily) -> Bool { a.rawValue < b.rawValue }
}
