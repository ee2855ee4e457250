import Foundation
import Testing
@testable import Reachability

/// issue 42 item 2, one vocabulary for DNS and traffic, on the real kernel through reachd with
/// its shipped stall settings: the gateway stops forwarding (a silent black hole for root's 20
/// connections and for the only nameserver, 198.51.100.53, beyond it), and the system's lookups
/// time out in a row. `status` (text and JSON) and `why` (text and JSON) must tell one story:
/// the nameserver named and routable, the same count of timeouts everywhere, stalled
/// everywhere, and no evidence line with nothing in it. In the timing pass (stall traffic).
@Suite(rootOnly, .serialized)
struct StallVocabularyTests {
    typealias Topology = StallKernelTests.Topology
    static let nameserver = "198.51.100.53"

    @Test func statusWhyAndJSONAgreeAboutAStallWithDNSTimeouts() async throws {
        let topology = try Topology("svdns", shortRTO: false)
        let server = try topology.startServer()
        defer { server.kill() }
        let resolvConf = try ConnectivityNameTests.ResolvConf(nameserver: Self.nameserver)
        let harness = try DaemonHarness(topology.client, resolvConf: resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()
        let clients = try topology.startClients(to: Topology.serverV4, count: 20)
        defer { clients.kill() }
        try await Task.sleep(for: .seconds(3))
        try topology.forwarding(false)
        _ = try await StallDaemonTests.until("stalled", harness, timeout: .seconds(45)) { $0.stalled }
        for index in 1...6 {
            let answer = try harness.busctlCall("CheckHost", "su", "name\(index).example", "300")
            #expect(answer.stdout.contains("dnsTimeout"), "\(answer)")
        }
        // The next poll (every 2 s while stalled) carries the count.
        let begin = ContinuousClock.now
        while (try StallDaemonTests.status(harness).stall?.dnsTimeouts ?? 0) < 6, ContinuousClock.now - begin < .seconds(10) {
            try await Task.sleep(for: .milliseconds(500))
        }
        let bus = ["--bus-address", harness.address]

        let status = try reachctl(["status"] + bus).stdout
        let lines = status.split(separator: "\n").map(String.init)
        let state = try #require(lines.first { $0.hasPrefix("State: ") }, "\(status)")
        let dns = try #require(lines.first { $0.hasPrefix("DNS: ") }, "\(status)")
        // Root's 20 connections, and reachd's own recheck of one of them while stalled.
        let waiting = state.firstMatch(of: /stalled: (\d+) sockets waiting for \d+ s, nothing received, 6 DNS timeouts in a row$/)
        #expect((waiting.flatMap { Int($0.1) } ?? 0) >= 20, "\(status)")
        #expect(dns.hasPrefix("DNS: \(Self.nameserver) routable, but 6 lookups in a row timed out"), "\(status)")
        #expect(!status.contains("a nameserver is") && !status.contains("reachable"), "nothing unnamed, nothing that reads as answering: \(status)")

        let json = try reachctl(["status", "--verbose", "--json"] + bus).json()
        #expect(json["stalled"] as? Bool == true)
        let servers = try #require(json["nameservers"] as? [[String: Any]], "\(json)")
        #expect(servers.count == 1 && servers[0]["address"] as? String == Self.nameserver && servers[0]["routable"] as? Bool == true, "\(servers)")
        let evidence = try #require(json["stallEvidence"] as? [String: Any], "\(json.keys.sorted())")
        #expect(evidence["dnsTimeouts"] as? Int == 6 && (evidence["socketsFailing"] as? Int ?? 0) >= 20, "\(evidence)")

        let why = try reachctl(["why"] + bus).stdout
        #expect(why.contains("\(Self.nameserver): routable via c0") && why.contains("6 lookup(s) in a row timed out"), "\(why)")
        #expect(why.contains("c0: stalled: ") && why.contains("6 DNS timeouts in a row"), "\(why)")
        let whyJSON = try reachctl(["why", "--json"] + bus).json()
        let layers = try #require(whyJSON["layers"] as? [[String: Any]])
        for layer in layers {
            let facts = layer["evidence"] as? [String] ?? []
            for fact in facts {
                // No line with nothing in it: no zero counts, no empty text.
                #expect(!fact.isEmpty && !fact.contains(" 0 of ") && !fact.contains("0 socket") && !fact.contains("for 0s"), "\(layer)")
            }
        }
        let statuses = Dictionary(uniqueKeysWithValues: layers.map { ($0["layer"] as? String ?? "", $0["status"] as? String ?? "") })
        #expect(statuses["traffic"] == "broken" && statuses["dns"] != "ok", "stalled and timing out, as status says: \(statuses)")
    }
}
