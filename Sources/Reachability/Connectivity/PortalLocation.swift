/// Where a probe's redirect points, as clients may be given it (`Portal`, Validate's reply, the
/// journal, reachctl): an absolute http or https URI of printable ASCII, at most
/// `maximumLength` long. A relative reference (`/login`, `login?x`, `//host/path`) is resolved
/// against the probe's URL, as a browser would. Anything else (`javascript:`, `file:`, control
/// characters, spaces, a novel-length URI) is refused: whoever answers a plain-HTTP probe
/// (a captive portal, or anyone on a hostile hotspot) chooses these bytes.
package enum PortalLocation {
    /// Far past any real login URL (they carry a session token or two), and a bound on what a
    /// stranger's header costs every reader of `Portal`.
    package static let maximumLength = 2048

    /// `location` as an absolute http(s) URI, or nil when it is refused. Without `base`, a
    /// relative reference is refused too.
    package static func resolve(_ location: String, against base: ProbeURL?) -> String? {
        guard !location.isEmpty, location.utf8.count <= maximumLength,
            location.utf8.allSatisfy({ 0x21...0x7E ~= $0 })
        else { return nil }
        let lower = location.lowercased()
        for scheme in ["http://", "https://"] where lower.hasPrefix(scheme) {
            let host = location.dropFirst(scheme.count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            return host.isEmpty ? nil : location
        }
        // Any other scheme (RFC 3986 3.1: a letter, then letters, digits, + - ., then ':'
        // before any '/', '?' or '#') is refused.
        let head = location.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let colon = head.firstIndex(of: ":"), head[..<colon].first?.isLetter == true,
            head[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." })
        {
            return nil
        }
        guard let base else { return nil }
        let origin = base.origin
        let resolved: String
        if location.hasPrefix("//") {
            resolved = (base.isSecure ? "https:" : "http:") + location  // RFC 3986 5.2.2: the base's scheme
        } else if location.hasPrefix("/") {
            resolved = origin + location
        } else if location.hasPrefix("?") {
            resolved = origin + base.path.prefix { $0 != "?" } + location
        } else if location.hasPrefix("#") {
            resolved = origin + base.path + location
        } else {
            let path = base.path.prefix { $0 != "?" }
            resolved = origin + path[...(path.lastIndex(of: "/") ?? path.startIndex)] + location
        }
        return resolved.utf8.count <= maximumLength ? resolved : nil
    }
}
