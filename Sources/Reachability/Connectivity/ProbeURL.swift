/// The probe's target, from `[Connectivity] URL=`: plain HTTP only.
///
/// Why not HTTPS: a captive portal is found by the very interception TLS forbids. NetworkManager's
/// and Android's portal probes are plain HTTP for that reason (Android adds an HTTPS probe only
/// to confirm "full"); a certificate error would say "something is wrong", never "log in at
/// this page". An https:// URL is refused with that reason rather than half-supported.
package struct ProbeURL: Sendable, Hashable, CustomStringConvertible {
    /// A host name, or an address literal (IPv6 without its brackets).
    package var host: String
    package var port: UInt16
    /// The path and query, starting with `/`.
    package var path: String

    package var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "http://\(shownHost)" + (port == 80 ? "" : ":\(port)") + path
    }

    /// The Host header's value.
    var hostHeader: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return port == 80 ? shownHost : "\(shownHost):\(port)"
    }

    package init(host: String, port: UInt16 = 80, path: String = "/") {
        self.host = host
        self.port = port
        self.path = path
    }

    /// Parses `text`, or says what is wrong with it in a sentence that quotes it.
    package static func parse(_ text: String) -> Result<ProbeURL, ProbeURLError> {
        let lower = text.lowercased()
        if lower.hasPrefix("https://") {
            return .failure(ProbeURLError(text: text, problem: "https is not supported: a captive portal is found by the interception TLS forbids, so probes use plain http (as NetworkManager's and Android's do)"))
        }
        guard lower.hasPrefix("http://") else {
            return .failure(ProbeURLError(text: text, problem: "expected a URL starting with http://, such as http://nmcheck.gnome.org/check_network_status.txt"))
        }
        guard !text.contains(where: { $0 == " " || $0 == "\t" || !$0.isASCII || $0.asciiValue! < 0x21 }) else {
            return .failure(ProbeURLError(text: text, problem: "spaces, control and non-ASCII characters are not allowed (percent-encode them)"))
        }
        let rest = text.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var path = String(rest.dropFirst(authority.count))
        if let fragment = path.firstIndex(of: "#") { path = String(path[..<fragment]) }
        if path.isEmpty { path = "/" } else if path.hasPrefix("?") { path = "/" + path }
        if authority.contains("@") {
            return .failure(ProbeURLError(text: text, problem: "user names and passwords are not allowed in the probe URL"))
        }
        var host = Substring(authority)
        var port: UInt16 = 80
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
        return .success(ProbeURL(host: name, port: port, path: path))
    }
}

package struct ProbeURLError: Error, Hashable, Sendable, CustomStringConvertible {
    package var text: String
    package var problem: String
    package var description: String { "invalid probe URL '\(text)': \(problem)" }
}
