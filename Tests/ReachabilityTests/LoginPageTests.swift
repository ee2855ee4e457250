import Foundation
import Testing
@testable import Reachability

/// Which login page `reachctl login-page` opens, decided from the host's answers alone.
struct LoginPageOpeningsTests {
    static func captive(_ url: String) -> HostStatus {
        var host = HostStatus()
        host.portalSession = PortalSession(captive: true, loginURL: url)
        return host
    }

    static func redirected(_ url: String) -> HostStatus {
        var host = HostStatus()
        host.connectivity = ConnectivityStatus(verdict: .portal, portal: url)
        return host
    }

    @Test func oncePerSessionAgainForANewURLOrAfterATimeWithoutAPortal() {
        var openings = LoginPageOpenings()
        let start = ContinuousClock.now
        #expect(openings.record(HostStatus(), at: start) == .nothing)
        #expect(openings.record(Self.captive("https://login.test/a"), at: start) == .open("https://login.test/a"))
        // reachd tells the time left again, or anything else changes: the same session.
        var later = Self.captive("https://login.test/a")
        later.portalSession.ends = 123
        #expect(openings.record(later, at: start + .seconds(15)) == .nothing)
        #expect(openings.record(Self.captive("https://login.test/b"), at: start + .seconds(16)) == .open("https://login.test/b"))
        #expect(openings.record(HostStatus(), at: start + .seconds(17)) == .nothing)
        #expect(openings.record(Self.captive("https://login.test/b"), at: start + .seconds(80)) == .open("https://login.test/b"))
        // reachd's probe redirected to a portal (no API): its Location, once.
        #expect(openings.record(HostStatus(), at: start + .seconds(81)) == .nothing)
        #expect(openings.record(Self.redirected("http://login.hotel.test/"), at: start + .seconds(82)) == .open("http://login.hotel.test/"))
        #expect(openings.record(Self.redirected("http://login.hotel.test/"), at: start + .seconds(83)) == .nothing)
    }

    /// The API's page first; where the API names none, the page reachd's probe was sent to; a
    /// portal that names no page at all is said, once.
    @Test func theAPIsPageFirstElseWhereTheProbeWasRedirected() {
        var both = Self.captive("https://api.login.test/")
        both.connectivity = ConnectivityStatus(verdict: .portal, portal: "http://probe.login.test/")
        var openings = LoginPageOpenings()
        #expect(openings.record(both, at: .now) == .open("https://api.login.test/"))
        var silentAPI = Self.captive("")
        silentAPI.connectivity = ConnectivityStatus(verdict: .portal, portal: "http://probe.login.test/")
        openings = LoginPageOpenings()
        #expect(openings.record(silentAPI, at: .now) == .open("http://probe.login.test/"))
        openings = LoginPageOpenings()
        guard case .refuse = openings.record(Self.redirected(""), at: .now) else {
            Issue.record("a portal without a page opened something")
            return
        }
        #expect(openings.record(Self.redirected(""), at: .now) == .nothing)
    }

    /// Whatever a bus peer publishes, a browser is handed only an http(s) URL of printable ASCII,
    /// and the refusal names it inertly, once per session.
    @Test func hostileURLsAreRefusedNamingThem() {
        let hostile = [
            "javascript:alert(1)", "file:///etc/passwd", "--help", "https://login.test/\u{1b}[31m", "https://login.test/a b",
            "https://login.test/\u{202e}", "http://", "https://login.test/" + String(repeating: "a", count: 3000), "ftp://login.test/",
        ]
        var openings = LoginPageOpenings()
        for (offset, url) in hostile.enumerated() {
            let now = ContinuousClock.now + .seconds(offset * 100)
            let decision = openings.record(Self.captive(url), at: now)
            guard case let .refuse(why) = decision else {
                Issue.record("\(url.inertExcerpt()): \(decision)")
                continue
            }
            #expect(why.contains(url.inertExcerpt()) && !why.contains("\u{1b}") && why.utf8.count < 200, "\(why)")
            #expect(openings.record(Self.captive(url), at: now + .seconds(1)) == .nothing)
            #expect(openings.record(HostStatus(), at: now + .seconds(2)) == .nothing)
        }
        guard case .refuse = openings.record(Self.captive(""), at: .now) else {
            Issue.record("a captive portal without a login URL opens nothing")
            return
        }
    }

    /// A network that flaps opens at most 3 pages a minute; the fourth is said, and once the
    /// minute has passed a new session opens again.
    @Test func aFlappingPortalOpensAtMostThreePagesAMinute() {
        var openings = LoginPageOpenings()
        let start = ContinuousClock.now
        for round in 0..<3 {
            let now = start + .seconds(round * 10)
            #expect(openings.record(Self.captive("https://login.test/\(round)"), at: now) == .open("https://login.test/\(round)"))
            #expect(openings.record(HostStatus(), at: now + .seconds(1)) == .nothing)
        }
        guard case let .limit(why) = openings.record(Self.captive("https://login.test/3"), at: start + .seconds(30)) else {
            Issue.record("the fourth page in a minute was not held back")
            return
        }
        #expect(why.contains("'https://login.test/3'") && why.contains("3 pages"), "\(why)")
        #expect(openings.record(HostStatus(), at: start + .seconds(31)) == .nothing)
        #expect(openings.record(Self.captive("https://login.test/4"), at: start + .seconds(61)) == .open("https://login.test/4"))
    }
}

/// `reachctl login-page` through a real reachd on a real bus, behind a portal whose RFC 8908 API
/// (PortalServer, over HTTPS) reachd asks: a fake xdg-open first in PATH records each argument.
@Suite(rootOnly)
struct LoginPageDaemonTests {
    /// A directory holding an `xdg-open` that appends its arguments (count, then each) to `opened`.
    struct FakeOpener {
        let directory: String
        var log: String { directory + "/opened" }

        init() throws {
            directory = try makeScratchDirectory("fake-xdg-open")
            let script = "#!/bin/sh\nprintf '%s %s\\n' \"$#\" \"$*\" >>'\(directory)/opened'\n"
            try script.write(toFile: directory + "/xdg-open", atomically: true, encoding: .utf8)
            chmod(directory + "/xdg-open", 0o755)
        }

        /// Each call's line: `1 URL` for one argument.
        var calls: [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
    }

    /// Opened once when the API says captive, not again while reachd re-asks the API and
    /// re-publishes the same session (15 s later), never for the hostile answer that follows, and
    /// once more for the session after it.
    @Test func opensTheLoginURLOncePerSessionAndNeverAHostileOne() async throws {
        let network = try PortalAPITests.Network("lp0")
        defer { network.stop() }
        let opener = try FakeOpener()
        defer { removeTree(opener.directory) }
        try await network.harness.ready()
        let login = "https://192.0.2.1:8443/login?session=1&x=y"
        try network.server.answer(#"{"captive": true, "user-portal-url": "\#(login)", "seconds-remaining": 3600}"#)
        let path = opener.directory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let follower = try ChildProcess(
            reachctlPath(), ["login-page", "--bus-address", network.harness.address],
            environment: ProcessInfo.processInfo.environment.merging(["PATH": path]) { _, new in new })
        defer { follower.kill() }
        try network.lease(network.server.api)
        try await eventually("the login page opened", timeout: .seconds(3), every: .milliseconds(20)) { !opener.calls.isEmpty }
        #expect(opener.calls == ["1 \(login)"])
        // reachd asks again every 15 s while captive, and publishes the session's new end.
        let ends = try network.session()["ends"] as? Double
        try await eventually("the new end published", timeout: .seconds(20), every: .milliseconds(100)) {
            try network.session()["ends"] as? Double != ends
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(opener.calls == ["1 \(login)"], "the same session opened twice")
        // A hostile API: the session ends with the announcement, its answer refused, nothing opened.
        try network.lease(network.server.url("/control"))
        try network.harness.daemon?.waitForErrorLine(containing: "/control' on lp0 refused: ", timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(300))
        #expect(opener.calls == ["1 \(login)"])
        // The API again: a new session after a time without one, opened again.
        try network.lease(network.server.api)
        try await eventually("the new session's page", timeout: .seconds(3), every: .milliseconds(20)) { opener.calls.count == 2 }
        #expect(opener.calls == ["1 \(login)", "1 \(login)"])
        #expect(follower.isRunning, "\(follower.errorOutput)")
        #expect(follower.lines.filter { $0.hasPrefix("opened the login page ") }.count == 2, "\(follower.lines)")
    }

    /// Without reachd there is no portal to follow: it says so and exits 255 (the unit's
    /// Restart=on-failure tries again); a program that does not exist is refused naming it.
    @Test func refusesWithoutReachdAndWithoutTheProgram() throws {
        let missing = try reachctl(["login-page", "--open-with", "/nonexistent/opener", "--bus-address", "unix:path=/nonexistent/bus"])
        #expect(missing.status == 255 && missing.stderr.contains("'/nonexistent/opener'"), "\(missing)")
        let noReachd = try reachctl(["login-page", "--open-with", "/bin/true", "--bus-address", "unix:path=/nonexistent/bus"])
        #expect(noReachd.status == 255 && noReachd.stderr.contains("reachd is not available"), "\(noReachd)")
        let json = try reachctl(["login-page", "--json"])
        #expect(json.status == 255 && json.stderr.contains("--json"), "\(json)")
    }
}
