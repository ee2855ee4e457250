/// A captive-portal URI the network announced itself (RFC 8910): option 37 of an IPv6 router
/// advertisement, which the kernel forwards to rtnetlink listeners (RTM_NEWNDUSEROPT) once it
/// has accepted the advertisement. Zero traffic: reachd only listens.
///
/// The option carries no lifetime, and `struct nduseroptmsg` carries neither the advertisement's
/// router lifetime nor the other options, so the Engine ties the URI to what the kernel does with
/// the router: it holds while the link stays ready, is replaced by the next announcement on that
/// link, and is dropped when the kernel removes the default route through the announcing router
/// (its router lifetime ran out, or it said lifetime 0) or the link goes down or away.
package struct AnnouncedPortal: Hashable, Sendable {
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
    package static let maximumLength = 255 * 8 - 2

    /// The URI in an option's value (the bytes after type and length), NUL padding removed, or why
    /// it is not a URI a client may be given. Taken: the "unrestricted" URN, and an https URI as
    /// RFC 3986 section 3 parses one, of printable ASCII only, with a host (a reg-name, an IPv4
    /// address or a bracketed IPv6 literal), no user name, a port of at most 65535, valid
    /// percent-encoding and no character outside RFC 3986's sets (`"`, `<`, `>`, backtick,
    /// backslash, `|`, braces, `^` are outside them). The option names the RFC 8908 API, which is
    /// served over https only, and a desktop that opens the announced "portal" must never be
    /// handed `javascript:`, `file:`, a plain-http page an attacker on the link can answer, a
    /// URI that a lenient parser reads otherwise than a strict one, or one whose user name
    /// (`https://bank.example@evil.example/`) disguises its host (RFC 9110 4.2.4: not in https).
    package static func uri(fromOptionValue value: [UInt8]) -> Result<String, AnnouncementRefusal> {
        var end = value.count
        while end > 0, value[end - 1] == 0 { end -= 1 }
        let text = value[..<end]
        guard !text.isEmpty else { return .failure(AnnouncementRefusal("empty")) }
        guard text.count <= maximumLength else { return .failure(AnnouncementRefusal("longer than \(maximumLength) bytes")) }
        guard text.allSatisfy({ 0x21...0x7E ~= $0 }) else {
            return .failure(AnnouncementRefusal("a byte that is not printable ASCII (RFC 3986 has no spaces, controls or raw UTF-8)"))
        }
        let uri = String(decoding: text, as: UTF8.self)
        if uri == unrestricted { return .success(uri) }
        return HTTPSURI.refusal(text).map { .failure(AnnouncementRefusal($0)) } ?? .success(uri)
    }
}

/// RFC 3986's grammar for an https URI, as strict as its ABNF: `https://` authority, then
/// path-abempty, `?` query and `#` fragment, all over printable ASCII.
package enum HTTPSURI {
    /// Why `uri` is not such a URI, or nil.
    package static func refusal(_ uri: ArraySlice<UInt8>) -> String? {
        let scheme = Array("https://".utf8)
        guard uri.count > scheme.count, zip(uri.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 | 0x20 }) else {
            return "not an https URI (the RFC 8908 API is served over https only)"
        }
        let rest = uri.dropFirst(scheme.count)
        let authorityEnd = rest.firstIndex { $0 == ascii("/") || $0 == ascii("?") || $0 == ascii("#") } ?? rest.endIndex
        if let problem = authorityRefusal(rest[..<authorityEnd]) { return problem }
        // path-abempty, query, fragment: pchar, "/" and "?", and one "#" before the fragment.
        var fragment = false
        var index = authorityEnd
        while index < rest.endIndex {
            let byte = rest[index]
            if byte == ascii("#") {
                guard !fragment else { return "a second '#'" }
                fragment = true
            } else if byte == ascii("%") {
                guard index + 2 < rest.endIndex, isHex(rest[index + 1]), isHex(rest[index + 2]) else { return "a '%' not followed by two hex digits" }
                index += 2
            } else if !(isUnreserved(byte) || isSubDelimiter(byte) || ":@/?".utf8.contains(byte)) {
                return "the character '\(Character(Unicode.Scalar(byte)))', which RFC 3986 does not allow"
            }
            index += 1
        }
        return nil
    }

    /// authority = host [ ":" port ], host = IP-literal / IPv4address / reg-name, not empty.
    private static func authorityRefusal(_ authority: ArraySlice<UInt8>) -> String? {
        guard !authority.contains(ascii("@")) else { return "a user name before the host (never in https URIs: it disguises the host)" }
        var host = authority
        var port: ArraySlice<UInt8> = []
        if host.first == ascii("[") {
            guard let close = host.firstIndex(of: ascii("]")) else { return "an IPv6 literal without ']'" }
            let literal = host[(host.startIndex + 1)..<close]
            // No zone identifier: it names an interface of the router, meaningless to the host.
            guard let address = IPAddress(String(decoding: literal, as: UTF8.self)), address.family == .ipv6 else {
                return "an invalid IPv6 literal"
            }
            let after = host[(close + 1)...]
            guard after.isEmpty || after.first == ascii(":") else { return "something between ']' and the port" }
            port = after.dropFirst()
            host = host[...close]
        } else {
            if let colon = host.firstIndex(of: ascii(":")) {
                port = host[(colon + 1)...]
                host = host[..<colon]
            }
            guard !host.isEmpty else { return "an empty host" }
            var index = host.startIndex
            while index < host.endIndex {
                let byte = host[index]
                if byte == ascii("%") {
                    guard index + 2 < host.endIndex, isHex(host[index + 1]), isHex(host[index + 2]) else {
                        return "a '%' not followed by two hex digits in the host"
                    }
                    index += 2
                } else if !(isUnreserved(byte) || isSubDelimiter(byte)) {
                    return "the character '\(Character(Unicode.Scalar(byte)))' in the host, which RFC 3986 does not allow"
                }
                index += 1
            }
        }
        guard port.count <= 5, port.allSatisfy({ ascii("0")...ascii("9") ~= $0 }), port.isEmpty || Int(String(decoding: port, as: UTF8.self))! <= 65535
        else { return "an invalid port" }
        return nil
    }

    private static func ascii(_ character: Unicode.Scalar) -> UInt8 { UInt8(ascii: character) }

    private static func isHex(_ byte: UInt8) -> Bool {
        ascii("0")...ascii("9") ~= byte || ascii("a")...ascii("f") ~= byte | 0x20
    }

    /// ALPHA / DIGIT / "-" / "." / "_" / "~"
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        ascii("a")...ascii("z") ~= byte | 0x20 || ascii("0")...ascii("9") ~= byte || "-._~".utf8.contains(byte)
    }

    /// "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
    private static func isSubDelimiter(_ byte: UInt8) -> Bool { "!$&'()*+,;=".utf8.contains(byte) }
}
