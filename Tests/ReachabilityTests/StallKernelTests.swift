import Foundation
import Testing
@testable import Reachability

/// The sock_diag dumper and the stall evaluator against the real kernel, with real TCP traffic:
/// client -> gateway -> server, three namespaces, a Python echo server and clients that keep
/// their connections busy. The gateway then stops forwarding (silently, as a dead uplink does)
/// and starts again. The dumper is polled directly every 200 ms instead of every 20 s, and the
/// client's routes carry `rto_min 10ms` so TCP retransmits (and backs off) in milliseconds.
@Suite(rootOnly)
struct StallKernelTests {
    static let port = 8080

    /// Client (c0) -> gateway (g0, g1) -> server (s0), IPv4 and IPv6.
    final class Topology: Sendable {
        let client: TestNamespace
        let gateway: TestNamespace
        let server: TestNamespace
        let clientLink: Int32
        let addresses: [Address]
        static let clientV4 = "192.0.2.2"
        static let clientV6 = "2001:db8:1::2"
        static let serverV4 = "198.51.100.2"
        static let serverV6 = "2001:db8:2::2"

        init(_ tag: String = #function, shortRTO: Bool = true) throws {
            client = try TestNamespace(tag + "c")
            gateway = try TestNamespace(tag + "g")
            server = try TestNamespace(tag + "s")
            try client.ip("link add c0 type veth peer name g0 netns \(gateway.name)")
            try gateway.ip("link add g1 type veth peer name s0 netns \(server.name)")
            try client.ip("addr add 192.0.2.2/24 dev c0")
            try client.ip("-6 addr add 2001:db8:1::2/64 dev c0 nodad")
            try gateway.ip("addr add 192.0.2.1/24 dev g0")
            try gateway.ip("-6 addr add 2001:db8:1::1/64 dev g0 nodad")
            try gateway.ip("addr add 198.51.100.1/24 dev g1")
            try gateway.ip("-6 addr add 2001:db8:2::1/64 dev g1 nodad")
            try server.ip("addr add 198.51.100.2/24 dev s0")
            try server.ip("-6 addr add 2001:db8:2::2/64 dev s0 nodad")
            for (ns, link) in [(client, "c0"), (gateway, "g0"), (gateway, "g1"), (server, "s0")] {
                try ns.ip("link set \(link) up")
            }
            // rto_min: retransmission timeouts from 10 ms, so a black hole shows in seconds.
            let rto = shortRTO ? " rto_min 10ms" : ""
            try client.ip("route add default via 192.0.2.1 dev c0" + rto)
            try client.ip("-6 route add default via 2001:db8:1::1 dev c0" + rto)
            try server.ip("route add default via 198.51.100.1 dev s0")
            try server.ip("-6 route add default via 2001:db8:2::1 dev s0")
            try Self.forwarding(gateway, on: true)
            // (ip may also print "Peer netns reference is invalid" for the veth's peer: skip it.)
            let output = try client.ip("-o link show c0")
            let line = output.split(separator: "\n").first { $0.contains(": c0@") } ?? ""
            guard let index = Int32(line.prefix { $0 != ":" }) else { throw CommandFailed(command: "ip link show c0", status: 0, output: output) }
            clientLink = index
            addresses = [
                Address(interfaceIndex: 1, prefix: IPPrefix(IPAddress("127.0.0.1")!, length: 8)),
                Address(interfaceIndex: index, prefix: IPPrefix(IPAddress(Self.clientV4)!, length: 24)),
                Address(interfaceIndex: index, prefix: IPPrefix(IPAddress(Self.clientV6)!, length: 64)),
            ]
        }

        /// The gateway's forwarding: off is a silent black hole (no ICMP), in both families.
        static func forwarding(_ gateway: TestNamespace, on: Bool) throws {
            try gateway.exec("/usr/sbin/sysctl", ["-q", "-w", "net.ipv4.ip_forward=\(on ? 1 : 0)"])
            try gateway.exec("/usr/sbin/sysctl", ["-q", "-w", "net.ipv6.conf.all.forwarding=\(on ? 1 : 0)"])
        }

        func forwarding(_ on: Bool) throws { try Self.forwarding(gateway, on: on) }

        func startServer() throws -> ChildProcess {
            let child = try ChildProcess("/usr/sbin/ip", ["netns", "exec", server.name, "/usr/bin/python3", "-c", StallKernelTests.traffic, "server", "\(StallKernelTests.port)"])
            _ = try child.firstLine(timeout: .seconds(20))
            return child
        }

        /// `count` connections to `host`, each sending 200 bytes every 50 ms and reading the echo
        /// (`busy`), connecting and then sending nothing (`idle`), or reading a download that
        /// never ends as fast as it comes (`download`).
        func startClients(to host: String, count: Int, mode: String = "busy") throws -> ChildProcess {
            let child = try ChildProcess("/usr/sbin/ip", ["netns", "exec", client.name, "/usr/bin/python3", "-c", StallKernelTests.traffic, mode, host, "\(StallKernelTests.port)", "\(count)"])
            _ = try child.firstLine(timeout: .seconds(20))
            return child
        }
    }

    static let traffic = #"""
        import socket, sys, threading, time
        mode = sys.argv[1]
        if mode == "server":
            s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            s.bind(("::", int(sys.argv[2])))
            s.listen(128)
            print("listening", flush=True)
            def echo(c):
                try:
                    d = c.recv(65536)
                    if d == b"D":
                        # A download's source: data until the client goes.
                        while True:
                            c.sendall(b"d" * 65536)
                    while d:
                        c.sendall(d)
                        d = c.recv(65536)
                except OSError:
                    pass
            while True:
                c, _ = s.accept()
                threading.Thread(target=echo, args=(c,), daemon=True).start()
        else:
            host, port, count = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
            def pump():
                while True:
                    try:
                        c = socket.create_connection((host, port), timeout=60)
                        if mode == "download":
                            c.sendall(b"D")
                            while c.recv(1 << 20):
                                pass
                            break
                        c.settimeout(0.05)
                        while True:
                            if mode == "idle":
                                time.sleep(3600)
                            try:
                                c.sendall(b"x" * 200)
                            except socket.timeout:
                                pass
                            try:
                                if c.recv(65536) == b"":
                                    break
                            except socket.timeout:
                                pass
                            time.sleep(0.05)
                    except OSError:
                        time.sleep(0.1)
            for _ in range(count):
                threading.Thread(target=pump, daemon=True).start()
            print("started", flush=True)
            while True:
                time.sleep(3600)
        """#

    /// Polls the client namespace's sockets and judges them, as the daemon would every 20 s.
    struct Watch: ~Copyable {
        var dumper: TCPSocketDumper
        var evaluator = StallEvaluator()
        let addresses: [Address]
        let started = ContinuousClock.now
        var reports: [StallReport] = []

        init(_ topology: Topology) throws {
            dumper = try TCPSocketDumper(namespacePath: topology.client.path)
            addresses = topology.addresses
        }

        mutating func poll() throws -> (samples: [TCPSocketSample], report: StallReport) {
            let samples = try dumper.dump(timeout: .seconds(5))
            let report = evaluator.poll(at: ContinuousClock.now - started, samples: samples, addresses: addresses)
            reports.append(report)
            return (samples, report)
        }

        /// Polls every 200 ms until `condition` holds; the report that met it and when.
        mutating func until(
            _ what: String, timeout: Duration, _ condition: (StallReport) -> Bool
        ) async throws -> (report: StallReport, after: Duration) {
            let begin = ContinuousClock.now
            while true {
                let (_, report) = try poll()
                if condition(report) { return (report, ContinuousClock.now - begin) }
                if ProcessInfo.processInfo.environment["STALL_TRACE"] != nil { print("trace: \(report.links.map { "\($0.verdict) \($0.evidence)" })") }
                guard ContinuousClock.now - begin < timeout else {
                    throw TimedOut(what: "\(what); last report \(report)")
                }
                try await Task.sleep(for: .milliseconds(200))
            }
        }

        /// Polls every `interval` for `duration`, requiring `condition` of every report.
        mutating func during(
            _ duration: Duration, every interval: Duration = .milliseconds(200), _ what: String, _ condition: (StallReport) -> Bool
        ) async throws {
            let begin = ContinuousClock.now
            while ContinuousClock.now - begin < duration {
                let (_, report) = try poll()
                #expect(condition(report), "\(what): \(report)")
                try await Task.sleep(for: interval)
            }
        }
    }

    @Test func dumperSeesTheClientsSocketsWithSourceAddressesAndCounters() async throws {
        let topology = try Topology()
        let server = try topology.startServer()
        defer { server.kill() }
        let v4 = try topology.startClients(to: Topology.serverV4, count: 3)
        defer { v4.kill() }
        let v6 = try topology.startClients(to: Topology.serverV6, count: 2)
        defer { v6.kill() }
        var dumper = try TCPSocketDumper(namespacePath: topology.client.path)

        var first: [TCPSocketSample] = []
        try await eventually("5 established connections with traffic", every: .milliseconds(50)) {
            first = try dumper.dump().filter { $0.destinationPort == UInt16(Self.port) && $0.state == .established }
            return first.count == 5 && first.allSatisfy { ($0.counters?.segmentsIn ?? 0) > 2 }
        }
        #expect(first.filter { $0.source == IPAddress(Topology.clientV4) && $0.destination == IPAddress(Topology.serverV4) }.count == 3)
        #expect(first.filter { $0.source == IPAddress(Topology.clientV6) && $0.destination == IPAddress(Topology.serverV6) }.count == 2)
        // (Retransmissions are not pinned to 0: with rto_min 10ms, a busy machine makes spurious ones.)
        #expect(first.allSatisfy { $0.boundInterface == 0 && $0.counters!.segmentsOut > 2 })
        #expect(Set(first.map(\.cookie)).count == 5)

        // The same sockets (by cookie) a second later, their counters grown.
        try await Task.sleep(for: .seconds(1))
        let second = try dumper.dump().filter { $0.destinationPort == UInt16(Self.port) }
        for sample in first {
            let later = second.first { $0.cookie == sample.cookie }
            #expect(later?.sourcePort == sample.sourcePort)
            #expect((later?.counters?.segmentsOut ?? 0) > sample.counters!.segmentsOut + 5)
            #expect((later?.counters?.segmentsIn ?? 0) > sample.counters!.segmentsIn + 5)
        }

        // One dump of both families (TCPDIAG_GETSOCK) sees the same sockets.
        var single = try TCPSocketDumper(namespacePath: topology.client.path, request: .bothFamilies)
        let both = try single.dump().filter { $0.destinationPort == UInt16(Self.port) }
        #expect(Set(both.map(\.cookie)) == Set(second.map(\.cookie)))
        #expect(Set(both.map(\.source)) == [IPAddress(Topology.clientV4)!, IPAddress(Topology.clientV6)!])

        // What ss(8), an independent client of the same interface, lists.
        let listed = try topology.client.exec("/usr/bin/ss", ["-Htn", "state", "established", "dport", "= :\(Self.port)"])
        let ports = Set(listed.split(separator: "\n").compactMap { line -> UInt16? in
            let local = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(2).first ?? ""
            return UInt16(local.split(separator: ":").last ?? "")
        })
        #expect(ports == Set(second.map(\.sourcePort)))

        // A poll is non-blocking: nothing is readable before a request, and readable() says so.
        let nothing = try dumper.readable()
        let dumping = dumper.isDumping
        #expect(nothing == nil)
        #expect(!dumping)
    }

    /// `ipv4-default-rto`: the kernel's own retransmission timers (200 ms minimum, doubling),
    /// to show the rule does not depend on the short ones.
    @Test(arguments: ["ipv4", "ipv6", "ipv4-default-rto"])
    func blackHoledGatewayFlagsTheLinkAndRecoveryClearsIt(family: String) async throws {
        let topology = try Topology("bh" + family.prefix(5) + (family.count > 4 ? "d" : ""), shortRTO: !family.hasSuffix("default-rto"))
        let server = try topology.startServer()
        defer { server.kill() }
        let clients = try topology.startClients(to: family.hasPrefix("ipv4") ? Topology.serverV4 : Topology.serverV6, count: 4)
        defer { clients.kill() }
        var watch = try Watch(topology)
        let link = topology.clientLink
        // Every client connected (a poll judges the first socket as soon as it exists).
        _ = try await watch.until("4 sockets flowing", timeout: .seconds(20)) {
            $0.link(link).verdict == .flowing && $0.link(link).evidence.socketsJudged == 4
        }

        // Healthy traffic never flags.
        try await watch.during(.seconds(3), "healthy traffic") { !$0.link(link).isStalled && $0.link(link).evidence.socketsJudged == 4 }

        try topology.forwarding(false)
        let (stalled, after) = try await watch.until("the link flagged", timeout: .seconds(60)) { $0.link(link).isStalled }
        let evidence = stalled.link(link).evidence
        #expect(stalled.link(link).causes == .tcpRetransmissions)
        #expect(evidence.socketsFailing >= 2 && evidence.owners == 1, "\(evidence)")
        #expect(evidence.waiting >= StallSettings().window, "\(evidence)")
        #expect(after < .seconds(60))
        print("stall(\(family)): flagged \(after) after the gateway stopped forwarding: \(evidence)")

        try topology.forwarding(true)
        let (cleared, recovery) = try await watch.until("the stall cleared", timeout: .seconds(40)) { !$0.link(link).isStalled }
        #expect(cleared.link(link).verdict == .flowing)
        print("stall(\(family)): cleared \(recovery) after forwarding resumed")
    }

    /// Two downloads whose ACKs die on their way out (the gateway drops what the client sends,
    /// and only that, with the kernel's own timers): the client has nothing in flight and never
    /// backs off; the server sends again what it already received. Read from the kernel, each
    /// socket's data segments grow while its bytes received and its time of last data stand.
    @Test func downloadsWhoseAcksDieAreFlaggedFromTheirLastData() async throws {
        let topology = try Topology("dlack", shortRTO: false)
        let server = try topology.startServer()
        defer { server.kill() }
        let clients = try topology.startClients(to: Topology.serverV4, count: 2, mode: "download")
        defer { clients.kill() }
        var watch = try Watch(topology)
        let link = topology.clientLink
        _ = try await watch.until("2 downloads flowing", timeout: .seconds(20)) {
            $0.link(link).verdict == .flowing && $0.link(link).evidence.socketsJudged == 2
        }
        try await watch.during(.seconds(2), "healthy downloads") { $0.link(link).evidence.socketsFailing == 0 }
        let before = try watch.dumper.dump().filter { $0.destinationPort == UInt16(Self.port) }
        for rule in ["add table inet ack", "add chain inet ack forward { type filter hook forward priority 0 ; }", "add rule inet ack forward iifname g0 drop"] {
            try topology.gateway.exec("/usr/sbin/nft", rule.split(separator: " ").map(String.init))
        }
        let (stalled, after) = try await watch.until("the link flagged", timeout: .seconds(30)) { $0.link(link).isStalled }
        let evidence = stalled.link(link).evidence
        #expect(evidence.socketsFailing == 2 && evidence.waiting >= StallSettings().window, "\(evidence)")
        #expect(after < .seconds(12), "flagged \(after) after the rule")
        print("stall(download, dead ACKs): flagged \(after) after the rule: \(evidence)")
        for sample in try watch.dumper.dump() where sample.destinationPort == UInt16(Self.port) {
            guard let earlier = before.first(where: { $0.cookie == sample.cookie })?.counters, let counters = sample.counters else { continue }
            #expect(counters.dataSegmentsIn > earlier.dataSegmentsIn && counters.millisecondsSinceDataReceived >= 8_000 && sample.unread == 0,
                "\(counters)")
        }
    }

    @Test func oneBlackHoledPeerBesideHealthyTrafficNeverFlags() async throws {
        let topology = try Topology()
        try topology.server.ip("addr add 198.51.100.3/24 dev s0")
        let server = try topology.startServer()
        defer { server.kill() }
        let healthy = try topology.startClients(to: Topology.serverV4, count: 2)
        defer { healthy.kill() }
        let doomed = try topology.startClients(to: "198.51.100.3", count: 3)
        defer { doomed.kill() }
        var watch = try Watch(topology)
        let link = topology.clientLink
        _ = try await watch.until("5 sockets flowing", timeout: .seconds(20)) {
            $0.link(link).verdict == .flowing && $0.link(link).evidence.socketsJudged == 5
        }
        // The gateway drops everything toward one peer, silently; the other keeps answering.
        try topology.gateway.ip("route add blackhole 198.51.100.3/32")
        var retransmitting: UInt32 = 0
        try await watch.during(.seconds(4), "one dead peer beside a live one") { !$0.link(link).isStalled }
        for sample in try watch.dumper.dump() where sample.destination == IPAddress("198.51.100.3") {
            retransmitting += UInt32(sample.counters?.consecutiveTimeouts ?? 0)
        }
        #expect(retransmitting > 0, "the black-holed peer's sockets are in retransmission timeouts")
    }

    /// 40% of forwarded packets dropped at random, both ways (nftables on the gateway): TCP
    /// retransmits a lot, but something always arrives. Polled every second rather than every
    /// 200 ms: a window that short can fall inside one retransmission timeout of every socket,
    /// which the daemon's 20 s polls never do.
    @Test func heavyRandomLossThatStillDeliversNeverFlags() async throws {
        let topology = try Topology()
        let server = try topology.startServer()
        defer { server.kill() }
        let clients = try topology.startClients(to: Topology.serverV4, count: 8)
        defer { clients.kill() }
        var watch = try Watch(topology)
        let link = topology.clientLink
        _ = try await watch.until("8 sockets flowing", timeout: .seconds(20)) {
            $0.link(link).verdict == .flowing && $0.link(link).evidence.socketsJudged == 8
        }
        for rule in [
            "add table inet loss", "add chain inet loss forward { type filter hook forward priority 0 ; }",
            "add rule inet loss forward numgen random mod 10 < 4 drop",
        ] {
            try topology.gateway.exec("/usr/sbin/nft", rule.split(separator: " ").map(String.init))
        }
        try await watch.during(.seconds(20), every: .seconds(1), "40% random loss") { !$0.link(link).isStalled }
        let retransmitted = try watch.dumper.dump().reduce(UInt64(0)) { $0 + UInt64($1.counters?.totalRetransmits ?? 0) }
        #expect(retransmitted > 0, "the loss made TCP retransmit")
    }

    @Test func idleConnectionsAndNoTrafficNeverFlag() async throws {
        let topology = try Topology()
        let server = try topology.startServer()
        defer { server.kill() }
        var watch = try Watch(topology)
        let link = topology.clientLink
        // No TCP at all: no evidence, and no next poll (the watch waits for a trigger).
        try await watch.during(.seconds(1), "no sockets") { $0.links.isEmpty }
        #expect(watch.reports.last!.nextPoll == nil)

        // Connections that send nothing, across a gateway that then stops forwarding: no
        // segment leaves, so there is nothing to judge.
        let clients = try topology.startClients(to: Topology.serverV4, count: 3, mode: "idle")
        defer { clients.kill() }
        _ = try await watch.until("3 idle sockets", timeout: .seconds(20)) { $0.link(link).evidence.socketsJudged == 3 }
        try topology.forwarding(false)
        try await watch.during(.seconds(10), every: .seconds(1), "idle connections over a dead gateway") {
            $0.link(link).evidence.socketsFailing == 0 && !$0.link(link).isStalled
        }
    }
}
