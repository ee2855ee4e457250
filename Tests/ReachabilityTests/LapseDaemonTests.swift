import Foundation
import Testing
@testable import Reachability

/// issue 30 against the real kernel, through reachd (Changed counted by busctl) and in-process
/// `reachctl status --netns`, which must agree: a router's default route whose lifetime runs
/// out while the router is silent (the kernel stops routing at once, but deletes the route
/// only at its garbage collection, up to 30 s later, and says nothing before), a lifetime an
/// advertisement renewed without a netlink message, IPv4 link-local only, an optimistic
/// address, and a multipath default over two legs.
@Suite(rootOnly)
struct LapseDaemonTests {
    typealias Scenario = DaemonBusTests.Scenario

    /// `ROUTER INTERFACE LIFETIME [DNS]`: a router advertisement with that router lifetime
    /// (seconds), from ROUTER (a link-local address of INTERFACE) to all nodes; with DNS, an
    /// RDNSS option (RFC 8106, type 25) naming that server for an hour, which the kernel passes
    /// on to rtnetlink listeners.
    static let routerAdvertisement = """
        import socket, struct, sys
        router, interface, lifetime = sys.argv[1], sys.argv[2], int(sys.argv[3])
        index = socket.if_nametoindex(interface)
        sender = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        sender.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
        sender.bind((router, 0, 0, index))
        message = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, lifetime, 0, 0)
        if len(sys.argv) > 4:
            message += struct.pack("!BBHI", 25, 3, 0, 3600) + socket.inet_pton(socket.AF_INET6, sys.argv[4])
        sender.sendto(message, ("ff02::1", 0, 0, index))
        """

    static func advertise(_ scenario: Scenario, lifetime: Int, nameserver: String? = nil) throws {
        try scenario.far.exec("/usr/bin/python3", ["-c", routerAdvertisement, "fe80::1", "up0p", "\(lifetime)"] + (nameserver.map { [$0] } ?? []))
    }

    /// Whether the kernel in `ns` routes toward the internet over IPv6 (`ip -6 route get`).
    static func kernelRoutesIPv6(_ scenario: Scenario) -> Bool {
        (try? scenario.ns.ip("-6 route get 2001:7fd::1")) != nil
    }

    static func facts(_ scenario: Scenario, _ harness: DaemonHarness) throws -> String {
        try PathFactsDaemonTests.facts(scenario, harness)
    }

    static func changed(_ monitor: DaemonHarness.SignalMonitor) -> Int { PathFactsDaemonTests.changed(monitor) }

    /// reachd's facts alone, as `facts` words them: what to wait on (the two answers may differ
    /// for the few milliseconds one has heard of a change and the other not).
    static func daemonFacts(_ harness: DaemonHarness) -> String? {
        guard let json = try? reachctl(["status", "--json", "--bus-address", harness.address, "--daemon"]).json() else { return nil }
        let v4 = json["supportsIPv4"] as? Bool ?? false, v6 = json["supportsIPv6"] as? Bool ?? false
        let gateways = (json["gateways"] as? [String] ?? []).joined(separator: ",")
        return "\(json["state"] as? String ?? "?") v4=\(v4) v6=\(v6) gw=\(gateways) reason=\(json["reason"] as? String ?? "?")"
    }

    /// Waits until reachd says `expected`, then checks that in-process says the same.
    static func settle(on expected: String, _ scenario: Scenario, _ harness: DaemonHarness) async throws {
        try await eventually("reachd: \(expected), last \(daemonFacts(harness) ?? "none")") { daemonFacts(harness) == expected }
        #expect(try facts(scenario, harness) == expected)
    }

    @Test func aSilentRoutersLifetimeRunsOut_reachdFollowsTheKernelWithinASecond_withOneChanged() async throws {
        let (scenario, harness) = try await AnnouncedPortalTests.routerScenario()
        defer { harness.shutdown() }
        // IPv6 only: a global address, the default route from the router's advertisements.
        try scenario.ns.ip("route del default via 192.0.2.1")
        try scenario.ns.ip("-6 addr add 2001:db8:1::2/64 dev up0 nodad")
        let monitor = try harness.monitor()
        defer { monitor.stop() }
        try Self.advertise(scenario, lifetime: 6)
        try await Self.settle(on: "online v4=false v6=true gw=fe80::1 reason=", scenario, harness)
        #expect(try scenario.ns.ip("-6 route show default").contains("expires"), "a lifetime the kernel times")
        let online = Self.changed(monitor)

        // Renewed halfway, with no netlink message: the first deadline passes with no change.
        try await Task.sleep(for: .seconds(3))
        try Self.advertise(scenario, lifetime: 6)
        let renewed = ContinuousClock.now
        try await Task.sleep(for: .seconds(4))
        #expect(Self.kernelRoutesIPv6(scenario) && Self.changed(monitor) == online, "no lapse at the stale deadline: \(monitor.changes)")

        // Now silent: the kernel stops routing at the renewed deadline, reachd with it.
        var kernelStopped: ContinuousClock.Instant?
        var reachdStopped: ContinuousClock.Instant?
        while kernelStopped == nil || reachdStopped == nil {
            guard ContinuousClock.now < renewed + .seconds(12) else {
                throw TimedOut(what: "the lapse: kernel \(String(describing: kernelStopped)), reachd \(String(describing: reachdStopped)); \(monitor.changes)")
            }
            if kernelStopped == nil, !Self.kernelRoutesIPv6(scenario) { kernelStopped = .now }
            if reachdStopped == nil, Self.changed(monitor) > online { reachdStopped = .now }
            try await Task.sleep(for: .milliseconds(10))
        }
        let lag = try #require(reachdStopped) - #require(kernelStopped)
        #expect(lag < .seconds(1) && lag > .seconds(-1), "reachd \(lag) after the kernel")
        #expect(try #require(kernelStopped) - renewed > .seconds(5), "the kernel kept the renewed lifetime")
        let last = try #require(monitor.changes.last)
        #expect(last.flags & DaemonBusTests.reachable == 0, "\(monitor.changes)")
        // The kernel still lists the route (`expires 0sec`, then `-1sec`...) until its garbage
        // collection; both answers agree meanwhile, and nothing more is said.
        #expect(try Self.facts(scenario, harness) == "local v4=false v6=false gw= reason=noRoute")
        try await Task.sleep(for: .milliseconds(500))
        #expect(Self.changed(monitor) == online + 1, "one Changed for the lapse: \(monitor.changes)")

        // The router is back before the kernel collected its route: the kernel revives the route
        // without a netlink message; the advertisement's RDNSS option (which the kernel does pass
        // on) is reachd's cue to look again.
        let kept = try scenario.ns.ip("-6 route show default").contains("fe80::1")
        try Self.advertise(scenario, lifetime: 30, nameserver: "2001:db8:1::53")
        let back = ContinuousClock.now
        try await Self.settle(on: "online v4=false v6=true gw=fe80::1 reason=", scenario, harness)
        #expect(ContinuousClock.now - back < .seconds(1), "the kernel's route was kept: \(kept)")
        try await Task.sleep(for: .milliseconds(500))
        #expect(Self.changed(monitor) == online + 2, "one Changed for the return: \(monitor.changes)")
    }

    @Test func anAddressPastItsValidLifetime_isGoneAtItsDeadline_withOneChanged() async throws {
        let scenario = try Scenario()
        try scenario.far.ip("addr add fe80::1/64 dev up0p nodad")
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        try scenario.ns.ip("route del default via 192.0.2.1")
        try scenario.ns.ip("-6 route add default via fe80::1 dev up0")
        let monitor = try harness.monitor()
        defer { monitor.stop() }
        // As DHCPv6 or SLAAC leave it when renewals stop: a valid lifetime that runs out.
        try scenario.ns.ip("-6 addr add 2001:db8:1::2/64 dev up0 nodad valid_lft 4 preferred_lft 4")
        let added = ContinuousClock.now
        try await Self.settle(on: "online v4=false v6=true gw=fe80::1 reason=", scenario, harness)
        let online = Self.changed(monitor)
        let signals = try await monitor.wait(for: "the lapse", timeout: .seconds(8)) { ChangedSignalTests.count("Changed", $0) > online }
        // When busctl printed it: this test's own polls share two threads with 51 other tests.
        let lapse = ChangedSignalTests.signals("Changed", signals)[online]
        let lapsed = lapse.arrived - added
        print("lapse: Changed printed by busctl \(lapsed) after the address was added, seen by the test after \(ContinuousClock.now - added)")
        #expect(lapsed > .seconds(3.9) && lapsed < .seconds(5), "the address lapsed after \(lapsed)")
        #expect(try Self.facts(scenario, harness) == "local v4=false v6=false gw= reason=noAddress")
        // The kernel's own deletion, which follows, is no news.
        try await eventually("the kernel deletes it") { !((try? scenario.ns.ip("-6 addr show dev up0")) ?? "").contains("2001:db8:1::2") }
        try await Task.sleep(for: .milliseconds(500))
        #expect(Self.changed(monitor) == online + 1, "one Changed for the lapse: \(monitor.changes)")
    }

    @Test func ipv4LinkLocalOnly_isLocal_noAddress() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        // avahi-autoipd's setup: 169.254.x.x/16 scope link and a default route onto the link.
        try scenario.ns.ip("addr del 192.0.2.2/24 dev up0")
        try scenario.ns.ip("addr add 169.254.12.34/16 brd 169.254.255.255 scope link dev up0")
        try scenario.ns.ip("route add default dev up0 scope link")
        try await Self.settle(on: "local v4=false v6=false gw= reason=noAddress", scenario, harness)
    }

    @Test func anOptimisticAddress_isUsedWhileDuplicateAddressDetectionRuns() async throws {
        let scenario = try Scenario()
        try scenario.far.ip("addr add fe80::1/64 dev up0p nodad")
        for setting in ["optimistic_dad=1", "use_optimistic=1", "accept_dad=1", "dad_transmits=5"] {
            try scenario.ns.exec("/usr/sbin/sysctl", ["-qw", "net.ipv6.conf.up0.\(setting)"])
        }
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        try scenario.ns.ip("route del default via 192.0.2.1")
        try scenario.ns.ip("-6 route add default via fe80::1 dev up0")
        try await Self.settle(on: "local v4=false v6=false gw= reason=noAddress", scenario, harness)

        // With a peer on the link, detection takes dad_transmits seconds (5 here); the kernel
        // sends from the address meanwhile.
        try scenario.ns.ip("-6 addr add 2001:db8:1::2/64 dev up0 optimistic")
        try await Self.settle(on: "online v4=false v6=true gw=fe80::1 reason=", scenario, harness)
        let shown = try scenario.ns.ip("-6 addr show dev up0")
        #expect(shown.contains("optimistic") && shown.contains("tentative"), "still in detection: \(shown)")
    }

    @Test func aMultipathDefault_namesBothLegs_andOneAfterALegLosesCarrier() async throws {
        let scenario = try Scenario()
        try scenario.addUplink("up1", "198.51.100", metric: 200)
        try scenario.ns.ip("route del default via 192.0.2.1")
        try scenario.ns.ip("route del default via 198.51.100.1")
        try scenario.ns.ip("route add default nexthop via 192.0.2.1 dev up0 nexthop via 198.51.100.1 dev up1")
        try scenario.ns.waitForCarrier("up1")
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()
        defer { monitor.stop() }
        // The order is the kernel's pick for the internet destination first: compare as sets.
        func legs() -> Set<String>? {
            guard let facts = Self.daemonFacts(harness), facts.hasPrefix("online ") else { return nil }
            let gateways = facts.split(separator: " ").first { $0.hasPrefix("gw=") }?.dropFirst(3) ?? ""
            return Set(gateways.split(separator: ",").map(String.init))
        }
        #expect(legs() == ["192.0.2.1", "198.51.100.1"])
        _ = try Self.facts(scenario, harness)  // in-process agrees

        try scenario.far.ip("link set up1p down")
        try await eventually("one leg left") { legs() == ["192.0.2.1"] }
        #expect(try Self.facts(scenario, harness).hasPrefix("online v4=true v6=false gw=192.0.2.1 reason="))
        try await Task.sleep(for: .milliseconds(500))
        #expect(Self.changed(monitor) == 1, "one Changed for the lost leg: \(monitor.changes)")
        #expect(monitor.changes.last.map { $0.flags & DaemonBusTests.reachable != 0 } == true)
        try scenario.far.ip("link set up1p up")
        try await eventually("both legs again") { legs() == ["192.0.2.1", "198.51.100.1"] }
    }
}
