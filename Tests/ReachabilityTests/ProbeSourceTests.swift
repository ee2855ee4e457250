import Foundation
import Testing
@testable import Reachability

/// An uplink's own probe leaves from the very address reachd's record of the uplink holds, on
/// that link: the default route's preferred source when the link holds it, else the link's own
/// first address. libcurl's "if!NAME" binds the device only, and the kernel then takes the
/// route's preferred source wherever it lives: a route through one link naming another link's
/// address (a leftover, a script's mistake) sent the probe out with an address that network
/// never gave the host, which it drops or answers elsewhere.
@Suite(rootOnly)
struct ProbeSourceTests {
    /// An HTTP server that answers 204 and prints each request's peer address ("PEER ADDRESS"),
    /// a whole line at a time: the two probes arrive together, on two of its threads, and print's
    /// pieces from both once ran together on one line.
    static let server = """
        import http.server, sys, threading
        lock = threading.Lock()
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with lock:
                    sys.stdout.write("PEER %s\\n" % self.client_address[0])
                    sys.stdout.flush()
                self.send_response(204)
                self.end_headers()
            def log_message(self, *args): pass
        server = http.server.ThreadingHTTPServer(("203.0.113.80", 8204), Handler)
        print("ready", flush=True)
        server.serve_forever()
        """

    @Test func theUplinksProbeLeavesFromTheAddressItsRecordHolds() async throws {
        // up0 carries the host's path from 192.0.2.5; up1 (the second uplink, probed through
        // itself) holds 198.51.100.2, and its default route names up0's 192.0.2.2 as its source.
        let scenario = try DaemonBusTests.Scenario()
        try scenario.far.ip("addr add 203.0.113.80/32 dev lo")
        try scenario.ns.ip("addr add 192.0.2.5/24 dev up0")
        try scenario.ns.ip("route replace default via 192.0.2.1 dev up0 metric 100 src 192.0.2.5")
        try scenario.addUplink("up1", "198.51.100", metric: 200)
        try scenario.ns.ip("route replace default via 198.51.100.1 dev up1 metric 200 src 192.0.2.2")
        let server = try ChildProcess("/usr/bin/ip", ["netns", "exec", scenario.far.name, "/usr/bin/python3", "-c", Self.server])
        #expect(try server.firstLine(timeout: .seconds(10)) == "ready")
        let harness = try DaemonHarness(scenario.ns, config: """
            [Connectivity]
            URL=http://203.0.113.80:8204/generate_204
            Interval=1m
            [Interface]
            Name=up*
            Kind=wired
            """)
        defer { harness.shutdown() }
        try await harness.ready()
        try await eventually("both validated; \(server.lines); \(harness.diagnostics)", timeout: .seconds(5), every: .milliseconds(50)) {
            let status = try reachctl(["status", "--json", "--daemon", "--bus-address", harness.address]).json()
            return status["validatedInterfaces"] as? [String] == ["up0", "up1"]
        }
        #expect(harness.daemonErrorLines.contains { $0.contains("connectivity via up1: full") }, "\(harness.daemonErrorLines)")
        // The host's probe from 192.0.2.5; up1's own from its own 198.51.100.2, never up0's 192.0.2.2.
        var peers: [String] { server.lines.filter { $0.hasPrefix("PEER ") } }
        try await eventually("up1's probe seen by the server: \(peers)", timeout: .seconds(2), every: .milliseconds(50)) {
            peers.contains("PEER 198.51.100.2")
        }
        #expect(peers.contains("PEER 192.0.2.5") && !peers.contains("PEER 192.0.2.2"), "\(peers)")
    }
}
