import Foundation
import Testing
@testable import Reachability

/// Issue 49 against the real kernel, through reachd with its shipped defaults and the kernel's
/// own (no sysctl touched): one forged ARP claim of the gateway on an idle host, then one
/// datagram, makes the kernel's entry PROBE a MAC nobody has and go FAILED; reachd has it resolve
/// the gateway afresh, the real router answers, and the host never leaves online, with no
/// application sending again. A router that really stops answering is still flagged within 10 s
/// of the kernel's FAILED, and back without traffic when it answers again.
@Suite(rootOnly)
struct GatewayClaimDaemonTests {
    typealias Scenario = DaemonBusTests.Scenario
    static let bogus = "02:ba:d0:00:00:66"

    /// Sends one frame from `far`'s end of the uplink, as any host on the link can: a gratuitous
    /// ARP reply (sender and target address the gateway's, sender and target MAC `claimed`, to
    /// the broadcast address), or with `to` (the host's MAC) a reply to the host alone, as if it
    /// answered the host's own request. Raw AF_PACKET, from Python: no arping or ping binary here.
    static func claim(_ scenario: Scenario, mac claimed: String, to host: String? = nil) throws {
        let script = """
            import socket, struct, sys
            mac = lambda s: bytes(int(x, 16) for x in s.split(':'))
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((sys.argv[1], 0))
            me, ip = mac(sys.argv[2]), socket.inet_aton('192.0.2.1')
            to, tip = (mac(sys.argv[3]), socket.inet_aton('192.0.2.2')) if len(sys.argv) > 3 else (me, ip)
            arp = struct.pack('!HHBBH', 1, 0x0800, 6, 4, 2) + me + ip + to + tip
            s.send((to if len(sys.argv) > 3 else b'\\xff' * 6) + me + struct.pack('!H', 0x0806) + arp)
            """
        try scenario.far.exec("/usr/bin/python3", ["-c", script, "up0p", claimed] + (host.map { [$0] } ?? []))
    }

    /// One datagram toward the internet: the kernel must resolve the gateway to send it.
    static func send(_ scenario: Scenario) throws {
        try scenario.ns.exec("/usr/bin/python3", ["-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('193.0.14.129', 9))"])
    }

    /// The router's MAC (up0p's, in `far`).
    static func routerMAC(_ scenario: Scenario) throws -> String {
        let line = try scenario.far.ip("-br link show up0p")
        return try #require(line.split(separator: " ").map(String.init).first { $0.count == 17 && $0.filter { $0 == ":" }.count == 5 }, "\(line)")
    }

    /// The kernel's neighbour events on up0, as `ip monitor` prints them, timed as they arrive.
    final class NeighbourLog: @unchecked Sendable {
        let child: ChildProcess
        init(_ scenario: Scenario) throws {
            child = try ChildProcess("/usr/sbin/ip", ["-n", scenario.ns.name, "monitor", "neigh"])
        }
        var lines: [String] { child.lines.filter { $0.hasPrefix("192.0.2.1 ") } }
        /// Waits for the first line from `index` on that holds `text`; returns its index and when it was seen.
        @discardableResult
        func wait(for text: String, from index: Int = 0, timeout: Duration = waitLimit) async throws -> (Int, ContinuousClock.Instant) {
            var found: Int?
            try await eventually("'\(text)' from line \(index) in \(lines)", timeout: timeout, every: .milliseconds(10)) {
                found = lines.indices.first { $0 >= index && lines[$0].contains(text) }
                return found != nil
            }
            return (found!, .now)
        }
        func stop() { child.kill() }
    }

    static func status(_ harness: DaemonHarness) throws -> [String: Any] {
        try reachctl(["status", "--json", "--bus-address", harness.address, "--daemon"]).json()
    }

    static func gatewayEvidence(_ harness: DaemonHarness) throws -> [String] {
        let json = try reachctl(["why", "--json", "--bus-address", harness.address, "--daemon"]).json()
        let layers = json["layers"] as? [[String: Any]] ?? []
        return layers.first { $0["layer"] as? String == "gateway" }?["evidence"] as? [String] ?? []
    }

    /// Online through reachd, the gateway resolved by the kernel (REACHABLE, its real MAC) and
    /// the network named after it.
    static func resolvedOnline(_ tag: String = #function) async throws -> (Scenario, DaemonHarness, NeighbourLog, router: String, name: String) {
        let scenario = try Scenario(tag)
        try scenario.ns.waitForCarrier("up0")
        let harness = try DaemonHarness(scenario.ns)
        try await harness.ready()
        let log = try NeighbourLog(scenario)
        let router = try routerMAC(scenario)
        try send(scenario)
        try await log.wait(for: "lladdr \(router) REACHABLE")
        var name = ""
        try await eventually("the network's name", every: .milliseconds(50)) {
            name = try status(harness)["networkID"] as? String ?? ""
            return !name.isEmpty
        }
        return (scenario, harness, log, router, name)
    }

    @Test func oneForgedClaimOfTheGateway_onAnIdleHost_neverTakesItOffline() async throws {
        let (scenario, harness, log, router, name) = try await Self.resolvedOnline()
        defer { harness.shutdown(); log.stop() }
        let monitor = try harness.monitor()
        defer { monitor.stop() }
        try Self.claim(scenario, mac: Self.bogus)
        let (claimed, _) = try await log.wait(for: "lladdr \(Self.bogus) STALE")
        // The host sends once, and never again: the kernel waits (DELAY), probes the forged MAC
        // (PROBE, nobody answers) and gives up (FAILED), about 8 s with its defaults.
        try Self.send(scenario)
        let (failed, failedAt) = try await log.wait(for: "FAILED", from: claimed, timeout: .seconds(20))
        let (_, answeredAt) = try await log.wait(for: "lladdr \(router) REACHABLE", from: failed, timeout: .seconds(10))
        print("forged claim: the real router answered reachd's fresh resolution \(answeredAt - failedAt) after the forged MAC's FAILED")
        #expect(answeredAt - failedAt <= .seconds(3), "the real router answered the fresh resolution \(answeredAt - failedAt) after FAILED")
        // Nothing the host shows moved: no Changed at all, online, the same network.
        try await Task.sleep(for: .milliseconds(300))
        #expect(monitor.changes.isEmpty, "\(monitor.changes)")
        let status = try Self.status(harness)
        #expect(status["state"] as? String == "online" && status["networkID"] as? String == name, "\(status)")
        let evidence = try Self.gatewayEvidence(harness)
        #expect(evidence.count == 1 && evidence[0].hasPrefix("192.0.2.1 on up0: REACHABLE, answered ") == true, "\(evidence)")
        #expect(harness.daemonErrorLines.allSatisfy { !$0.contains("cannot have the kernel resolve") }, "\(harness.daemonErrorLines)")
    }

    @Test func aRouterThatReallyStopsAnswering_isFlaggedWithin10s_andBackWithoutTraffic() async throws {
        let (scenario, harness, log, router, _) = try await Self.resolvedOnline()
        defer { harness.shutdown(); log.stop() }
        // Nobody owns 192.0.2.1 any more. The entry is made STALE (as an idle host's is) so that
        // the next datagram makes the kernel probe the router's MAC, which no longer answers.
        try scenario.far.ip("addr del 192.0.2.1/24 dev up0p")
        try scenario.ns.ip("neigh change 192.0.2.1 lladdr \(router) dev up0 nud stale")
        try Self.send(scenario)
        let (failed, failedAt) = try await log.wait(for: "FAILED", timeout: .seconds(20))
        var status: [String: Any] = [:]
        try await eventually("gatewayUnreachable: \(status)", timeout: .seconds(15), every: .milliseconds(50)) {
            status = try Self.status(harness)
            return status["reason"] as? String == "gatewayUnreachable"
        }
        let flagged = ContinuousClock.now - failedAt
        #expect(flagged <= .seconds(10), "flagged \(flagged) after the kernel's FAILED")
        #expect(status["state"] as? String == "local")
        // The kernel's FAILED and as many fresh ones as reachd asked for, none answered.
        let failures = log.lines[failed...].filter { $0.contains("FAILED") }.count
        #expect(failures >= NetworkState.freshResolutions + 1, "\(log.lines)")
        let evidence = try Self.gatewayEvidence(harness)
        #expect(evidence.first?.contains("FAILED, and 2 fresh resolutions failed too, answered ") == true, "\(evidence)")
        let metrics = try reachctl(["metrics", "--daemon", "--bus-address", harness.address]).stdout
        let asked = MetricsDaemonTests.value(metrics, "reachd_gateway_resolutions_total") ?? 0
        #expect(asked >= Double(NetworkState.freshResolutions) && asked <= 4, "each ask counted once: \(asked)")
        // The router is back; nobody on the host sends: reachd's next ask finds it.
        try scenario.far.ip("addr add 192.0.2.1/24 dev up0p")
        let back = ContinuousClock.now
        try await eventually("online again: \(status)", timeout: .seconds(15), every: .milliseconds(50)) {
            status = try Self.status(harness)
            return status["state"] as? String == "online"
        }
        print("router gone: flagged \(flagged) after the kernel's FAILED (\(failures) FAILED); online \(ContinuousClock.now - back) after it came back")
        #expect(ContinuousClock.now - back <= .seconds(10), "online \(ContinuousClock.now - back) after the router came back")
    }

    /// As the shipped unit runs it: reachd as an unprivileged user with no capability at all
    /// (`CapabilityBoundingSet=`, `NoNewPrivileges=yes`), inside the namespace (setns would need
    /// one). Its fresh resolution still goes out: the real router answers it after the forged
    /// MAC's FAILED, and the host stays online.
    @Test func withNoCapabilityAsTheShippedUnitRunsIt_theFreshResolutionStillGoesOut() async throws {
        let scenario = try Scenario()
        try scenario.ns.waitForCarrier("up0")
        let harness = try DaemonHarness(scenario.ns, start: false, anyUser: true)
        defer { harness.shutdown() }
        let reachd = try ChildProcess("/usr/sbin/ip", [
            "netns", "exec", scenario.ns.name, "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
            productPath("reachd"), "--bus-address", harness.address, "--config-dir", harness.configDirectory,
        ])
        defer { reachd.kill() }
        var status: [String: Any] = [:]
        try await eventually("reachd as nobody online: \(status) \(reachd.errorLines)", timeout: .seconds(20), every: .milliseconds(50)) {
            status = (try? Self.status(harness)) ?? [:]
            return status["state"] as? String == "online"
        }
        let log = try NeighbourLog(scenario)
        defer { log.stop() }
        let router = try Self.routerMAC(scenario)
        try Self.send(scenario)
        try await log.wait(for: "lladdr \(router) REACHABLE")
        try Self.claim(scenario, mac: Self.bogus)
        let (claimed, _) = try await log.wait(for: "lladdr \(Self.bogus) STALE")
        try Self.send(scenario)
        let (failed, failedAt) = try await log.wait(for: "FAILED", from: claimed, timeout: .seconds(20))
        let (_, answeredAt) = try await log.wait(for: "lladdr \(router) REACHABLE", from: failed, timeout: .seconds(10))
        #expect(answeredAt - failedAt <= .seconds(3), "answered \(answeredAt - failedAt) after FAILED")
        status = try Self.status(harness)
        #expect(status["state"] as? String == "online", "\(status)")
        #expect(reachd.errorLines.allSatisfy { !$0.contains("cannot have the kernel resolve") }, "\(reachd.errorLines)")
        let capabilities = try String(contentsOfFile: "/proc/\(reachd.pid)/status", encoding: .utf8)
        print("reachd as nobody: \(capabilities.split(separator: "\n").filter { $0.hasPrefix("Cap") || $0.hasPrefix("Uid") })")
    }

    /// The in-process monitor runs the same core on a thread of its own inside the namespace: it
    /// has the kernel resolve the gateway afresh too, with no reachd running, and shows nothing
    /// of the forged claim.
    @Test func inProcess_theMonitorAsksAgainToo_andShowsNothingOfTheClaim() async throws {
        let scenario = try Scenario()
        try scenario.ns.waitForCarrier("up0")
        let log = try NeighbourLog(scenario)
        defer { log.stop() }
        let router = try Self.routerMAC(scenario)
        try Self.send(scenario)
        try await log.wait(for: "lladdr \(router) REACHABLE")
        let monitor = try scenario.ns.monitor()
        defer { monitor.stop() }
        let recorder = await UpdateRecorder(monitor)
        #expect(recorder.first.host.state == .online)
        let name = recorder.first.host.networkID
        #expect(!name.isEmpty)
        try Self.claim(scenario, mac: Self.bogus)
        let (claimed, _) = try await log.wait(for: "lladdr \(Self.bogus) STALE")
        try Self.send(scenario)
        let (failed, failedAt) = try await log.wait(for: "FAILED", from: claimed, timeout: .seconds(20))
        let (_, answeredAt) = try await log.wait(for: "lladdr \(router) REACHABLE", from: failed, timeout: .seconds(10))
        #expect(answeredAt - failedAt <= .seconds(3), "answered \(answeredAt - failedAt) after FAILED")
        try await Task.sleep(for: .milliseconds(300))
        #expect(recorder.changes.isEmpty, "\(recorder.changes.map(\.host))")
        #expect(monitor.snapshot.host.state == .online && monitor.snapshot.host.networkID == name)
    }

    /// In PROBE the kernel asks the MAC it holds by unicast; a reply from another MAC then (a
    /// host on the link answering in the router's place) makes the entry REACHABLE with that
    /// MAC, but is no answer to the kernel's question: the network keeps its name.
    @Test func aReplyFromAnotherMACWhileTheKernelProbes_doesNotRenameTheNetwork() async throws {
        let (scenario, harness, log, router, name) = try await Self.resolvedOnline()
        defer { harness.shutdown(); log.stop() }
        let words: [String] = try scenario.ns.ip("-br link show up0").split(separator: " ").map(String.init)
        let host = try #require(words.first { $0.count == 17 && $0.filter { $0 == ":" }.count == 5 })
        // The router says nothing while the kernel probes it (else its own answer comes first),
        // and the kernel probes for 10 s (10 unicast probes), so the reply below surely lands in
        // PROBE however late a loaded machine sends it.
        try scenario.far.ip("addr del 192.0.2.1/24 dev up0p")
        try scenario.ns.exec("/usr/sbin/sysctl", ["-qw", "net.ipv4.neigh.up0.ucast_solicit=10"])
        try scenario.ns.ip("neigh change 192.0.2.1 lladdr \(router) dev up0 nud stale")
        try Self.send(scenario)
        let (probing, _) = try await log.wait(for: "PROBE", timeout: .seconds(15))
        // Past the kernel's lock time (1 s from PROBE's update), when another reply overrides.
        try await Task.sleep(for: .milliseconds(1_200))
        try Self.claim(scenario, mac: Self.bogus, to: host)
        try await log.wait(for: "lladdr \(Self.bogus) REACHABLE", from: probing, timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(300))
        let status = try Self.status(harness)
        #expect(status["state"] as? String == "online" && status["networkID"] as? String == name, "\(status) \(log.lines)")
    }

    /// IPv6: the router is fe80::1 on the link (a scope the datagram needs, IPV6_UNICAST_IF in
    /// network byte order as for IPv4). It stops answering neighbour solicitations, the host's
    /// one datagram leaves its entry FAILED (never answered: `gatewayUnreachable` at once); it
    /// answers again, and reachd's next fresh resolution brings the host back with no traffic.
    @Test func ipv6_aLinkLocalRouterThatAnswersAgain_bringsTheHostBackWithoutTraffic() async throws {
        let ns = try TestNamespace()
        let far = try TestNamespace("far")
        try ns.ip("link add v6g0 type veth peer name v6g0p")
        try ns.ip("link set v6g0p netns \(far.name)")
        try ns.ip("link set v6g0 addrgenmode none")
        try far.ip("link set v6g0p addrgenmode none")
        try ns.ip("-6 addr add fe80::2/64 dev v6g0 nodad")
        try ns.ip("-6 addr add 2001:db8:1::2/64 dev v6g0 nodad")
        try far.ip("-6 addr add 2001:db8:1::1/64 dev v6g0p nodad")
        try far.ip("link set v6g0p up")
        try ns.ip("link set v6g0 up")
        try ns.ip("-6 route add default via fe80::1 dev v6g0")
        try ns.waitForCarrier("v6g0")
        let harness = try DaemonHarness(ns)
        defer { harness.shutdown() }
        try await harness.ready()
        // Nobody has fe80::1 yet: the host's one datagram leaves the entry FAILED.
        try ns.exec("/usr/bin/python3", ["-c", "import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b'x', ('2001:7fd::1', 9))"])
        var status: [String: Any] = [:]
        try await eventually("gatewayUnreachable: \(status)", timeout: .seconds(15), every: .milliseconds(50)) {
            status = try Self.status(harness)
            return status["reason"] as? String == "gatewayUnreachable"
        }
        try far.ip("-6 addr add fe80::1/64 dev v6g0p nodad")
        let back = ContinuousClock.now
        try await eventually("online again: \(status)", timeout: .seconds(15), every: .milliseconds(50)) {
            status = try Self.status(harness)
            return status["state"] as? String == "online"
        }
        print("IPv6 router back: online \(ContinuousClock.now - back) after it answered again")
        #expect(ContinuousClock.now - back <= .seconds(10))
        #expect(harness.daemonErrorLines.allSatisfy { !$0.contains("cannot have the kernel resolve") }, "\(harness.daemonErrorLines)")
        let neighbours = try ns.ip("-6 neigh show dev v6g0")
        #expect(neighbours.contains("fe80::1") && neighbours.contains("REACHABLE"), "\(neighbours)")
    }
}
