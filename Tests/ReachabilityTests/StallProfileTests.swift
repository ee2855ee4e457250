import Foundation
import Testing
@testable import Reachability

/// Issues 30 and 35 through reachd with its shipped defaults (Interval=20s, After=8s,
/// MinSockets=2, no probe), real TCP in three namespaces: traffic shapes the suite's own busy
/// clients do not make (applications that time out and reconnect, connection attempts alone),
/// and what one unprivileged user or a remote peer does, which must neither set nor hide the
/// host's Stalled. Bounds are generous (the benchmark, scripts/bench-stall, carries the figures).
/// In the timing pass.
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

    /// issue 35: user nobody's connects into a black hole, and its sockets bound to the link,
    /// never flag the host; a remote peer's connections to a local service that stop being
    /// acknowledged neither. Then the host's own traffic stalls while nobody downloads from the
    /// gateway's far address (which answers though nothing is forwarded): still flagged.
    /// One upload alone, nothing to compare it with: flagged once reachd's own question to the
    /// nameserver beyond the gateway goes unanswered too, and cleared when the path returns. The
    /// same upload toward a peer that alone went dark is never flagged: the nameserver answers.
    @Test func aLoneUploadIsFlaggedWhenTheNameserverIsSilentToo_notWhenOnlyItsPeerDied() async throws {
        let topology = try Topology("spup", shortRTO: false)
        try topology.server.ip("addr add 198.51.100.3/24 dev s0")
        let server = try Self.start(topology.server, Self.server, [Self.port])
        defer { server.kill() }
        let dns = try DNSMasqServer(in: topology.server, address: Topology.serverV4, records: [:])
        let resolvConf = try ConnectivityNameTests.ResolvConf(nameserver: Topology.serverV4)
        let harness = try DaemonHarness(topology.client, resolvConf: resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()

        // The peer alone goes dark (the gateway drops its address, silently); the path works.
        let toDeadPeer = try Self.start(topology.client, Self.client, ["upload", "198.51.100.3", Self.port])
        try await Task.sleep(for: .seconds(3))
        try topology.gateway.ip("route add blackhole 198.51.100.3/32")
        for _ in 0..<40 {
            #expect(!(try Self.stalled(harness)), "a lone upload to a dead peer flagged the host")
            try await Task.sleep(for: .seconds(1))
        }
        let figures = try StallDaemonTests.status(harness).stall
        #expect(figures?.socketsFailing == 1, "the upload was judged failing: \(String(describing: figures))")
        #expect(dns.queries(for: ".") > 0, "reachd asked the nameserver")
        toDeadPeer.kill()

        // The path dies under one upload to a live peer.
        let upload = try Self.start(topology.client, Self.client, ["upload", Topology.serverV4, Self.port])
        defer { upload.kill() }
        try await Task.sleep(for: .seconds(5))
        try topology.forwarding(false)
        let flagged = try await StallDaemonTests.until("a lone upload's stall", harness, timeout: .seconds(45)) { $0.stalled }
        try topology.forwarding(true)
        let cleared = try await StallDaemonTests.until("cleared", harness, timeout: .seconds(20)) { !$0.stalled }
        print("stall(upload): one upload flagged \(flagged) after the gateway stopped forwarding, cleared \(cleared) after it resumed")
    }

    @Test func oneUnprivilegedUserOrARemotePeerNeitherSetsNorHidesIt() async throws {
        let topology = try Topology("spnb", shortRTO: false)
        let server = try Self.start(topology.server, Self.server, [Self.port])
        defer { server.kill() }
        // The gateway answers on its far side too (198.51.100.1), forwarding or not.
        let gatewayServer = try Self.start(topology.gateway, Self.server, [Self.port])
        defer { gatewayServer.kill() }
        try topology.gateway.ip("route add blackhole 203.0.113.0/24")
        // A local service whose peer (in the server's namespace) stops acknowledging: its
        // answers to the peer are dropped on the way back.
        let local = try Self.start(topology.client, Self.server, ["9000"])
        defer { local.kill() }
        let harness = try DaemonHarness(topology.client)
        defer { harness.shutdown() }
        try await harness.ready()

        let nobodyAttempts = try Self.start(topology.client, #"""
            import socket, threading, time
            def one(i):
                while True:
                    try:
                        s = socket.socket()
                        if i == 0: s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"c0")
                        s.settimeout(20); s.connect(("203.0.113.%d" % (i + 1), 80)); s.close()
                    except OSError: time.sleep(0.5)
            for i in range(4): threading.Thread(target=one, args=(i,), daemon=True).start()
            print("started", flush=True)
            while True: time.sleep(3600)
            """#, [], user: "65534")
        defer { nobodyAttempts.kill() }
        let peer = try Self.start(topology.server, #"""
            import socket, threading, time
            conns = []
            for _ in range(5):
                c = socket.create_connection(("192.0.2.2", 9000)); conns.append(c)
            print("started", flush=True)
            while True:
                for c in conns:
                    try: c.sendall(b"p" * 1000)
                    except OSError: pass
                time.sleep(0.5)
            """#, [])
        defer { peer.kill() }
        try await Task.sleep(for: .seconds(1))
        // The peer goes silent: its ACKs toward the local service are dropped.
        try topology.server.exec("/usr/sbin/nft", ["add", "table", "inet", "mute"])
        try topology.server.exec("/usr/sbin/nft", ["add", "chain", "inet", "mute", "out", "{ type filter hook output priority 0 ; }"])
        try topology.server.exec("/usr/sbin/nft", ["add", "rule", "inet", "mute", "out", "tcp", "dport", "9000", "drop"])
        for _ in 0..<30 {
            #expect(!(try Self.stalled(harness)), "one user's black hole or a mute peer flagged the host")
            try await Task.sleep(for: .seconds(1))
        }
        let figures = try StallDaemonTests.status(harness).stall
        #expect((figures?.socketsFailing ?? 0) >= 4 && figures?.owners == 1, "nobody's attempts are judged, as one owner: \(String(describing: figures))")

        // The host's own traffic (root) dies with the path; nobody keeps receiving from the gateway.
        let download = try Self.start(topology.client, Self.client, ["download", "198.51.100.1", Self.port], user: "65534")
        defer { download.kill() }
        let rootTraffic = try Self.start(topology.client, Self.client, ["reconnect", Topology.serverV4, Self.port])
        defer { rootTraffic.kill() }
        try await Task.sleep(for: .seconds(3))
        try topology.forwarding(false)
        let flagged = try await StallDaemonTests.until("Stalled despite nobody's download", harness, timeout: .seconds(45)) { $0.stalled }
        print("stall(nobody): the host's stall flagged \(flagged) beside nobody's download")
    }
}

extension StallProfileTests {
    /// issue 51: www-data is one user like any other. Its two connections into a black hole (the
    /// gateway drops 203.0.113.0/24; the path works) retransmit for 60 s with the shipped
    /// defaults, judged as failing, and the host is never stalled: when every uid up to 999 was
    /// the host's, it was flagged in 14 s.
    @Test func aSystemAccountsConnectionsAloneNeverStallTheHost() async throws {
        let topology = try Topology("spwww", shortRTO: false)
        try topology.gateway.ip("route add blackhole 203.0.113.0/24")
        let harness = try DaemonHarness(topology.client)
        defer { harness.shutdown() }
        try await harness.ready()
        let attempts = try Self.start(topology.client, #"""
            import socket, threading, time
            def one(i):
                while True:
                    try:
                        s = socket.socket(); s.settimeout(60); s.connect(("203.0.113.%d" % (i + 1), 80)); s.close()
                    except OSError: time.sleep(0.5)
            for i in range(2): threading.Thread(target=one, args=(i,), daemon=True).start()
            print("started", flush=True)
            while True: time.sleep(3600)
            """#, [], user: "33")
        defer { attempts.kill() }
        for _ in 0..<60 {
            #expect(!(try Self.stalled(harness)), "www-data's black hole alone flagged the host")
            try await Task.sleep(for: .seconds(1))
        }
        let figures = try StallDaemonTests.status(harness).stall
        #expect((figures?.socketsFailing ?? 0) >= 2 && figures?.owners == 1, "www-data's attempts are judged, as one owner: \(String(describing: figures))")
    }
}
