import Foundation
import Testing
@testable import Reachability

/// The host's answer follows the path the kernel really gives internet traffic: split defaults
/// over a tunnel, a VPN's own table chosen by `ip rule` (wg-quick, Tailscale), a rule added or
/// removed alone; and a tunnel that carries only some ranges leaves the uplink primary.
@Suite(rootOnly)
struct HostPathTests {
    /// An uplink `up0` (192.0.2.2/24, default via 192.0.2.1) and a live tun `tun0` (10.8.0.2/24)
    /// that carries nothing yet.
    static func uplinkAndTunnel(_ ns: TestNamespace) throws -> TunHolder {
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 0)
        try ns.ip("tuntap add dev tun0 mode tun")
        let holder = try TunHolder(name: "tun0", in: ns)
        try ns.ip("addr add 10.8.0.2/24 dev tun0")
        try ns.ip("link set tun0 up")
        return holder
    }

    static func viaTunnel(_ host: HostStatus) -> Bool {
        host.state == .online && host.primaryInterface == "tun0" && host.flags.contains(.isVPN)
    }

    static func viaUplink(_ host: HostStatus) -> Bool {
        host.state == .online && host.primaryInterface == "up0" && !host.flags.contains(.isVPN)
    }

    @Test func splitDefaultOverTunIsPrimaryWithItsCarrier() async throws {
        let ns = try TestNamespace()
        let tun = try Self.uplinkAndTunnel(ns)
        let monitor = try ns.monitor()
        try await eventually(monitor, "online via up0") { Self.viaUplink($0.host) }

        // OpenVPN's redirect-gateway def1: the uplink's default stays, two halves win by length.
        try ns.ip("route add 0.0.0.0/1 dev tun0")
        try ns.ip("route add 128.0.0.0/1 dev tun0")
        let over = try await eventually(monitor, "online via tun0") { Self.viaTunnel($0.host) }
        #expect(over.host.flags == [.reachable, .transientConnection, .isVPN])
        #expect(over.host.underlyingInterface == "up0")
        #expect(over.host.availableInterfaces == ["tun0", "up0"])
        // The address check of an internet address agrees with the host.
        #expect(monitor.check(address: "203.0.113.7").interface == "tun0")
        #expect(monitor.check(address: "0.0.0.0").interface == "tun0")
        // And reachctl says so, as a user reads it.
        let text = try reachctl(["status", "--netns", ns.name])
        #expect(text.stdout.contains("State: online via tun0 (vpn) over up0"), "\(text.stdout)")
        let json = try reachctl(["status", "--json", "--netns", ns.name]).json()
        #expect(json["primaryInterface"] as? String == "tun0")
        #expect(json["underlyingInterface"] as? String == "up0")
        #expect((json["flags"] as? [String])?.contains("isVPN") == true)

        try ns.ip("route del 0.0.0.0/1 dev tun0")
        try ns.ip("route del 128.0.0.0/1 dev tun0")
        let back = try await eventually(monitor, "back on up0") { Self.viaUplink($0.host) }
        #expect(back.host.underlyingInterface == "")
        withExtendedLifetime(tun) {}
    }

    @Test func wgQuickRulesSelectTheTunnelAndARuleRemovedAloneMovesBack() async throws {
        let ns = try TestNamespace()
        let tun = try Self.uplinkAndTunnel(ns)
        let monitor = try ns.monitor()
        try await eventually(monitor, "online via up0") { Self.viaUplink($0.host) }

        // wg-quick: a default in table 51820 for unmarked traffic, the main table for the rest.
        try ns.ip("route add default dev tun0 table 51820")
        try await Task.sleep(for: .milliseconds(100))
        #expect(Self.viaUplink(monitor.snapshot.host), "a table no rule selects moves nothing")
        try ns.ip("rule add not fwmark 51820 table 51820")
        try ns.ip("rule add table main suppress_prefixlength 0")
        let over = try await eventually(monitor, "online via tun0") { Self.viaTunnel($0.host) }
        #expect(over.host.underlyingInterface == "up0")
        // A local subnet still goes through the main table (suppress_prefixlength 0 lets /24s win).
        #expect(monitor.check(address: "192.0.2.77").interface == "up0")

        try ns.ip("rule del not fwmark 51820 table 51820")
        try await eventually(monitor, "back on up0 after the rule alone went") { Self.viaUplink($0.host) }
        withExtendedLifetime(tun) {}
    }

    @Test func aTableChosenByRulePriorityLikeTailscale() async throws {
        let ns = try TestNamespace()
        let tun = try Self.uplinkAndTunnel(ns)
        let monitor = try ns.monitor()
        try ns.ip("route add default dev tun0 table 52")
        try ns.ip("rule add pref 5270 table 52")
        let over = try await eventually(monitor, "online via tun0") { Self.viaTunnel($0.host) }
        #expect(over.host.availableInterfaces == ["tun0", "up0"])
        // A rule of higher priority that sends everything to the main table wins again.
        try ns.ip("rule add pref 5000 table main")
        try await eventually(monitor, "main table first") { Self.viaUplink($0.host) }
        try ns.ip("rule del pref 5000")
        try await eventually(monitor, "table 52 again") { Self.viaTunnel($0.host) }
        withExtendedLifetime(tun) {}
    }

    @Test func aSplitTunnelForPrivateRangesLeavesTheUplinkPrimary() async throws {
        let ns = try TestNamespace()
        let tun = try Self.uplinkAndTunnel(ns)
        let monitor = try ns.monitor()
        for range in ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"] { try ns.ip("route add \(range) dev tun0") }
        try await eventually(monitor, "the tunnel's routes seen") { _ in monitor.check(address: "172.20.1.1").interface == "tun0" }
        let snapshot = monitor.snapshot
        #expect(Self.viaUplink(snapshot.host), "host: \(snapshot.host)")
        #expect(snapshot.host.underlyingInterface == "")
        #expect(monitor.check(address: "10.1.2.3").flags.contains(.isVPN))
        withExtendedLifetime(tun) {}
    }

    @Test func aTunnelOverCellularIsExpensiveAndWWAN() async throws {
        let ns = try TestNamespace()
        let tun = try Self.uplinkAndTunnel(ns)
        let monitor = try ns.monitor(rules: [InterfaceRule(pattern: "up0", kind: .cellular)])
        try ns.ip("route add 0.0.0.0/1 dev tun0")
        try ns.ip("route add 128.0.0.0/1 dev tun0")
        let over = try await eventually(monitor, "online via tun0") { Self.viaTunnel($0.host) }
        #expect(over.host.flags == [.reachable, .transientConnection, .isWWAN, .isVPN, .isExpensive])
        #expect(over.host.underlyingInterface == "up0")
        withExtendedLifetime(tun) {}
    }

    @Test func ipv6SplitDefaultOverTunOnAnIPv6OnlyHost() async throws {
        let ns = try TestNamespace()
        try ns.ip("link add up6 type veth peer name up6p")
        try ns.ip("addr add 2001:db8::2/64 dev up6 nodad")
        try ns.ip("link set up6p up")
        try ns.ip("link set up6 up")
        try ns.ip("route add default via 2001:db8::1 dev up6")
        try ns.ip("tuntap add dev tun6 mode tun")
        let tun = try TunHolder(name: "tun6", in: ns)
        try ns.ip("addr add 2001:db8:8::2/64 dev tun6 nodad")
        try ns.ip("link set tun6 up")
        let monitor = try ns.monitor()
        try await eventually(monitor, "online via up6") { $0.host.state == .online && $0.host.primaryInterface == "up6" }
        try ns.ip("route add ::/1 dev tun6")
        try ns.ip("route add 8000::/1 dev tun6")
        let over = try await eventually(monitor, "online via tun6") { $0.host.primaryInterface == "tun6" }
        #expect(over.host.flags.contains([.reachable, .isVPN]))
        #expect(over.host.underlyingInterface == "up6")
        withExtendedLifetime(tun) {}
    }
}
