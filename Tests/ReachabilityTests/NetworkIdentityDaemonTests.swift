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
}
