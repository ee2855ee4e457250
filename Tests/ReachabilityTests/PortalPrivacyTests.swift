import Foundation
import Testing
@testable import Reachability

/// Nobody else asked: with no probe URL configured, reachd asks the portal's API the network
/// named and sends nothing to any address outside the test's networks, counted by nftables on
/// the namespace's output hook (every packet any process or the kernel sends from it).
@Suite(rootOnly)
struct PortalPrivacyTests {
    /// The test's networks: the uplink's 192.0.2.0/24 and loopback; IPv6 link-local and
    /// link-scope multicast (the uplink has no IPv6 address of its own).
    static let ruleset = """
        table inet privacy {
            chain out {
                type filter hook output priority 0; policy accept;
                ip daddr 192.0.2.1 tcp dport 8443 counter comment "api"
                ip daddr != { 192.0.2.0/24, 127.0.0.0/8 } counter comment "outside4"
                meta nfproto ipv6 ip6 daddr != { ::1, fe80::/10, ff02::/16 } counter comment "outside6"
            }
        }
        """

    /// Packets counted by the rule with `comment`.
    static func packets(_ ns: TestNamespace, _ comment: String) throws -> Int {
        let listing = try ns.exec("/usr/sbin/nft", ["list", "chain", "inet", "privacy", "out"])
        let line = try #require(listing.split(separator: "\n").first { $0.contains("comment \"\(comment)\"") }, "\(listing)")
        let words = line.split(separator: " ")
        let index = try #require(words.firstIndex(of: "packets"), "\(line)")
        return try #require(Int(words[index + 1]), "\(line)")
    }

    @Test func noProbeURLMeansNothingSentOutsideTheNetworksWhileAPortalIsAskedAndAnnounced() async throws {
        let network = try PortalAPITests.Network("pv0")
        defer { network.stop() }
        let ns = network.uplinks.ns
        let rules = try makeScratchDirectory("privacy-nft")
        defer { removeTree(rules) }
        try Self.ruleset.write(toFile: rules + "/privacy.nft", atomically: true, encoding: .utf8)
        _ = try ns.exec("/usr/sbin/nft", ["-f", rules + "/privacy.nft"])
        try await network.harness.ready()
        try network.server.answer(#"{"captive": true, "user-portal-url": "https://192.0.2.1:8443/login", "seconds-remaining": 600}"#)
        try network.lease(network.server.api)
        try await eventually("the API's answer", timeout: .seconds(5), every: .milliseconds(20)) {
            try network.session()["loginURL"] as? String == "https://192.0.2.1:8443/login"
        }
        // Asked, announced, published: a second more of whatever else reachd might send.
        try await Task.sleep(for: .seconds(1))
        #expect(try Self.packets(ns, "api") > 0, "reachd's question to the API passed this chain")
        #expect(try Self.packets(ns, "outside4") == 0)
        #expect(try Self.packets(ns, "outside6") == 0)
        // The counter counts what it should: one datagram to an address outside the networks.
        _ = try ns.exec("/usr/bin/python3", ["-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('198.51.100.7', 9))"])
        #expect(try Self.packets(ns, "outside4") == 1)
    }
}
