/// A captive-portal URI the network announced itself (RFC 8910): option 37 of an IPv6 router
/// advertisement, which the kernel forwards to rtnetlink listeners (RTM_NEWNDUSEROPT) once it
/// has accepted the advertisement. Zero traffic: reachd only listens.
///
/// The option carries no lifetime, and `struct nduseroptmsg` carries neither the advertisement's
/// router lifetime nor the other options, so the Engine ties the URI to what the kernel does with
/// the router: it holds while the link stays ready, is replaced by the next announcement on that
/// link, and is dropped when the kernel removes the default route through the announcing router
/// (its router lifetime ran out, or it said lifetime 0) or the link goes down or away.
public struct AnnouncedPortal: Hashable, Sendable {
    public var interfaceIndex: Int32
    /// The advertisement's source (the router's link-local address).
    public var router: IPAddress
    /// The URI as announced: the RFC 8908 API's URL, or `urn:ietf:params:capport:unrestricted`,
    /// the network saying it has no portal.
    public var uri: String

    public init(interfaceIndex: Int32, router: IPAddress, uri: String) {
        self.interfaceIndex = interfaceIndex
        self.router = router
        self.uri = uri
    }

    /// RFC 8910 section 2: what a network without a portal may announce.
    public static let unrestricted = "urn:ietf:params:capport:unrestricted"

    /// The longest URI an option can carry: 255 units of 8 octets, less the type and length.
    static let maximumLength = 255 * 8 - 2

    /// The URI in an option's value (the bytes after type and length): NUL padding removed.
    /// Nil when it is not a URI a client could be given: empty, a NUL inside it, or anything but
    /// printable ASCII (RFC 3986 has no spaces or controls; a router that sends them is broken or
    /// hostile, and its bytes are not passed on to clients); and nil unless it is an https URI
    /// with a host or the "unrestricted" URN: the option names the RFC 8908 API, which is served
    /// over https only, and a desktop that opens the announced "portal" must never be handed
    /// `javascript:`, `file:` or a plain-http page an attacker on the link can answer.
    static func uri(fromOptionValue value: [UInt8]) -> String? {
        var end = value.count
        while end > 0, value[end - 1] == 0 { end -= 1 }
        let text = value[..<end]
        guard !text.isEmpty, text.count <= maximumLength, text.allSatisfy({ 0x21...0x7E ~= $0 }) else { return nil }
        // RFC 3986 section 3: a scheme, then ':'.
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")), colon > text.startIndex,
            text[..<colon].allSatisfy({ isSchemeCharacter($0) })
        else { return nil }
        let uri = String(decoding: text, as: UTF8.self)
        if uri == unrestricted { return uri }
        let lower = uri.lowercased()
        guard lower.hasPrefix("https://"),
            !lower.dropFirst("https://".count).prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" }).isEmpty
        else { return nil }
        return uri
    }

    private static func isSchemeCharacter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }
}
