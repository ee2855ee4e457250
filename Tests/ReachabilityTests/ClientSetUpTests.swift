import Testing
@testable import Reachability

/// A `ReachabilityClient` sends its set-up behind its first call, and dbus-daemon drops a
/// connection that has not said Hello within its auth_timeout (30 s by default, which the system
/// bus keeps): a client made and first asked later (made at a program's start; a test's client
/// made before a minute of a loaded CI run) failed that call with "Connection terminated".
@Suite(rootOnly)
struct ClientSetUpTests {
    /// On a bus that gives a connection 1 s to set up, a client first asked 1.5 s after it was
    /// made answers: its connection, never used within its window, is made again at that first
    /// call. Asked again past the window, it keeps the connection it used.
    @Test func aClientFirstAskedPastItsSetUpWindowConnectsAgainAndAnswers() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "cs0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let harness = try DaemonHarness(ns, anyUser: true, authTimeout: .seconds(1))
        defer { harness.shutdown() }
        try await harness.ready()

        let client = try ReachabilityClient(bus: .address(harness.address))
        client.setUpWindow = .milliseconds(200)
        try await Task.sleep(for: .milliseconds(1500))
        #expect(try client.status().host.primaryInterface == "cs0")
        let used = client.connection
        try await Task.sleep(for: .milliseconds(1500))
        #expect(try client.status().host.primaryInterface == "cs0")
        #expect(client.connection === used, "used once, kept")
    }

    /// With the shipped window, on a bus with dbus-daemon's default limits: 33 s after the client
    /// was made, its first call answers.
    @Test func aClientFirstAskedHalfAMinuteLaterAnswers() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "cs0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let harness = try DaemonHarness(ns, anyUser: true)
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try ReachabilityClient(bus: .address(harness.address))
        try await Task.sleep(for: .seconds(33))
        #expect(try client.status().host.primaryInterface == "cs0")
    }
}
