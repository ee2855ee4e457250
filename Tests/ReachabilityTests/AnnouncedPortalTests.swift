import Foundation
import Testing
@testable import Reachability

/// RFC 8910 through the real kernel: a router in `far` sends IPv6 router advertisements onto the
/// veth (raw ICMPv6 from Python, as a router daemon would); the kernel in `ns` accepts them and
/// passes option 37 on to rtnetlink listeners, and reachd, as shipped on a private bus, reports
/// the URI as `AnnouncedPortal`, in GetStatus and through reachctl, and drops it when the router
/// withdraws or the link goes down.
/// Serialized as the other suites that start reachd with long-lived children.
@Suite(rootOnly, .serialized)
struct AnnouncedPortalTests {
    /// `ROUTER INTERFACE URI LIFETIME`: one router advertisement from ROUTER (a link-local
    /// address of INTERFACE) to all nodes, with router lifetime LIFETIME seconds, an RDNSS option
    /// and, unless URI is empty, RFC 8910's option (type 37, length in units of 8 octets, the URI
    /// padded with NULs). Hop limit 255, or the receiver drops it (RFC 4861 6.1.2); the kernel
    /// fills in the ICMPv6 checksum of raw ICMPv6 sockets.
    static let routerAdvertisement = """
        import socket, struct, sys
        router, interface, uri, lifetime = sys.argv[1], sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
        index = socket.if_nametoindex(interface)
        sender = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        sender.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
        sender.bind((router, 0, 0, index))
        message = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, lifetime, 0, 0)
        if uri:
            units = (2 + len(uri) + 7) // 8
            message += struct.pack("!BB", 37, units) + uri + b"\\0" * (units * 8 - 2 - len(uri))
        message += struct.pack("!BBHI", 25, 3, 0, 600) + socket.inet_pton(socket.AF_INET6, "2001:db8::53")
        sender.sendto(message, ("ff02::1", 0, 0, index))
        """

    static func advertise(_ scenario: DaemonBusTests.Scenario, uri: String, lifetime: Int = 1800) throws {
        try scenario.far.exec("/usr/bin/python3", ["-c", routerAdvertisement, "fe80::1", "up0p", uri, "\(lifetime)"])
    }

    static func announced(_ client: BusConnection) throws -> String { try DaemonHarness.property(client, "AnnouncedPortal") }

    static func waitFor(_ uri: String, _ client: BusConnection, _ harness: DaemonHarness) async throws {
        let deadline = ContinuousClock.now + waitLimit
        while try announced(client) != uri {
            guard ContinuousClock.now < deadline else {
                throw TimedOut(what: "AnnouncedPortal '\(uri)', is '\(try announced(client))'; \(harness.diagnostics)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The scenario with a router at fe80::1 in `far` whose advertisements up0 accepts, and
    /// reachd ready on it (the caller shuts the harness down).
    static func routerScenario(_ tag: String = #function) async throws -> (DaemonBusTests.Scenario, DaemonHarness) {
        let scenario = try DaemonBusTests.Scenario(tag)
        try scenario.far.ip("addr add fe80::1/64 dev up0p nodad")
        // 2: accepted whatever forwarding says (a namespace's default is 1, and forwarding 0).
        try scenario.ns.exec("/usr/sbin/sysctl", ["-qw", "net.ipv6.conf.up0.accept_ra=2"])
        let harness = try DaemonHarness(scenario.ns)
        do {
            try await harness.ready()
        } catch {
            harness.shutdown()
            throw error
        }
        return (scenario, harness)
    }

    @Test func aRoutersPortalIsReported_andEndsWhenTheRouterWithdrawsOrTheLinkGoesDown() async throws {
        let (scenario, harness) = try await Self.routerScenario()
        defer { harness.shutdown() }
        let client = try harness.connect()
        #expect(try Self.announced(client) == "")

        let monitor = try harness.monitor("type='signal',member='Changed'")
        defer { monitor.stop() }
        let described = try harness.monitor("type='signal',member='HostChangeDescribed'")
        defer { described.stop() }
        let uri = "https://portal.example/api?session=42"
        try Self.advertise(scenario, uri: uri)
        try await Self.waitFor(uri, client, harness)
        let status = try DaemonHarness.jsonData(try harness.busctlCall("GetStatus"))
        #expect("\(status)".contains(uri), "GetStatus carries AnnouncedPortal: \(status)")
        let json = try reachctl(["status", "--json", "--daemon", "--bus-address", harness.address])
        #expect((try? json.json())?["announcedPortal"] as? String == uri, "\(json)")
        let text = try reachctl(["status", "--daemon", "--bus-address", harness.address])
        #expect(text.stdout.contains("Announced portal: \(uri)"), "\(text)")
        // The same announcement again (routers repeat theirs) is no change.
        try Self.advertise(scenario, uri: uri)
        try await Task.sleep(for: .milliseconds(300))
        // Counted by what changed: reachd asks the announced API, and that traffic may have the
        // kernel resolve the gateway, which names the network (a change of its own, "network").
        let portalChanges = described.signals.filter { signal in
            let entries = (signal.data.first as? [String: Any])?["changed"] as? [String: Any]
            return (entries?["data"] as? [String])?.contains("portal") == true
        }
        #expect(portalChanges.count == 1, "one Changed for the announcement: \(monitor.changes) \(described.signals)")

        // The router withdraws (router lifetime 0): the kernel drops its default route, and the URI goes.
        try Self.advertise(scenario, uri: "", lifetime: 0)
        try await Self.waitFor("", client, harness)

        // Announced again, then the link loses carrier: gone, and not back with the carrier.
        // Hostile options: refused, nothing published (issue 24).
        for hostile in ["javascript:alert(1)", "http://plain.example/", "https://x.example/\u{1b}[31m"] {
            try Self.advertise(scenario, uri: hostile)
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try Self.announced(client) == "", "a hostile announcement was published")
        let said = harness.daemonErrorLines.filter { $0.contains("ignoring the captive-portal URI") }
        #expect(said.count == 1, "refused and said once: \(said)")
        try Self.advertise(scenario, uri: "https://again.example/")
        try await Self.waitFor("https://again.example/", client, harness)
        try scenario.carrier(false)
        try await Self.waitFor("", client, harness)
        try scenario.carrier(true)
        try await harness.ready()
        #expect(try Self.announced(client) == "")
    }
}
