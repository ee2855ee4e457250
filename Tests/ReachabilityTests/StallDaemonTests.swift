import Foundation
import Testing
@testable import Reachability

/// issue 22 end to end, through reachd itself with its default settings (20 s polls, the kernel's
/// own retransmission timers): client -> gateway -> server in three namespaces with real TCP
/// traffic, reachd watching the client's. The gateway stops forwarding, silently, as a dead
/// uplink does; a D-Bus subscriber (busctl, not our client) counts the Changed signals. Long
/// (about 90 s): in the timing pass.
@Suite(rootOnly, .serialized)
struct StallDaemonTests {
    typealias Topology = StallKernelTests.Topology

    /// What a busy client does besides its long connections: a new connection every second
    /// (1 s to connect), each kept for 10 s of traffic, so traffic resumes as soon as a path does,
    /// without waiting for the long connections' backed-off retransmissions.
    static let churn = #"""
        import socket, sys, time
        host, port = sys.argv[1], int(sys.argv[2])
        print("started", flush=True)
        while True:
            try:
                c = socket.create_connection((host, port), timeout=1)
                c.settimeout(0.05)
                end = time.time() + 10
                while time.time() < end:
                    c.sendall(b"y" * 100)
                    try:
                        c.recv(65536)
                    except socket.timeout:
                        pass
                    time.sleep(0.05)
                c.close()
            except OSError:
                pass
        """#

    static func count(_ member: String, _ signals: [DaemonHarness.Signal]) -> Int {
        signals.filter { $0.path == DaemonHarness.objectPath && $0.member == member }.count
    }

    static func status(_ harness: DaemonHarness) throws -> (host: HostStatus, stall: StallEvidence?) {
        let client = try ReachabilityClient(bus: .address(harness.address))
        let full = try client.fullStatus()
        return (full.host, full.stall)
    }

    /// Polls GetStatus every half second until `condition` holds; how long it took. `timeline`
    /// hears of each read whose stall evidence differs from the one before, with its time (a
    /// late verdict's failure message shows the polls that led to it).
    static func until(
        _ what: String, _ harness: DaemonHarness, timeout: Duration, timeline: ((String) -> Void)? = nil,
        _ condition: (HostStatus) -> Bool
    ) async throws -> Duration {
        let begin = ContinuousClock.now
        var told: StallEvidence??
        while true {
            let (host, stall) = try status(harness)
            if let timeline, told.map({ $0 != stall }) ?? true {
                timeline("+\(ContinuousClock.now - begin): stalled \(host.stalled), \(String(describing: stall))")
                told = .some(stall)
            }
            if condition(host) { return ContinuousClock.now - begin }
            guard ContinuousClock.now - begin < timeout else {
                throw TimedOut(what: "\(what) within \(timeout): \(host), evidence \(String(describing: stall)); \(harness.diagnostics)")
            }
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    @Test func aGatewayThatStopsForwardingIsOneChangedAndRecoveryClearsIt() async throws {
        let topology = try Topology("sdgw", shortRTO: false)
        let server = try topology.startServer()
        defer { server.kill() }
        let clients = try topology.startClients(to: Topology.serverV4, count: 16)
        defer { clients.kill() }
        let churn = try ChildProcess(
            "/usr/sbin/ip", ["netns", "exec", topology.client.name, "/usr/bin/python3", "-c", Self.churn, Topology.serverV4, "\(StallKernelTests.port)"])
        defer { churn.kill() }
        _ = try churn.firstLine(timeout: .seconds(20))

        let harness = try DaemonHarness(topology.client)
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()
        defer { monitor.stop() }

        // Healthy traffic, judged at least once (the first poll at start is the baseline; the
        // next comes 20 s later): not stalled, with the figures in GetStatus.
        try await eventually("a judged poll of the client's traffic", timeout: .seconds(45), every: .milliseconds(500)) {
            (try Self.status(harness).stall?.socketsJudged ?? 0) >= 16
        }
        let healthy = try Self.status(harness)
        #expect(!healthy.host.stalled && healthy.host.state == .online, "\(healthy)")
        #expect(Self.count("Changed", monitor.signals) == 0, "healthy traffic sent Changed: \(monitor.signals.map(\.member))")

        try topology.forwarding(false)
        let flagged = try await Self.until("reachd's Stalled", harness, timeout: .seconds(60)) { $0.stalled }
        try await Task.sleep(for: .seconds(1))
        let stalled = try Self.status(harness)
        let changes = monitor.changes
        #expect(changes.count == 1, "one Changed for the flip: \(changes)")
        #expect((changes.first?.flags ?? 0) & ReachabilityFlags.stalled.rawValue != 0, "\(changes)")
        #expect(stalled.host.flags.contains([.reachable, .stalled]) && stalled.host.state == .online)
        let evidence = try #require(stalled.stall)
        // The rule's either share: since the last receive, or (Android's) the last poll's, which
        // crosses first when the connections the churn keeps opening add fresh SYNs.
        #expect(evidence.socketsJudged >= 1 && evidence.socketsFailing >= 2 && evidence.owners == 1, "\(evidence)")
        #expect(evidence.waiting >= .seconds(7) && (evidence.sinceReceive ?? .zero) >= evidence.waiting, "GetStatus carries the figures: \(evidence)")
        let properties = monitor.signals.compactMap(\.propertiesChanged).filter { $0.values["Stalled"] != nil }
        #expect(properties.count == 1 && properties.first?.values["Stalled"] as? Bool == true, "\(properties.map(\.values))")
        print("stall(reachd): Stalled \(flagged) after the gateway stopped forwarding: \(evidence)")

        // Said everywhere: reachctl's status line and JSON, one journal line, wait.
        let text = try reachctl(["status", "--verbose", "--bus-address", harness.address])
        #expect(text.stdout.contains("but traffic is stalled: "), "\(text.stdout)")
        #expect(text.stdout.contains("Traffic: stalled; "), "\(text.stdout)")
        let json = try reachctl(["status", "--verbose", "--json", "--bus-address", harness.address]).json()
        #expect(json["stalled"] as? Bool == true)
        #expect(((json["stallEvidence"] as? [String: Any])?["sockets"] as? Int ?? 0) >= 1, "\(json)")
        let interfaces = try reachctl(["interfaces", "--json", "--bus-address", harness.address]).json()
        let c0 = (interfaces["interfaces"] as? [[String: Any]])?.first { $0["name"] as? String == "c0" }
        #expect(c0?["stalled"] as? Bool == true, "\(interfaces)")
        #expect(try reachctl(["wait", "--timeout", "1s", "--bus-address", harness.address]).status == 1)
        #expect(try reachctl(["wait", "--timeout", "1s", "--allow-stalled", "--bus-address", harness.address]).status == 0)
        let journal = harness.daemonErrorLines.filter { $0.contains("but traffic is stalled") }
        #expect(journal.count == 1, "one journal line per flip: \(journal)")
        // reachctl why names the traffic layer: every layer below it is fine. (In-process a fresh
        // monitor has judged nothing yet: its traffic layer is unknown, so only reachd here.)
        let why = try reachctl(["why", "--json", "--bus-address", harness.address, "--daemon"])
        let explained = try why.json()
        #expect(why.status == 1 && explained["brokenLayer"] as? String == "traffic", "\(why)")
        let traffic = (explained["layers"] as? [[String: Any]])?.first { $0["layer"] as? String == "traffic" }
        #expect((traffic?["evidence"] as? [String])?.first?.hasPrefix("c0: stalled: ") == true, "\(explained)")

        try topology.forwarding(true)
        let cleared = try await Self.until("Stalled cleared", harness, timeout: .seconds(40)) { !$0.stalled }
        try await Task.sleep(for: .seconds(1))
        #expect(monitor.changes.count == 2, "one Changed back: \(monitor.changes)")
        #expect(!(try Self.status(harness).host.flags.contains(.stalled)))
        print("stall(reachd): cleared \(cleared) after forwarding resumed")
    }

    /// Two uplinks, each with traffic of its own: the primary's gateway dies, the other's keeps
    /// forwarding. The host's answer is stalled; the other uplink's interface is not, and the
    /// status line lists it as the one still carrying traffic (issue 22, point 5).
    @Test func anotherUplinkThatStillWorksIsVisible() async throws {
        let topology = try Topology("sdtwo", shortRTO: false)
        // A second way out: client c1 -> gateway2 (h0, h1) -> the server's s1.
        let gateway2 = try TestNamespace("sdtwog2")
        try topology.client.ip("link add c1 type veth peer name h0 netns \(gateway2.name)")
        try gateway2.ip("link add h1 type veth peer name s1 netns \(topology.server.name)")
        try topology.client.ip("addr add 203.0.113.2/24 dev c1")
        try gateway2.ip("addr add 203.0.113.1/24 dev h0")
        try gateway2.ip("addr add 198.18.0.1/24 dev h1")
        try topology.server.ip("addr add 198.18.0.2/24 dev s1")
        for (ns, link) in [(topology.client, "c1"), (gateway2, "h0"), (gateway2, "h1"), (topology.server, "s1")] {
            try ns.ip("link set \(link) up")
        }
        try topology.client.ip("route add default via 203.0.113.1 dev c1 metric 200")
        try topology.client.ip("route add 198.18.0.0/24 via 203.0.113.1 dev c1")
        try topology.server.ip("route add 203.0.113.0/24 via 198.18.0.1 dev s1")
        try Topology.forwarding(gateway2, on: true)

        let server = try topology.startServer()
        defer { server.kill() }
        let first = try topology.startClients(to: Topology.serverV4, count: 16)
        defer { first.kill() }
        let second = try topology.startClients(to: "198.18.0.2", count: 4)
        defer { second.kill() }
        let harness = try DaemonHarness(topology.client)
        defer { harness.shutdown() }
        try await harness.ready()
        #expect(try Self.status(harness).host.primaryInterface == "c0")

        try topology.forwarding(false)
        _ = try await Self.until("reachd's Stalled", harness, timeout: .seconds(60)) { $0.stalled }
        let interfaces = try reachctl(["interfaces", "--json", "--bus-address", harness.address]).json()
        let byName = Dictionary(
            ((interfaces["interfaces"] as? [[String: Any]]) ?? []).map { ($0["name"] as? String ?? "", $0) }) { first, _ in first }
        #expect(byName["c0"]?["stalled"] as? Bool == true, "\(interfaces)")
        #expect(byName["c1"]?["stalled"] as? Bool == false, "\(interfaces)")
        let text = try reachctl(["status", "--bus-address", harness.address]).stdout
        #expect(text.contains("Available: c0 (stalled), c1"), "\(text)")
    }

    /// An HTTP server answering 204 to every GET: the probe's target.
    static let noContent = #"""
        import http.server, sys
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(204)
                self.end_headers()
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("", int(sys.argv[1])), H)
        print("listening", flush=True)
        server.serve_forever()
        """#

    /// With the probe configured (every 5 minutes by default), a stall runs it at once:
    /// Connectivity follows within seconds of Stalled, not at the next Interval=.
    @Test func aStallRunsTheConfiguredProbeAtOnce() async throws {
        let topology = try Topology("sdprobe", shortRTO: false)
        let server = try topology.startServer()
        defer { server.kill() }
        let http = try ChildProcess("/usr/sbin/ip", ["netns", "exec", topology.server.name, "/usr/bin/python3", "-c", Self.noContent, "8204"])
        defer { http.kill() }
        _ = try http.firstLine(timeout: .seconds(20))
        let clients = try topology.startClients(to: Topology.serverV4, count: 16)
        defer { clients.kill() }
        let config = "[Connectivity]\nURL=http://\(Topology.serverV4):8204/generate_204\nTimeout=2s\n"
        let harness = try DaemonHarness(topology.client, config: config)
        defer { harness.shutdown() }
        try await harness.ready()
        _ = try await Self.until("Connectivity full", harness, timeout: .seconds(20)) { $0.connectivity.verdict == .full }

        try topology.forwarding(false)
        _ = try await Self.until("reachd's Stalled", harness, timeout: .seconds(60)) { $0.stalled }
        let followed = try await Self.until("Connectivity none after the stall", harness, timeout: .seconds(6)) {
            $0.connectivity.verdict == .none
        }
        #expect(harness.daemonErrorLines.contains { $0.contains("running the connectivity probe now") }, "\(harness.diagnostics)")
        print("stall(reachd): Connectivity none \(followed) after Stalled (the probe's Interval= is 5 min)")
    }

    /// reachd's own DNS lookups timing out in a row (5) are evidence on their own: CheckHost
    /// across the dead gateway, no TCP traffic at all.
    @Test func consecutiveDNSTimeoutsFlagTheHostsPath() async throws {
        let topology = try Topology("sddns", shortRTO: false)
        try topology.forwarding(false)
        let resolvConf = try ConnectivityNameTests.ResolvConf(nameserver: "198.51.100.53")
        let harness = try DaemonHarness(topology.client, config: "[Stall]\nInterval=1s\n", resolvConf: resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()
        for index in 1...5 {
            let answer = try harness.busctlCall("CheckHost", "su", "name\(index).example", "300")
            #expect(answer.stdout.contains("dnsTimeout"), "\(answer)")
        }
        _ = try await Self.until("Stalled by DNS timeouts", harness, timeout: .seconds(20)) { $0.stalled }
        let (host, stall) = try Self.status(harness)
        #expect(host.flags.contains(.stalled))
        #expect(stall?.dnsTimeouts == 5 && stall?.socketsJudged == 0, "\(String(describing: stall))")
    }

    /// Another user's lookups are not evidence for everyone: it chooses their names and
    /// deadlines, so nobody's CheckHost calls timing out across the same dead gateway stall
    /// nothing, and count nothing toward the system's timeouts.
    @Test func anotherUsersDNSTimeoutsAreNotEvidence() async throws {
        let topology = try Topology("sddnsu", shortRTO: false)
        try topology.forwarding(false)
        let resolvConf = try ConnectivityNameTests.ResolvConf(nameserver: "198.51.100.53")
        let harness = try DaemonHarness(topology.client, config: "[Stall]\nInterval=1s\n", resolvConf: resolvConf.path, anyUser: true)
        defer { harness.shutdown() }
        try await harness.ready()
        for index in 1...6 {
            let child = try ChildProcess("/usr/bin/setpriv", [
                "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/busctl", "--address=\(harness.address)", "--json=short",
                "call", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "CheckHost", "su", "user\(index).example", "300",
            ])
            let (_, stdout, stderr) = try child.finish(timeout: .seconds(20))
            #expect(stdout.contains("dnsTimeout"), "nobody's lookup \(index) timed out: \(stdout) \(stderr)")
        }
        try await Task.sleep(for: .seconds(4))
        let (host, stall) = try Self.status(harness)
        #expect(!host.stalled && !host.flags.contains(.stalled), "\(host)")
        #expect((stall?.dnsTimeouts ?? 0) == 0, "\(String(describing: stall))")
    }

    /// The only nameserver is reached through a second link (dns0, no default route: a VPN's or
    /// a LAN's resolver) and never answers. Its timeouts stall dns0, the link that carried the
    /// queries; up0, the primary, carried none of them and stays unstalled, and so does the host.
    @Test func dnsTimeoutsCountAgainstTheLinkOfTheNameserver() async throws {
        let scenario = try PathDNSTests.scenario("sddnsl")
        let blackHole = try DNSBlackHole(in: scenario.far, address: "203.0.113.1")
        let resolvConf = try ConnectivityNameTests.ResolvConf(nameserver: "203.0.113.1")
        let harness = try DaemonHarness(scenario.ns, config: "[Stall]\nInterval=1s\nDNSTimeouts=2\n", resolvConf: resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()
        #expect(try Self.status(harness).host.primaryInterface == "up0")
        for index in 1...2 {
            let answer = try harness.busctlCall("CheckHost", "su", "name\(index).example", "300")
            #expect(answer.stdout.contains("dnsTimeout"), "\(answer)")
        }
        #expect(blackHole.drainQueriedNames().contains("name1.example"), "the queries went to the black hole")

        func stalled() throws -> [String: Bool] {
            let json = try reachctl(["interfaces", "--json", "--bus-address", harness.address]).json()
            let interfaces = (json["interfaces"] as? [[String: Any]]) ?? []
            let pairs = interfaces.compactMap { entry in (entry["name"] as? String).flatMap { name in (entry["stalled"] as? Bool).map { (name, $0) } } }
            return Dictionary(pairs) { first, _ in first }
        }
        try await eventually("dns0 stalled by DNS timeouts", timeout: .seconds(20), every: .milliseconds(500)) {
            try stalled()["dns0"] == true
        }
        #expect(try stalled()["up0"] == false)
        let (host, evidence) = try Self.status(harness)
        #expect(!host.stalled && !host.flags.contains(.stalled), "\(host), \(String(describing: evidence))")
        #expect(evidence == nil, "the primary had nothing to judge: \(String(describing: evidence))")
    }

    /// No traffic at all across a dead gateway: nothing to judge, never stalled, however often
    /// reachd looks (1 s polls here, backing off to 8 s).
    @Test func noTrafficNeverFlags() async throws {
        let topology = try Topology("sdnone", shortRTO: false)
        try topology.forwarding(false)
        let harness = try DaemonHarness(topology.client, config: "[Stall]\nInterval=1s\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()
        defer { monitor.stop() }
        try await Task.sleep(for: .seconds(20))
        let (host, stall) = try Self.status(harness)
        #expect(!host.stalled && host.state == .online, "\(host)")
        #expect(stall == nil, "no socket, no figures: \(String(describing: stall))")
        #expect(Self.count("Changed", monitor.signals) == 0, "\(monitor.signals.map(\.member))")
    }
}
