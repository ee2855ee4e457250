/// The probe's target, from `[Connectivity] URL=`: http or https.
///
/// A captive portal is found by the very interception TLS forbids: over http a portal answers
/// with its redirect (NetworkManager's and Android's portal probes are plain http for that
/// reason). Over https the same interception is a failed handshake or certificate (`none`), and
/// an answer is known to be the server's own: the choice of a site whose own server answers.
package struct ProbeURL: Sendable, Hashable, CustomStringConvertible {
    /// https: the answer comes through TLS, checked against the trust store.
    package var isSecure: Bool
    /// A host name, or an address literal (IPv6 without its brackets).
    package var host: String
    package var port: UInt16
    /// The path and query, starting with `/`.
    package var path: String

    package var description: String { origin + path }

    /// The scheme, host and port (where not the scheme's own): what a relative Location is
    /// resolved against.
    package var origin: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return (isSecure ? "https://" : "http://") + shownHost + (port == (isSecure ? 443 : 80) ? "" : ":\(port)")
    }

    package init(host: String, port: UInt16? = nil, path: String = "/", isSecure: Bool = false) {
        self.isSecure = isSecure
        self.host = host
        self.port = port ?? (isSecure ? 443 : 80)
        self.path = path
    }

    /// Parses `text`, or says what is wrong with it in a sentence that quotes it.
    package static func parse(_ text: String) -> Result<ProbeURL, ProbeURLError> {
        let lower = text.lowercased()
        let isSecure = lower.hasPrefix("https://")
        guard isSecure || lower.hasPrefix("http://") else {
            return .failure(ProbeURLError(text: text, problem: "expected a URL starting with http:// or https://, such as http://nmcheck.gnome.org/check_network_status.txt"))
        }
        guard !text.contains(where: { $0 == " " || $0 == "\t" || !$0.isASCII || $0.asciiValue! < 0x21 }) else {
            return .failure(ProbeURLError(text: text, problem: "spaces, control and non-ASCII characters are not allowed (percent-encode them)"))
        }
        let rest = text.dropFirst(isSecure ? "https://".count : "http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var path = String(rest.dropFirst(authority.count))
        if let fragment = path.firstIndex(of: "#") { path = String(path[..<fragment]) }
        if path.isEmpty { path = "/" } else if path.hasPrefix("?") { path = "/" + path }
        if authority.contains("@") {
            return .failure(ProbeURLError(text: text, problem: "user names and passwords are not allowed in the probe URL"))
        }
        var host = Substring(authority)
        var port: UInt16 = isSecure ? 443 : 80
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else {
                return .failure(ProbeURLError(text: text, problem: "an IPv6 address must be closed with ']'"))
            }
            let after = host[host.index(after: close)...]
            let literal = host[host.index(after: host.startIndex)..<close]
            guard case .v6 = IPAddress(String(literal)) else {
                return .failure(ProbeURLError(text: text, problem: "'\(literal)' is not an IPv6 address"))
            }
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = UInt16(after.dropFirst()), number > 0 else {
                    return .failure(ProbeURLError(text: text, problem: "the port after ']' must be a number from 1 to 65535"))
                }
                port = number
            }
            host = literal
        } else if let colon = host.lastIndex(of: ":") {
            guard let number = UInt16(host[host.index(after: colon)...]), number > 0 else {
                return .failure(ProbeURLError(text: text, problem: "the port must be a number from 1 to 65535"))
            }
            port = number
            host = host[..<colon]
        }
        guard !host.isEmpty else { return .failure(ProbeURLError(text: text, problem: "the URL names no host")) }
        let name = String(host)
        if IPAddress(name) == nil, case let .failure(error) = HostName.validate(name) {
            return .failure(ProbeURLError(text: text, problem: error.description))
        }
        return .success(ProbeURL(host: name, port: port, path: path, isSecure: isSecure))
    }
}

package struct ProbeURLError: Error, Hashable, Sendable, CustomStringConvertible {
    package var text: String
    package var problem: String
    package var description: String { "invalid probe URL '\(text)': \(problem)" }
}
