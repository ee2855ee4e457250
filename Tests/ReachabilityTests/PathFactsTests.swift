import Foundation
import Testing
@testable import Reachability

/// issue 25, part 2 (the Engine's side): the host's path facts from the real kernel: which
/// families the path carries and through which gateways, and why the host is not online: a
/// kill switch (`unreachable` default in a table every packet is ruled into) is policyBlocked,
/// a dead carrier linkDown, nothing at all noRoute.
@Suite(rootOnly)
struct PathFactsTests {
    static func facts(_ monitor: ReachabilityMonitor, _ what: String, _ expected: PathFacts) async throws {
        try await eventually("\(what): \(monitor.pathFacts)") { monitor.pathFacts == expected }
    }

    @Test func familiesGatewaysAndReasonsFollowTheKernel() async throws {
        let ns = try TestNamespace()
        let monitor = try ns.monitor()
        try await Self.facts(monitor, "nothing", PathFacts(reason: .noRoute))

        try KernelMonitorTests.uplink(ns, "pf0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let v4 = IPAddress("192.0.2.1")!
        try await Self.facts(monitor, "IPv4 only", PathFacts(supportsIPv4: true, gateways: [v4]))

        try ns.ip("-6 addr add 2001:db8::2/64 dev pf0 nodad")
        try ns.ip("-6 route add default via 2001:db8::1 dev pf0")
        let v6 = IPAddress("2001:db8::1")!
        try await Self.facts(monitor, "dual stack", PathFacts(supportsIPv4: true, supportsIPv6: true, gateways: [v4, v6]))

        // A default with no global address of its family carries nothing of it.
        try ns.ip("-6 addr del 2001:db8::2/64 dev pf0")
        try await Self.facts(monitor, "IPv6 without an address", PathFacts(supportsIPv4: true, gateways: [v4]))
        try ns.ip("-6 route flush default")

        // A kill switch: every packet ruled into a table whose default is unreachable.
        try ns.ip("route add unreachable default table 100")
        try ns.ip("rule add pref 100 table 100")
        try await eventually(monitor, "offline behind the kill switch") { $0.host.state != .online }
        try await Self.facts(monitor, "kill switch", PathFacts(reason: .policyBlocked))
        try ns.ip("rule del pref 100 table 100")
        try await Self.facts(monitor, "kill switch gone", PathFacts(supportsIPv4: true, gateways: [v4]))

        try ns.ip("link set pf0p down")
        try await Self.facts(monitor, "carrier lost", PathFacts(reason: .linkDown))
        withExtendedLifetime(monitor) {}
    }
}
