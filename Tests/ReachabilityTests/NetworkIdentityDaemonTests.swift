import Foundation
import Testing
@testable import Reachability

/// `NetworkID` against the real kernel: the gateway's MAC comes from the kernel's neighbour
/// table (NDA_LLADDR), and the name is the same through reachd and in-process, across an
/// address renewal and a restart of reachd, and another for another router.
@Suite(rootOnly)
struct NetworkIdentityDaemonTests {
    @Test func theNameHoldsAcrossARenewalAndARestartAndChangesWithTheRouter() async throws {
        let ns = try TestNamespace()
        try ns.ip("link add ni0 type veth peer name ni0p")
        try ns.ip("addr add 192.0.2.2/24 dev ni0")
        try ns.ip("link set ni0p up")
        try ns.ip("link set ni0 up")
        try ns.ip("route add default via 192.0.2.1 dev ni0")
        // The router's MAC as ARP would have learnt it (a static entry: no router to answer here).
        try ns.ip("neigh replace 192.0.2.1 lladdr 02:00:5e:10:00:01 dev ni0 nud permanent")

        func names(_ harness: DaemonHarness) async throws -> (daemon: String, inProcess: String) {
            var daemon = "", inProcess = ""
            try await eventually("a name through reachd and in-process: '\(daemon)' '\(inProcess)'", timeout: .seconds(10), every: .milliseconds(50)) {
                daemon = (try reachctl(["status", "--json", "--bus-address", harness.address]).json()["networkID"] as? String) ?? ""
                inProcess = (try reachctl(["status", "--json", "--netns", ns.name]).json()["networkID"] as? String) ?? ""
                return !daemon.isEmpty && !inProcess.isEmpty
            }
            return (daemon, inProcess)
        }

        var harness = try DaemonHarness(ns)
        try await harness.ready(state: nil)
        let first = try await names(harness)
        #expect(first.daemon == first.inProcess, "reachd and the library name the network alike")
        #expect(first.daemon.count == 16)

        // A renewal: another address in the same prefix (the route goes with the old address).
        try ns.ip("addr del 192.0.2.2/24 dev ni0")
        try ns.ip("addr add 192.0.2.3/24 dev ni0")
        try ns.ip("route replace default via 192.0.2.1 dev ni0")
        try ns.ip("neigh replace 192.0.2.1 lladdr 02:00:5e:10:00:01 dev ni0 nud permanent")
        try await eventually("the renewed address", timeout: .seconds(10), every: .milliseconds(50)) {
            (try reachctl(["status", "--json", "--bus-address", harness.address]).json()["state"] as? String) == "online"
        }
        #expect(try await names(harness) == first)

        // A restart of reachd.
        harness.shutdown()
        harness = try DaemonHarness(ns)
        try await harness.ready(state: nil)
        #expect(try await names(harness) == first)

        // Another router on the same prefix: another network.
        try ns.ip("neigh replace 192.0.2.1 lladdr 02:00:5e:10:00:02 dev ni0 nud permanent")
        var other = ""
        try await eventually("another name: '\(other)'", timeout: .seconds(10), every: .milliseconds(50)) {
            other = (try reachctl(["status", "--json", "--bus-address", harness.address]).json()["networkID"] as? String) ?? ""
            return !other.isEmpty && other != first.daemon
        }
        harness.shutdown()
    }

    /// A `[Network]` rule keyed by the name `reachctl interfaces --verbose` shows: on reload the
    /// network is metered (reason configuration) through reachd at once, without a restart, and
    /// in-process alike; another router on the link is another network, which the rule leaves alone.
    @Test func aNetworkRuleByItsName_appliesOnReload_andOnlyToThatNetwork() async throws {
        let ns = try TestNamespace()
        try ns.ip("link add nr0 type veth peer name nr0p")
        try ns.ip("addr add 192.0.2.2/24 dev nr0")
        try ns.ip("link set nr0p up")
        try ns.ip("link set nr0 up")
        try ns.ip("route add default via 192.0.2.1 dev nr0")
        try ns.ip("neigh replace 192.0.2.1 lladdr 02:00:5e:10:00:01 dev nr0 nud permanent")
        let harness = try DaemonHarness(ns)
        defer { harness.shutdown() }
        try await harness.ready(state: nil)

        func interface(_ source: [String]) throws -> [String: Any] {
            let listed = try reachctl(["interfaces", "--json"] + source).json()["interfaces"] as? [[String: Any]] ?? []
            return listed.first { $0["name"] as? String == "nr0" } ?? [:]
        }
        var name = ""
        try await eventually("nr0's network named through reachd", timeout: .seconds(10), every: .milliseconds(50)) {
            name = try interface(["--bus-address", harness.address])["networkID"] as? String ?? ""
            return !name.isEmpty
        }
        let host = try reachctl(["status", "--json", "--bus-address", harness.address]).json()
        #expect(host["networkID"] as? String == name, "the host's network is its primary interface's")
        #expect(host["expensiveReason"] as? String == "")
        let table = try reachctl(["interfaces", "--verbose", "--bus-address", harness.address]).stdout
        #expect(table.contains("NETWORK") && table.contains(name), "\(table)")

        let config = "[Interface]\nName=nr0\nMetered=no\n\n[Network]\nID=\(name)\nMetered=yes\n"
        try harness.writeConfig(config)
        harness.daemon?.signal(SIGHUP)
        try await eventually("metered by the network's rule after the reload", timeout: .seconds(5), every: .milliseconds(50)) {
            let status = try reachctl(["status", "--json", "--bus-address", harness.address]).json()
            let listed = try interface(["--bus-address", harness.address])
            return status["expensiveReason"] as? String == "configuration" && listed["expensiveReason"] as? String == "configuration"
        }
        let inProcess = try reachctl(["status", "--json", "--netns", ns.name, "--config-dir", harness.configDirectory]).json()
        #expect(inProcess["expensiveReason"] as? String == "configuration", "in-process reads the same rule: \(inProcess)")

        // Another router on the link: another network, not metered.
        try ns.ip("neigh replace 192.0.2.1 lladdr 02:00:5e:10:00:02 dev nr0 nud permanent")
        try await eventually("the other network is not metered", timeout: .seconds(10), every: .milliseconds(50)) {
            let status = try reachctl(["status", "--json", "--bus-address", harness.address]).json()
            return status["networkID"] as? String != name && status["expensiveReason"] as? String == ""
        }
    }
}
