/// What the probe expects back (`[Connectivity]`), and how an answer or a failure maps onto
/// `ConnectivityVerdict`. Pure: the daemon's probe feeds it what happened.
///
/// The rules, beside those of the checkers people trust (documented in reachd.conf(5)):
/// - **full**: the header `X-NetworkManager-Status: online` (NetworkManager's), or, with
///   `ExpectedBody=` set, that prefix of a 200's body (NetworkManager's); without it, the
///   `ExpectedStatus=` (default 204: Android's and NetworkManager's generate_204 servers), or a
///   200 with an empty body (NetworkManager counts it as 204 too).
/// - **portal**: a redirect (3xx, its Location reported: what Android and NetworkManager
///   take as a login page), or a 200 with content other than what was expected (Android: a
///   200-399 with content; NetworkManager: an unexpected body).
/// - **limited**: any other answer: 4xx and 5xx, and a 200 of 1-4 bytes when no body was
///   expected (Android calls that a failure, not a portal: a broken middlebox, not a login page).
/// - **none**: no answer at all: DNS failed or timed out, the connection was refused, reset or
///   never answered within `Timeout=` (NetworkManager calls these "limited"; we keep "none" for
///   "nothing answers", as its state names suggest, and "limited" for "something answers wrongly").
package struct ProbeExpectation: Sendable, Hashable {
    /// The bytes of a body a verdict reads (a longer one is cut there: a login page is known by
    /// its start).
    package static let maximumBody = 4 * 1024

    package var status: Int
    /// A prefix the body must start with; empty for none.
    package var body: String

    package init(status: Int = 204, body: String = "") {
        self.status = status
        self.body = body
    }

    /// `url`: the probe's URL, which a relative Location is resolved against (see `PortalLocation`).
    package func judge(_ response: HTTPResponse, from url: ProbeURL? = nil) -> ConnectivityStatus {
        let detail = "HTTP \(response.status)" + (response.body.isEmpty ? "" : ", \(response.body.count)\(response.isComplete ? "" : "+") bytes")
        if response.headers["x-networkmanager-status"]?.lowercased() == "online" {
            return ConnectivityStatus(verdict: .full, detail: detail + ", X-NetworkManager-Status: online")
        }
        if (300...399).contains(response.status), response.status != 304 {
            guard let location = response.headers["location"], !location.isEmpty else {
                return ConnectivityStatus(verdict: .portal, detail: detail + ", a redirect without Location")
            }
            guard let portal = PortalLocation.resolve(location, against: url) else {
                // Its bytes are not repeated: they are the sender's, and this line is logged.
                return ConnectivityStatus(
                    verdict: .portal, detail: detail + ", a Location that is not an http(s) URI (\(location.utf8.count) bytes) refused")
            }
            return ConnectivityStatus(verdict: .portal, portal: portal, detail: detail)
        }
        if !body.isEmpty {
            guard response.status == 200 else { return ConnectivityStatus(verdict: .limited, detail: detail) }
            let expected = Array(body.utf8)
            if response.body.starts(with: expected) { return ConnectivityStatus(verdict: .full, detail: detail) }
            return ConnectivityStatus(verdict: .portal, detail: detail + ", not the expected body")
        }
        if response.status == status { return ConnectivityStatus(verdict: .full, detail: detail) }
        if response.status == 200 {
            if response.body.isEmpty { return ConnectivityStatus(verdict: .full, detail: detail + " (empty, as good as 204)") }
            if response.body.count <= 4, response.isComplete { return ConnectivityStatus(verdict: .limited, detail: detail + " (too short to be a page)") }
            return ConnectivityStatus(verdict: .portal, detail: detail + ", content where \(status) was expected")
        }
        return ConnectivityStatus(verdict: .limited, detail: detail)
    }

    /// Nothing answered: `what` says how (`DNS timeout`, `connect: Connection refused`).
    package static func failed(_ what: String) -> ConnectivityStatus {
        ConnectivityStatus(verdict: .none, detail: what)
    }
}
