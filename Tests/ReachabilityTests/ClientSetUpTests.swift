import Testing
@testable import Reachability

/// A `ReachabilityClient` sends Hello behind its first call, and dbus-daemon drops a connection
/// that has not said Hello within 30 s (sd-bus itself gives up after 90 s): a client made and
/// first asked later (made at a program's start; a test's client made before a minute of a
/// loaded CI run) failed its first call with "Connection terminated". A client whose connection
/// was never used past its set-up window connects again before asking; one already used keeps
/// its connection.
@Suite(rootOnly)
struct ClientSetUpTests {
    @Test func aClientFirstAskedPastItsSetUpWindowConnectsAgainAndAnswers() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "cs0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let harness = try DaemonHarness(ns)
        defer { harness.shutdown() }
        try await harness.ready()

        let client = try ReachabilityClient(bus: .address(harness.address))
        client.setUpWindow = .milliseconds(200)
        let made = client.connection
        #expect(!made.isReady, "nothing asked yet: the connection is still being set up")
        try await Task.sleep(for: .milliseconds(400))
        let answer = try client.status()
        #expect(answer.host.primaryInterface == "cs0", "\(answer)")
        let used = client.connection
        #expect(used !== made, "never used past its window: made again")

        try await Task.sleep(for: .milliseconds(400))
        _ = try client.status()
        #expect(client.connection === used, "used once, kept")
    }

    /// As on the system bus (dbus-daemon's default limits, which the system bus keeps): 33 s after
    /// the client was made, its first call answers. With the connection left as it was made, that
    /// call failed with "Connection terminated".
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
