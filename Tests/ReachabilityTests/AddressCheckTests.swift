import Foundation
import Testing
@testable import Reachability

/// Address checks: the kernel's routing truth (RTM_GETROUTE) combined with link states.
@Suite(rootOnly)
struct AddressCheckTests {
    /// up0: 192.0.2.2/24 and 2001:db8::2/64, default routes via .1 / ::1; alt0: 198.51.100.2/24, no default.
    static func scenario() throws -> TestNamespace {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        try ns.ip("-6 addr add 2001:db8::2/64 dev up0 nodad")
        try ns.ip("-6 route add default via 2001:db8::1 dev up0")
        try ns.ip("link add alt0 type veth peer name alt0p")
        try ns.ip("addr add 198.51.100.2/24 dev alt0")
        try ns.ip("link set alt0p up")
        try ns.ip("link set alt0 up")
        try ns.waitForCarrier("up0")
        try ns.waitForCarrier("alt0")
        return ns
    }

    @Test func ownAddressOnLinkAndViaGateway() throws {
        let ns = try Self.scenario()
        let monitor = try ns.monitor()

        let own = monitor.check(address: "192.0.2.2")
        #expect(own.flags == [.reachable, .isLocalAddress, .isDirect])
        #expect(own.interface == "up0")
        #expect(own.reason == nil)

        let neighbour = monitor.check(address: "192.0.2.7")
        #expect(neighbour.flags == [.reachable, .isDirect])
        #expect(neighbour.interface == "up0")
        #expect(neighbour.gateway == nil)
        #expect(neighbour.source == IPAddress("192.0.2.2"))

        let remote = monitor.check(address: "203.0.113.5")
        #expect(remote.flags == [.reachable])
        #expect(remote.interface == "up0")
        #expect(remote.gateway == IPAddress("192.0.2.1"))

        let remote6 = monitor.check(address: "2001:db8:ffff::5")
        #expect(remote6.flags == [.reachable])
        #expect(remote6.gateway == IPAddress("2001:db8::1"))

        let mapped = monitor.check(address: "::ffff:198.51.100.9")
        #expect(mapped.flags == [.reachable, .isDirect])
        #expect(mapped.interface == "alt0")
        #expect(mapped.addresses == [IPAddress("198.51.100.9")!])

        let scoped = monitor.check(address: "fe80::1%alt0")
        #expect(scoped.interface == "alt0")
        #expect(scoped.flags.contains(.isDirect))

        let general = monitor.check(address: "0.0.0.0")
        #expect(general.flags == [.reachable])
        #expect(general.interface == "up0")
        #expect(monitor.check(address: "::").interface == "up0")
    }

    @Test func routeThroughLinkWithoutCarrierIsConnectionRequired() throws {
        let ns = try Self.scenario()
        try ns.ip("link set up0p down")
        let monitor = try ns.monitor()
        let result = monitor.check(address: "203.0.113.5")
        #expect(!result.isReachable)
        #expect(result.flags == [.connectionRequired])
        #expect(result.reason == .linkDown)
        #expect(result.interface == "up0")
        #expect(monitor.check(address: "0.0.0.0").reason == .linkDown)
        // alt0 still works for its own subnet.
        #expect(monitor.check(address: "198.51.100.9").isReachable)
    }

    @Test func noRouteWithoutDefaultRoute() throws {
        let ns = try Self.scenario()
        try ns.ip("route del default")
        try ns.ip("-6 route del default")
        let monitor = try ns.monitor()
        let result = monitor.check(address: "203.0.113.5")
        #expect(result.flags == [])
        #expect(result.reason == .noRoute)
        #expect(result.interface == "")
        #expect(monitor.check(address: "0.0.0.0").reason == .noRoute)
        #expect(monitor.check(address: "2001:db8:ffff::5").reason == .noRoute)
    }

    @Test func policyRuleIsFollowed() throws {
        let ns = try Self.scenario()
        try ns.ip("route add default via 198.51.100.1 dev alt0 table 100")
        try ns.ip("rule add to 203.0.113.0/24 table 100")
        let monitor = try ns.monitor()
        let ruled = monitor.check(address: "203.0.113.5")
        #expect(ruled.interface == "alt0")
        #expect(ruled.gateway == IPAddress("198.51.100.1"))
        #expect(ruled.isReachable)
        // Outside the rule, the main table still decides.
        #expect(monitor.check(address: "192.0.2.200").interface == "up0")
        #expect(monitor.check(address: "8.8.8.8").interface == "up0")
    }

    /// Blackhole, unreachable and prohibit routes are a policy someone set (a kill switch), told
    /// apart from no route at all (a table without a default, ENETUNREACH).
    @Test func blockingRoutesArePolicyBlockedAndNoRouteIsNoRoute() throws {
        let ns = try Self.scenario()
        try ns.ip("route add blackhole 203.0.113.0/24")
        try ns.ip("route add unreachable 233.252.0.0/24")
        try ns.ip("route add prohibit 198.18.0.0/24")
        try ns.ip("rule add to 198.18.1.0/24 lookup 200")
        let monitor = try ns.monitor()
        for address in ["203.0.113.5", "233.252.0.1", "198.18.0.1"] {
            let result = monitor.check(address: address)
            #expect(result.reason == .policyBlocked && !result.isReachable && result.interface.isEmpty, "\(address): \(result)")
        }
        // Table 200 is empty: the lookup falls through to main, whose default leads out.
        #expect(monitor.check(address: "198.18.1.1").isReachable)
        try ns.ip("route del default")
        try ns.ip("rule add to 198.18.2.0/24 lookup 201 priority 10")
        let refreshed = try ns.monitor()
        #expect(refreshed.check(address: "198.18.2.1").reason == .noRoute, "\(refreshed.check(address: "198.18.2.1"))")
    }

    @Test(arguments: [
        ("", "empty"),
        ("1.2.3", "short, octal or single-number IPv4 form"),
        ("256.1.1.1", "not an IPv4 or IPv6 address"),
        ("2001:db8::1::2", "not an IPv4 or IPv6 address"),
        ("fe80::1%", "invalid scope"),
        ("fe80::1%nosuch0", "no interface named 'nosuch0'"),
        (String(repeating: "1", count: 100), "at most 64"),
    ])
    func invalidTargetsNameTheProblem(target: String, message: String) throws {
        let ns = try TestNamespace("inv")
        let monitor = try ns.monitor()
        let result = monitor.check(address: target)
        #expect(result.reason == .invalidTarget)
        #expect(result.flags == [])
        #expect(result.message?.contains(message) == true, "message: \(result.message ?? "nil")")
    }
}
