import Testing
@testable import Reachability

/// issue 24: what a probe answer says about the portal is inert: only http(s) URIs, bounded,
/// relative ones resolved against the probe's URL.
@Suite("Portal locations")
struct PortalLocationTests {
    static let probe = ProbeURL(host: "probe.test", port: 8080, path: "/dir/generate_204?x=1")

    @Test(arguments: [
        ("http://login.hotel.example/?continue=probe", "http://login.hotel.example/?continue=probe"),
        ("HTTPS://login.example/a", "HTTPS://login.example/a"),
        ("/login", "http://probe.test:8080/login"),
        ("login?next=1", "http://probe.test:8080/dir/login?next=1"),
        ("?page=2", "http://probe.test:8080/dir/generate_204?page=2"),
        ("//portal.example/x", "http://portal.example/x"),
    ])
    func accepted(_ location: String, _ portal: String) {
        #expect(PortalLocation.resolve(location, against: Self.probe) == portal)
    }

    @Test(arguments: [
        "javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "http://portal.test/\u{01}\u{02}\u{1b}[31m",
        "http://a b/", "http://", "https:///path", "http://caf\u{E9}.example/", "",
        "http://long.example/" + String(repeating: "a", count: 2048),
    ])
    func refused(_ location: String) {
        #expect(PortalLocation.resolve(location, against: Self.probe) == nil)
    }

    @Test func aRelativeLocationNeedsTheProbesURL() {
        #expect(PortalLocation.resolve("/login", against: nil) == nil)
        #expect(PortalLocation.resolve("http://a.example/", against: nil) == "http://a.example/")
    }

    @Test func aHostileLocationGivesAPortalVerdictWithoutItsBytes() throws {
        let status = ProbeExpectation().judge(
            try ConnectivityVerdictTests.response("302\nLocation: javascript:alert(1)\n\n"),
            from: Self.probe)
        #expect(status.verdict == .portal && status.portal == "")
        #expect(status.detail.contains("refused") && !status.detail.contains("javascript"), "\(status.detail)")
        let relative = ProbeExpectation().judge(
            try ConnectivityVerdictTests.response("302\nLocation: /login\n\n"), from: Self.probe)
        #expect(relative.portal == "http://probe.test:8080/login")
    }

    /// Relative to an https probe, a Location stays https (the base's scheme and port).
    @Test func aRelativeLocationKeepsAnHTTPSProbesScheme() {
        let secure = ProbeURL(host: "probe.test", path: "/check", isSecure: true)
        #expect(PortalLocation.resolve("/login", against: secure) == "https://probe.test/login")
        #expect(PortalLocation.resolve("//portal.example/x", against: secure) == "https://portal.example/x")
    }
}
