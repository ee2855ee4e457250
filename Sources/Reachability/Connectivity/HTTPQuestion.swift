/// One HTTP(S) request reachd makes through `HTTPExchanges`: a network's captive-portal API or
/// the connectivity probe. Every bound is the asker's: the thread sets each one on the transfer
/// before anything is sent.
package struct HTTPQuestion: Sendable, Hashable {
    /// Where a request leaves from.
    package enum Binding: Sendable, Hashable {
        /// As the kernel routes it.
        case routed
        /// From this address (the path's source address).
        case source(IPAddress)
        /// Through this link only (SO_BINDTODEVICE), from the source the kernel's route picks.
        case link(String)
        /// Through this link only (SO_BINDTODEVICE) and from this address of its own: the one
        /// reachd's record of the link sends from, not the first libcurl would find on it.
        case linkAddress(String, IPAddress)
    }

    /// A name resolved already (by reachd's own resolver): the transfer connects to `address`
    /// for `host` and `port` and makes no lookup of its own.
    package struct Resolved: Sendable, Hashable {
        package var host: String
        package var port: UInt16
        package var address: IPAddress

        package init(host: String, port: UInt16, address: IPAddress) {
            self.host = host
            self.port = port
            self.address = address
        }

        /// libcurl's CURLOPT_CONNECT_TO entry: for this transfer only (CURLOPT_RESOLVE would put
        /// the address in the cache every transfer shares). TLS still checks `host`.
        package var entry: String { "\(host):\(port):" + (address.family == .ipv6 ? "[\(address)]" : "\(address)") + ":\(port)" }
    }

    package var url: String
    package var binding: Binding
    /// nil: the library resolves the URL's name (or it is an address).
    package var resolved: Resolved?
    /// The schemes allowed: `https` alone, or `http,https`.
    package var protocols: String
    /// Redirects followed (https only); 0: a redirect is the answer.
    package var redirects: Int
    package var timeout: Duration
    /// Bytes of the body kept; more ends the transfer, and the answer is marked incomplete.
    package var maximumBody: Int
    /// The request's headers beyond Host and User-Agent (`Accept: ...`).
    package var headers: [String]
    /// A file of trusted CAs instead of the system's store (a site's or a test's CA).
    package var caFile: String?

    package init(
        url: String, binding: Binding, resolved: Resolved? = nil, protocols: String, redirects: Int, timeout: Duration,
        maximumBody: Int, headers: [String], caFile: String? = nil
    ) {
        self.url = url
        self.binding = binding
        self.resolved = resolved
        self.protocols = protocols
        self.redirects = redirects
        self.timeout = timeout
        self.maximumBody = maximumBody
        self.headers = headers
        self.caFile = caFile
    }
}

/// Why an exchange brought no answer: the library's sentence (`Could not connect to server`).
package struct HTTPFailure: Error, Sendable, Hashable, CustomStringConvertible {
    package var description: String
    /// The question's timeout ended it.
    package var timedOut: Bool

    package init(_ description: String, timedOut: Bool = false) {
        self.description = description
        self.timedOut = timedOut
    }
}

/// The answer to an `HTTPQuestion`: the last response's status, the few headers a verdict reads,
/// and the start of its body.
package struct HTTPResponse: Sendable, Hashable {
    package var status: Int
    /// `location`, `content-type` and `x-networkmanager-status` when sent (names lowercased).
    package var headers: [String: String]
    package var body: [UInt8]
    /// Whether the whole body arrived (not cut at the question's `maximumBody`).
    package var isComplete: Bool

    /// The headers an answer is read for.
    package static let readHeaders = ["location", "content-type", "x-networkmanager-status"]

    package init(status: Int, headers: [String: String] = [:], body: [UInt8] = [], isComplete: Bool = true) {
        self.status = status
        self.headers = headers
        self.body = body
        self.isComplete = isComplete
    }
}
