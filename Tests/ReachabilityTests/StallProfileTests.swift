import Foundation
import Testing
@testable import Reachability

/// Issues 30 and 35 through reachd with its shipped defaults (Interval=20s, After=8s,
/// MinSockets=2, no probe), real TCP in three namespaces: traffic shapes the suite's own busy
/// clients do not make (applications that time out and reconnect, connection attempts alone, one
/// application retrying, short requests beside a stall); what one unprivileged user or a remote
/// peer does is `StallOwnerTests`'. Bounds are generous (the benchmark, scripts/bench-stall,
/// carries the figures). In the profiles pass.
@Suite(rootOnly, .serialized)
struct StallProfileTests {
    typealias Topology = StallKernelTests.Topology

    /// Client programs: `reconnect` (three connections with a 3 s timeout that reconnect after
    /// an error, and a new short connection every 0.5 s), `attempts` (a connect every second,
    /// closed at once, 5 s timeout), `upload` (one endless upload, no timeout), `download` (one
    /// endless download: a peer that keeps sending).
    static let client = #"""
        import socket, sys, threading, time
        profile, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
        def forever(body):
            def run():
                while True:
                    try: body()
                    except OSError: time.sleep(0.2)
            threading.Thread(target=run, daemon=True).start()
        def spawn_every(seconds, one):
            def run():
                while True:
                    threading.Thread(target=one, daemon=True).start()
                    time.sleep(seconds)
            threading.Thread(target=run, daemon=True).start()
        if profile == "reconnect":
            def long():
                c = socket.create_connection((host, port), timeout=3)
                try:
                    while True:
                        c.sendall(b"q" * 100); c.recv(100); time.sleep(0.5)
                finally:
                    c.close()
            for _ in range(3): forever(long)
            def short():
                try:
                    c = socket.create_connection((host, port), timeout=3); c.sendall(b"q"); c.recv(1); c.close()
                except OSError: pass
            spawn_every(0.5, short)
        elif profile == "attempts":
            def attempt():
                try: socket.create_connection((host, port), timeout=5).close()
                except OSError: pass
            spawn_every(1, attempt)
        elif profile == "upload":
            def upload():
                c = socket.create_connection((host, port))
                c.sendall(b"U")
                while True: c.sendall(b"u" * 16384)
            forever(upload)
        elif profile == "download":
            def download():
                c = socket.create_connection((host, port))
                c.sendall(b"D")
                while c.recv(65536): time.sleep(0.01)
            forever(download)
        print("started", flush=True)
        while True: time.sleep(3600)
        """#

    /// A server on every address of its namespace: echoes, sends without end to a client whose
    /// first byte is `D`, reads without end from one whose first byte is `U`.
    static let server = #"""
        import socket, sys, threading
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(256)
        print("listening", flush=True)
        def serve(c):
            try:
                first = c.recv(65536)
                if first == b"D":
                    while True: c.sendall(b"d" * 16384)
                if first[:1] == b"U":
                    while c.recv(65536): pass
                while first:
                    c.sendall(first); first = c.recv(65536)
            except OSError: pass
            finally: c.close()
        while True:
            c, _ = s.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()
        """#

    static let port = "8090"

    static func start(_ namespace: TestNamespace, _ script: String, _ arguments: [String], user: String? = nil) throws -> ChildProcess {
        var command = ["netns", "exec", namespace.name]
        if let user { command += ["/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--clear-groups"] }
        let child = try ChildProcess("/usr/sbin/ip", command + ["/usr/bin/python3", "-c", script] + arguments)
        _ = try child.firstLine(timeout: .seconds(20))
        return child
    }

    static func stalled(_ harness: DaemonHarness) throws -> Bool { try StallDaemonTests.status(harness).host.stalled }

    /// Applications that give up after 3 s and reconnect: each closed attempt is seen as it
    /// closes, so the stall shows within the window; new connections clear it as soon as the
    /// path returns.
    @Test func applicationsThatTimeOutAndReconnectAreFlaggedAndCleared() async throws {
        let topology = try Topology("spre", shortRTO: false)
        let server = try Self.start(topology.server, Self.server, [Self.port])
        defer { server.kill() }
        let harness = try DaemonHarness(topology.client)
        defer { harness.shutdown() }
        try await harness.ready()
        let traffic = try Self.start(topology.client, Self.client, ["reconnect", Topology.serverV4, Self.port])
        defer { traffic.kill() }
        try await Task.sleep(for: .seconds(5))
        #expect(!(try Self.stalled(harness)))

        try topology.forwarding(false)
        let flagged = try await StallDaemonTests.until("Stalled", harness, timeout: .seconds(45)) { $0.stalled }
        try topology.forwarding(true)
        let cleared = try await StallDaemonTests.until("Stalled cleared", harness, timeout: .seconds(20)) { !$0.stalled }
        #expect(cleared < .seconds(10), "cleared \(cleared) after the path returned")
        print("stall(reconnect): flagged \(flagged), cleared \(cleared)")
    }

    /// Nothing but connection attempts (a SYN retransmitted, never answered).
    @Test func connectionAttemptsAloneAreFlagged() async throws {
        let topology = try Topology("spat", shortRTO: false)
        let server = try Self.start(topology.server, Self.server, [Self.port])
        defer { server.kill() }
        let harness = try DaemonHarness(topology.client)
        defer { harness.shutdown() }
        try await harness.ready()
        let traffic = try Self.start(topology.client, Self.client, ["attempts", Topology.serverV4, Self.port])
        defer { traffic.kill() }
        try await Task.sleep(for: .seconds(3))
        try topology.forwarding(false)
        let flagged = try await StallDaemonTests.until("Stalled", harness, timeout: .seconds(45)) { $0.stalled }
        let evidence = try #require(try StallDaemonTests.status(harness).stall)
        #expect(evidence.socketsFailing >= 2 && evidence.sinceReceive != nil, "\(evidence)")
        print("stall(attempts): flagged \(flagged): \(evidence)")
    }
}
