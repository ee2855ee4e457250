import Testing
@testable import Reachability

/// sd-bus gives a connection 90 s from its making to finish authenticating, and checks that when
/// the connection is next processed: a `ReachabilityClient` made and first asked later (made at
/// a program's start; a test's client made before minutes of a loaded CI run) failed its first
/// call with "Connection terminated". A client whose connection was never used past its
/// set-up window connects again before asking; one already used keeps its connection.
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
}
