import ReachabilitySystem  // String.inertExcerpt

/// Which captive-portal login page to open for the person at the screen, and when
/// (`reachctl login-page`, reachd-login-page.service): once per portal session, never for a URL a
/// browser should not be handed, and never more than `maximumOpenings` in `window` however often
/// the network flaps. Pure: the host's answers and the instants come in, a decision goes out.
///
/// A portal session begins when the host turns captive (the portal API's `captive`, or reachd's
/// probe redirected to a portal) or when, still captive, the login URL changes. The same URL
/// again within a session (reachd re-publishing the time left, any other change) opens nothing;
/// after a period without a portal it opens again, for that is a new session.
package struct LoginPageOpenings: Sendable {
    /// A flapping portal opens at most this many pages per `window`; the rest are said, not opened.
    package static let maximumOpenings = 3
    package static let window: Duration = .seconds(60)
    /// A login URL carries a session token or two (the portal API allows 2048 bytes).
    package static let maximumURLBytes = 2048

    package enum Decision: Equatable, Sendable {
        /// Nothing new: no portal, or the session's page was seen already.
        case nothing
        /// A new session: open this page.
        case open(String)
        /// A new session whose URL no browser should be handed; the reason names it.
        case refuse(String)
        /// A new session past the rate limit; the reason names it.
        case limit(String)
    }

    /// The login URL of the current portal session, opened or not; nil while not captive.
    private var session: String?
    private var openings: [ContinuousClock.Instant] = []

    package init() {}

    /// What to do now that the host is `host`, at `now`.
    package mutating func record(_ host: HostStatus, at now: ContinuousClock.Instant) -> Decision {
        guard let url = Self.loginURL(host) else {
            session = nil
            return .nothing
        }
        guard url != session else { return .nothing }
        session = url
        if url.isEmpty { return .refuse("a captive portal, but it names no login page to open") }
        if let problem = Self.refusal(url) { return .refuse("not opening the login page \(url.inertExcerpt()): \(problem)") }
        openings.removeAll { now - $0 >= Self.window }
        guard openings.count < Self.maximumOpenings else {
            return .limit("not opening the login page \(url.inertExcerpt()): \(Self.maximumOpenings) pages opened in the last \(Self.window.components.seconds) s already")
        }
        openings.append(now)
        return .open(url)
    }

    /// The login page while the host is captive: the portal API's, else where reachd's probe was
    /// redirected to. nil while not captive; "" when captive without a page to show.
    package static func loginURL(_ host: HostStatus) -> String? {
        let (session, probe) = (host.portalSession, host.connectivity)
        if session.captive, !session.loginURL.isEmpty { return session.loginURL }
        if probe.verdict == .portal, !probe.portal.isEmpty { return probe.portal }
        return session.captive || probe.verdict == .portal ? "" : nil
    }

    /// Why `url` is no page to hand a browser: not http or https, too long, or with a byte
    /// that is no printable ASCII (a control character, a space, anything a terminal or the
    /// opener's own parsing could take for something else); nil when it is fine.
    package static func refusal(_ url: String) -> String? {
        let bytes = Array(url.utf8)
        guard bytes.count <= maximumURLBytes else { return "longer than \(maximumURLBytes) bytes" }
        guard bytes.allSatisfy({ 0x21...0x7E ~= $0 }) else { return "it has a byte that is not printable ASCII" }
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else { return "not an http or https URL" }
        guard bytes.count > (lower.hasPrefix("https://") ? 8 : 7) else { return "it names no host" }
        return nil
    }
}
