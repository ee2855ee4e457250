import Foundation
import Testing
@testable import Reachability

extension StallProfileTests {
    /// One application that retries every 2 s: a connection with a 2 s timeout, then the next.
    static let retryEveryTwoSeconds = #"""
        import socket, sys, time
        print("started", flush=True)
        while True:
            began = time.monotonic()
            try:
                c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
                c.sendall(b"q"); c.recv(1); c.close()
            except OSError: pass
            time.sleep(max(0, 2 - (time.monotonic() - began)))
        """#

    /// issue 48: an application retrying every 2 s through a dead upstream, shipped defaults.
    /// Once flagged, Stalled holds for 60 s without a gap while every attempt still fails (it
    /// used to clear for 1-2 s in 8 of 23 runs: the failures of the moment dipped below
    /// MinSockets between two attempts), and clears within 10 s of the path's return.
    @Test func aRetryingApplicationsStallHoldsWithoutAGapAndClearsWhenThePathReturns() async throws {
        let topology = try Topology("spretry", shortRTO: false)
        let server = try Self.start(topology.server, Self.server, [Self.port])
        defer { server.kill() }
        let harness = try DaemonHarness(topology.client)
        defer { harness.shutdown() }
        try await harness.ready()
        let traffic = try Self.start(topology.client, Self.retryEveryTwoSeconds, [Topology.serverV4, Self.port])
        defer { traffic.kill() }
        try await Task.sleep(for: .seconds(3))
        #expect(!(try Self.stalled(harness)))
        try topology.forwarding(false)
        let flagged = try await StallDaemonTests.until("Stalled", harness, timeout: .seconds(45)) { $0.stalled }
        var gaps: [Duration] = []
        let began = ContinuousClock.now
        while ContinuousClock.now - began < .seconds(60) {
            if !(try Self.stalled(harness)) { gaps.append(ContinuousClock.now - began) }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(gaps.isEmpty, "Stalled cleared while every attempt failed, at \(gaps)")
        try topology.forwarding(true)
        let cleared = try await StallDaemonTests.until("Stalled cleared", harness, timeout: .seconds(30)) { !$0.stalled }
        #expect(cleared < .seconds(10), "cleared \(cleared) after the path returned")
        print("stall(retry every 2 s): flagged \(flagged), held 60 s with \(gaps.count) gap sample(s), cleared \(cleared)")
    }
}
