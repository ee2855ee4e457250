import Foundation
import Testing
@testable import Reachability

extension StallProfileTests {
    /// An HTTP server answering every GET with two bytes.
    static let httpServer = #"""
        import http.server, sys
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"
            def do_GET(self):
                self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
            def log_message(self, *args): pass
        server = http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), Handler)
        print("listening", flush=True)
        server.serve_forever()
        """#

    /// One short GET a second; a line per answer.
    static let getEverySecond = #"""
        import sys, time, urllib.request
        print("started", flush=True)
        while True:
            try:
                with urllib.request.urlopen(sys.argv[1], timeout=5) as r: r.read()
                print("ok", flush=True)
            except OSError as e:
                print("failed", e, flush=True)
            time.sleep(1)
        """#

    /// issue 51: root's 20 connections into a dead upstream (the gateway black-holes the server;
    /// its own far side still answers) make a real stall; nobody's short GETs once a second to
    /// the gateway's answering server, beyond the client's link, must not clear it. Each GET
    /// lives milliseconds: its receipt arrives as it closes, and a closing socket names no
    /// owner. When such receipts counted as the host's, the stall cleared within 2 s. Shipped
    /// defaults.
    @Test func oneUsersShortRequestsToAnAnsweringServerDoNotClearARealStall() async throws {
        let topology = try Topology("spget", shortRTO: false)
        let server = try topology.startServer()
        defer { server.kill() }
        let web = try Self.start(topology.gateway, Self.httpServer, ["8091"])
        defer { web.kill() }
        let harness = try DaemonHarness(topology.client)
        defer { harness.shutdown() }
        try await harness.ready()
        let rootTraffic = try topology.startClients(to: Topology.serverV4, count: 20)
        defer { rootTraffic.kill() }
        try await Task.sleep(for: .seconds(3))
        try topology.gateway.ip("route add blackhole \(Topology.serverV4)/32")
        let flagged = try await StallDaemonTests.until("root's stall", harness, timeout: .seconds(45)) { $0.stalled }

        let gets = try Self.start(topology.client, Self.getEverySecond, ["http://198.51.100.1:8091/"], user: "65534")
        defer { gets.kill() }
        for second in 0..<40 {
            #expect(try Self.stalled(harness), "nobody's GETs cleared root's stall after \(second) s")
            try await Task.sleep(for: .seconds(1))
        }
        let answered = gets.lines.filter { $0 == "ok" }.count
        #expect(answered >= 30, "nobody's GETs were answered: \(gets.lines.suffix(5))")
        let figures = try StallDaemonTests.status(harness).stall
        #expect((figures?.socketsFailing ?? 0) >= 20, "root's sockets are the evidence: \(String(describing: figures))")
        print("stall(gets): flagged \(flagged) after the black hole; \(answered) GETs answered, still stalled")

        // The upstream returns: root's own connections (and reachd's rechecks) clear it.
        try topology.gateway.ip("route del blackhole \(Topology.serverV4)/32")
        let cleared = try await StallDaemonTests.until("cleared", harness, timeout: .seconds(60)) { !$0.stalled }
        print("stall(gets): cleared \(cleared) after the upstream returned")
    }
}
