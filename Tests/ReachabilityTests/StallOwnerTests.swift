import Foundation
import Testing
@testable import Reachability

/// Who may set or hide the host's Stalled, through reachd with its shipped defaults and real TCP
/// in three namespaces (`StallProfileTests`' programs): a lone upload, one unprivileged user, a
/// remote peer, a system account. A suite of its own, serialized as `StallProfileTests` is, so the
/// two run side by side in the profiles pass (together they took 337 s one after the other).
@Suite(rootOnly, .serialized)
struct StallOwnerTests {
    typealias Topology = StallKernelTests.Topology
    typealias Profiles = StallProfileTests

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
        let server = try Profiles.start(topology.server, Profiles.server, [Profiles.port])
        defer { server.kill() }
        let dns = try DNSMasqServer(in: topology.server, address: Topology.serverV4, records: [:])
        let resolvConf = try ConnectivityNameTests.ResolvConf(nameserver: Topology.serverV4)
        let harness = try DaemonHarness(topology.client, resolvConf: resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()

        // The peer alone goes dark (the gateway drops its address, silently); the path works.
        let toDeadPeer = try Profiles.start(topology.client, Profiles.client, ["upload", "198.51.100.3", Profiles.port])
        try await Task.sleep(for: .seconds(3))
        try topology.gateway.ip("route add blackhole 198.51.100.3/32")
        for _ in 0..<40 {
            #expect(!(try Profiles.stalled(harness)), "a lone upload to a dead peer flagged the host")
            try await Task.sleep(for: .seconds(1))
        }
        let figures = try StallDaemonTests.status(harness).stall
        #expect(figures?.socketsFailing == 1, "the upload was judged failing: \(String(describing: figures))")
        #expect(dns.queries(for: ".") > 0, "reachd asked the nameserver")
        toDeadPeer.kill()

        // The path dies under one upload to a live peer.
        let upload = try Profiles.start(topology.client, Profiles.client, ["upload", Topology.serverV4, Profiles.port])
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
        let server = try Profiles.start(topology.server, Profiles.server, [Profiles.port])
        defer { server.kill() }
        // The gateway answers on its far side too (198.51.100.1), forwarding or not.
        let gatewayServer = try Profiles.start(topology.gateway, Profiles.server, [Profiles.port])
        defer { gatewayServer.kill() }
        try topology.gateway.ip("route add blackhole 203.0.113.0/24")
        // A local service whose peer (in the server's namespace) stops acknowledging: its
        // answers to the peer are dropped on the way back.
        let local = try Profiles.start(topology.client, Profiles.server, ["9000"])
        defer { local.kill() }
        let harness = try DaemonHarness(topology.client)
        defer { harness.shutdown() }
        try await harness.ready()

        let nobodyAttempts = try Profiles.start(topology.client, #"""
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
        let peer = try Profiles.start(topology.server, #"""
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
            #expect(!(try Profiles.stalled(harness)), "one user's black hole or a mute peer flagged the host")
            try await Task.sleep(for: .seconds(1))
        }
        let figures = try StallDaemonTests.status(harness).stall
        #expect((figures?.socketsFailing ?? 0) >= 4 && figures?.owners == 1, "nobody's attempts are judged, as one owner: \(String(describing: figures))")

        // The host's own traffic (root) dies with the path; nobody keeps receiving from the gateway.
        let download = try Profiles.start(topology.client, Profiles.client, ["download", "198.51.100.1", Profiles.port], user: "65534")
        defer { download.kill() }
        let rootTraffic = try Profiles.start(topology.client, Profiles.client, ["reconnect", Topology.serverV4, Profiles.port])
        defer { rootTraffic.kill() }
        try await Task.sleep(for: .seconds(3))
        try topology.forwarding(false)
        let flagged = try await StallDaemonTests.until("Stalled despite nobody's download", harness, timeout: .seconds(45)) { $0.stalled }
        print("stall(nobody): the host's stall flagged \(flagged) beside nobody's download")
    }

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
        let attempts = try Profiles.start(topology.client, #"""
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
            #expect(!(try Profiles.stalled(harness)), "www-data's black hole alone flagged the host")
            try await Task.sleep(for: .seconds(1))
        }
        let figures = try StallDaemonTests.status(harness).stall
        #expect((figures?.socketsFailing ?? 0) >= 2 && figures?.owners == 1, "www-data's attempts are judged, as one owner: \(String(describing: figures))")
    }
}
