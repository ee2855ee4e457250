import Foundation
import Testing
@testable import Reachability

/// RFC 8781 through the real kernel: a router in `far` sends IPv6 router advertisements carrying
/// a PREF64 option onto the veth (raw ICMPv6 from Python, as a router daemon would); the kernel
/// in `ns` accepts them and passes option 38 on to rtnetlink listeners. reachd, on a private
/// bus, reports the prefix as `Nat64Prefix` (property, GetStatus, reachctl), and an in-process
/// monitor on the same namespace (`reachctl monitor --json --netns`) says the same; both drop it
/// when the router withdraws it and when its lifetime runs out with nothing else happening.
/// A one-shot in-process `reachctl status` cannot show it: the kernel keeps no ND options to
/// dump, they exist only as messages to whoever listens when the advertisement arrives.
@Suite(rootOnly, .serialized)
struct Nat64PrefixTests {
    /// `ROUTER INTERFACE PREFIX SCALED PLC`: one router advertisement from ROUTER (a link-local
    /// address of INTERFACE) to all nodes, router lifetime 1800 s, with RFC 8781's option:
    /// type 38, length 2, SCALED (the lifetime in units of 8 s) << 3 | PLC, then the prefix's
    /// highest 96 bits. Hop limit 255, or the receiver drops it (RFC 4861 6.1.2).
    static let routerAdvertisement = """
        import socket, struct, sys
        router, interface, prefix, scaled, plc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        index = socket.if_nametoindex(interface)
        sender = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        sender.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
        sender.bind((router, 0, 0, index))
        message = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, 1800, 0, 0)
        message += struct.pack("!BBH", 38, 2, scaled << 3 | plc) + socket.inet_pton(socket.AF_INET6, prefix)[:12]
        sender.sendto(message, ("ff02::1", 0, 0, index))
        """

    static func advertise(_ scenario: DaemonBusTests.Scenario, prefix: String = "64:ff9b::", scaled: Int, code: Int = 0) throws {
        try scenario.far.exec("/usr/bin/python3", ["-c", routerAdvertisement, "fe80::1", "up0p", prefix, "\(scaled)", "\(code)"])
    }

    static func announced(_ client: BusConnection) throws -> String { try DaemonHarness.property(client, "Nat64Prefix") }

    /// Waits until reachd's property and the in-process monitor's latest line both say `prefix`.
    static func waitFor(_ prefix: String, _ client: BusConnection, inProcess: ReachctlProcess, _ harness: DaemonHarness) async throws {
        let deadline = ContinuousClock.now + waitLimit
        while try announced(client) != prefix || latest(inProcess)?["nat64Prefix"] as? String != prefix {
            guard ContinuousClock.now < deadline else {
                throw TimedOut(what: "Nat64Prefix '\(prefix)', reachd says '\(try announced(client))', in-process \(inProcess.output.last ?? "nothing"); \(harness.diagnostics)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until reachd's property says `prefix`.
    static func waitForProperty(_ prefix: String, _ client: BusConnection, _ harness: DaemonHarness) async throws {
        let deadline = ContinuousClock.now + waitLimit
        while try announced(client) != prefix {
            guard ContinuousClock.now < deadline else {
                throw TimedOut(what: "Nat64Prefix '\(prefix)', reachd says '\(try announced(client))'; \(harness.diagnostics)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    static func latest(_ monitor: ReachctlProcess) -> [String: Any]? {
        monitor.output.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static let nat64Keys = ["nat64Prefix", "nat64Router", "nat64Interface"]

    @Test func aRoutersNat64Prefix_isReportedThroughReachdAndInProcess_untilWithdrawnOrExpired() async throws {
        let (scenario, harness) = try await AnnouncedPortalTests.routerScenario()
        defer { harness.shutdown() }
        let client = try harness.connect()
        #expect(try Self.announced(client) == "")
        let inProcess = try ReachctlProcess(["monitor", "--json", "--netns", scenario.ns.name, "--config-dir", harness.configDirectory])
        defer { _ = inProcess.terminate() }
        _ = try await inProcess.waitForLines(1)
        #expect(Self.latest(inProcess)?["nat64Prefix"] as? String == "")

        let monitor = try harness.monitor("type='signal',member='Changed'")
        defer { monitor.stop() }
        try Self.advertise(scenario, scaled: 225)  // 1800 s
        try await Self.waitFor("64:ff9b::/96", client, inProcess: inProcess, harness)
        let status = try DaemonHarness.jsonData(try harness.busctlCall("GetStatus"))
        #expect("\(status)".contains("Nat64Router") && "\(status)".contains("fe80::1"), "GetStatus says where it came from: \(status)")
        let viaReachd = try reachctl(["status", "--json", "--daemon", "--bus-address", harness.address]).json()
        let local = try #require(Self.latest(inProcess))
        for key in Self.nat64Keys {
            #expect(viaReachd[key] as? String == local[key] as? String, "\(key): reachd \(viaReachd), in-process \(local)")
        }
        #expect(viaReachd["nat64Router"] as? String == "fe80::1" && viaReachd["nat64Interface"] as? String == "up0", "\(viaReachd)")
        let text = try reachctl(["status", "--daemon", "--bus-address", harness.address])
        #expect(text.stdout.contains("NAT64: 64:ff9b::/96 (announced by fe80::1 on up0)"), "\(text)")
        // The same announcement again (routers repeat theirs) is no change; an invalid code is ignored.
        try Self.advertise(scenario, scaled: 225)
        try Self.advertise(scenario, prefix: "2001:db8:64::", scaled: 225, code: 6)
        try await Task.sleep(for: .milliseconds(300))
        #expect(monitor.changes.count == 1, "one Changed for the announcement: \(monitor.changes)")
        #expect(try Self.announced(client) == "64:ff9b::/96")

        // Withdrawn: lifetime 0 for that prefix (the router and its default route stay).
        try Self.advertise(scenario, scaled: 0)
        try await Self.waitFor("", client, inProcess: inProcess, harness)
        // The property is read from reachd; the signal reaches busctl's output on its own time (it
        // lagged the property in a loaded main pass).
        try await monitor.wait(for: "the withdrawal's Changed") { $0.compactMap(\.changed).count >= 2 }
        #expect(monitor.changes.count == 2, "one Changed for the withdrawal: \(monitor.changes)")

        // A short lifetime (8 s, the shortest there is) ends on its own: nothing else happens.
        // Timed from the send: its publication may wait for the hold window of the withdrawal
        // just before, its lifetime does not.
        let announcedAt = ContinuousClock.now
        try Self.advertise(scenario, prefix: "2001:db8:64::", scaled: 1, code: 1)
        try await Self.waitFor("2001:db8:64::/64", client, inProcess: inProcess, harness)
        try await Self.waitFor("", client, inProcess: inProcess, harness)
        #expect(ContinuousClock.now - announcedAt > .milliseconds(7500), "gone before its lifetime ran out")
        try await monitor.wait(for: "the expiry's Changed") { $0.compactMap(\.changed).count >= 4 }
        #expect(monitor.changes.count == 4, "one Changed each for the announcement and its expiry: \(monitor.changes)")
        let after = try reachctl(["status", "--json", "--daemon", "--bus-address", harness.address]).json()
        for key in Self.nat64Keys { #expect(after[key] as? String == "", "\(after)") }
    }

    /// issue 35: a hostile host on the link announces a NAT64 prefix in a range no host may use,
    /// or the link's own prefix, and a portal URI outside RFC 3986: the kernel passes them on,
    /// reachd publishes none of them and says once per router what it refused, escaped.
    @Test func badPrefixesAndPortalURIsFromARouterAreNeverPublished_andSaidOnce() async throws {
        let (scenario, harness) = try await AnnouncedPortalTests.routerScenario()
        defer { harness.shutdown() }
        try scenario.ns.ip("addr add 2001:db8:5::2/64 dev up0 nodad")
        let client = try harness.connect()

        for prefix in ["ff02::", "::ffff:0:0", "2001:db8:5::"] { try Self.advertise(scenario, prefix: prefix, scaled: 225) }
        try Self.advertise(scenario, prefix: "fe80::", scaled: 225, code: 1)
        for uri in ["https://@/", "https://portal.example/<script>", "https://portal.example/\u{202E}"] {
            try AnnouncedPortalTests.advertise(scenario, uri: uri)
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try Self.announced(client) == "")
        #expect(try AnnouncedPortalTests.announced(client) == "")
        let prefixes = harness.daemonErrorLines.filter { $0.contains("ignoring the NAT64 prefix") }
        #expect(prefixes.count == 1, "said once for the router: \(prefixes)")
        #expect(prefixes.first?.contains("'ff02::/96' announced by fe80::1") == true, "\(prefixes)")
        let portals = harness.daemonErrorLines.filter { $0.contains("ignoring the captive-portal URI") }
        #expect(portals.count == 1, "said once for the router: \(portals)")
        #expect(portals.first?.contains("'https://@/' announced by fe80::1") == true && portals.first?.contains("a user name") == true, "\(portals)")

        // The same router's good values are taken: the refusals held nothing back.
        try Self.advertise(scenario, scaled: 225)
        try AnnouncedPortalTests.advertise(scenario, uri: "https://portal.example/api")
        let deadline = ContinuousClock.now + waitLimit
        while try Self.announced(client) != "64:ff9b::/96" || AnnouncedPortalTests.announced(client) != "https://portal.example/api" {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "the good values: \(harness.diagnostics)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
