import Foundation
import Testing
@testable import Reachability

/// issue 45: the connectivity probe through libcurl, on the thread the portal APIs use. Its name
/// is still resolved by reachd's resolver (libcurl connects to the address found, and makes no
/// lookup of its own), https is judged with the trust store (here the test's CA, `[Portal]
/// CAFile=`), and the probe keeps quiet while the network's own portal API answers.
@Suite(rootOnly)
struct ProbeExchangeTests {
    /// https by name: the name resolved by reachd's resolver (dnsmasq in the gateway's namespace;
    /// the namespace's own resolv.conf knows nothing of `probe.test`, so libcurl resolving it
    /// would fail), the certificate checked for that name against the test's CA: full. A
    /// redirect over https is a portal, its Location told; without the CA, the certificate is
    /// refused: none, saying so.
    @Test func anHTTPSProbeByNameIsJudgedThroughTheTrustStore() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let server = try PortalServer(in: scenario.far, address: "192.0.2.1")
        let dns = try DNSMasqServer(in: scenario.far, address: "192.0.2.1", records: ["probe.test": ["192.0.2.1"]], ttl: 1)
        let resolvConf = try ConnectivityNameTests.ResolvConf(nameserver: "192.0.2.1")
        let trusted = "[Portal]\nCAFile=\(server.caFile)\n"
        let probe = "[Connectivity]\nURL=https://probe.test:8443/generate_204\nTimeout=2s\n"
        let harness = try DaemonHarness(scenario.ns, config: probe + trusted, resolvConf: resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try harness.connect()
        try await eventually("full over https; \(harness.diagnostics)", timeout: .seconds(5), every: .milliseconds(20)) {
            try DaemonHarness.property(client, "Connectivity") as String == "full"
        }
        #expect(dns.queries(for: "probe.test") >= 1, "the name was asked of reachd's nameserver")

        try harness.writeConfig("[Connectivity]\nURL=https://probe.test:8443/portal\nTimeout=2s\n" + trusted)
        harness.daemon?.signal(SIGHUP)
        try await eventually("portal over https; \(harness.diagnostics)", timeout: .seconds(5), every: .milliseconds(20)) {
            try DaemonHarness.property(client, "Connectivity") as String == "portal"
        }
        #expect(try DaemonHarness.property(client, "Portal") as String == "https://192.0.2.1:8443/login")

        try harness.writeConfig(probe)
        harness.daemon?.signal(SIGHUP)
        try await eventually("none without the CA; \(harness.diagnostics)", timeout: .seconds(5), every: .milliseconds(20)) {
            try DaemonHarness.property(client, "Connectivity") as String == "none"
        }
        let validated = try DaemonHarness.jsonData(try harness.busctlCall("Validate"))
        let detail = validated.count > 2 ? validated[2] as? String ?? "" : ""
        #expect(detail.lowercased().contains("certificate"), "\(validated)")
    }

    /// The network announces its API (a DHCP lease naming it) and the API answers: the probe
    /// sends nothing more (its server counts no request), Connectivity is unknown with the
    /// reason, Validate asks no one; once the lease names no API, the probe judges the path again.
    @Test func theProbeKeepsQuietWhileTheNetworksAPIAnswers() async throws {
        let probe = "[Connectivity]\nURL=http://192.0.2.1:8204/generate_204\nTimeout=1s\n"
        let network = try PortalAPITests.Network("pq0", connectivity: probe)
        defer { network.stop() }
        let servers = try ChildProcess("/usr/bin/ip", ["netns", "exec", network.uplinks.far.name, "/usr/bin/python3", "-c", ConnectivityProbeTests.servers])
        #expect(try servers.firstLine(timeout: .seconds(10)) == "ready")
        try await network.harness.ready()
        let client = try network.harness.connect()
        var requests: Int { servers.lines.filter { $0.hasPrefix("GET ") }.count }
        try await eventually("full", timeout: .seconds(5), every: .milliseconds(20)) {
            try DaemonHarness.property(client, "Connectivity") as String == "full"
        }
        try network.lease(network.server.api)
        try await eventually("the API's answer; \(network.harness.diagnostics)", timeout: .seconds(5), every: .milliseconds(20)) {
            try DaemonHarness.property(client, "Connectivity") as String == "unknown"
        }
        let before = requests
        let answer = try DaemonHarness.jsonData(try network.harness.busctlCall("Validate"))
        let detail = answer.count > 2 ? answer[2] as? String ?? "" : ""
        #expect(answer.first as? String == "unknown" && detail.contains("captive-portal API of pq0's network answers"), "\(answer)")
        try await Task.sleep(for: .milliseconds(1500))
        #expect(requests == before, "nothing sent to the probe's server while the API answers")

        try "".write(toFile: network.leases + "/dhclient.pq0.leases", atomically: true, encoding: .utf8)
        try await eventually("full again; \(network.harness.diagnostics)", timeout: .seconds(5), every: .milliseconds(20)) {
            try DaemonHarness.property(client, "Connectivity") as String == "full"
        }
        #expect(requests > before)
    }
}

extension PortalAPILoopTests {
    /// The probe meets garbage, a huge page, a server that never answers and (after a good
    /// answer) conflicting Content-Lengths, one after the other: each is one journal line (none,
    /// portal judged from the page's first 4 KiB, none at the deadline, none), and reachd's loop, asked CheckAddress every 2 ms all along, never
    /// answers later than 10 ms: libcurl reads on the exchange thread, the loop only hands the
    /// question in and takes the verdict back (from the reload to 100 ms past the line; for the
    /// silent server, 200 ms from the reload and 100 ms either side of the deadline's line).
    @Test func hostileProbeAnswersNeverHoldTheLoopPast10Milliseconds() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let servers = try ChildProcess("/usr/bin/ip", ["netns", "exec", scenario.far.name, "/usr/bin/python3", "-c", ConnectivityProbeTests.servers])
        #expect(try servers.firstLine(timeout: .seconds(10)) == "ready")
        func config(_ port: Int) -> String { "[Connectivity]\nURL=http://192.0.2.1:\(port)/generate_204\nTimeout=2s\n" }
        let harness = try DaemonHarness(scenario.ns, config: config(8204))
        defer { harness.shutdown() }
        try await harness.ready()
        // libcurl loaded and its thread started before the measure (the first question's cost).
        try harness.daemon?.waitForErrorLine(containing: "connectivity: full (HTTP 204)")
        let origin = ContinuousClock.now
        let stop = Self.sampleLoop(harness.address, origin: origin)
        try await Task.sleep(for: .milliseconds(300))
        let cases: [(port: Int, line: String)] = [
            (8998, "connectivity: none ("),
            (8997, "connectivity: portal (HTTP 200, 4096+ bytes"),
            (8999, "connectivity: none (no answer within 2s)"),
            (8204, "connectivity: full (HTTP 204)"),
            (8996, "connectivity: none (conflicting Content-Length headers ('0' and '5'))"),
        ]
        var windows: [(path: String, from: Duration, to: Duration)] = []
        for (port, line) in cases {
            let asked = ContinuousClock.now - origin
            try harness.writeConfig(config(port))
            harness.daemon?.signal(SIGHUP)
            try harness.daemon?.waitForErrorLine(containing: line, timeout: .seconds(5))
            let told = ContinuousClock.now - origin
            if port == 8999 {
                // Around the question and around the deadline: between them the loop has nothing
                // of the probe's to do, and a shared machine's scheduling shows there alone (as
                // in the portal API's test above).
                windows.append(("port \(port) asked", asked, asked + .milliseconds(200)))
                windows.append(("port \(port)", told - .milliseconds(100), told + .milliseconds(100)))
            } else {
                windows.append(("port \(port)", asked, told + .milliseconds(100)))
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let samples = stop()
        let lines = harness.daemonErrorLines.filter { $0.hasPrefix("connectivity: ") && !$0.hasPrefix("connectivity: probing") }
        print("probe hostile answers' journal lines: \(lines)")
        #expect(lines.count == 6, "full, then one line per hostile answer (and full between): \(lines)")
        #expect(!lines.joined().contains("\u{1b}"), "\(lines)")
        Self.expectPrompt(samples, windows, "probe hostile answer on")
    }
}
