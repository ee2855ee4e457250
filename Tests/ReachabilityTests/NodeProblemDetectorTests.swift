import Foundation
import Testing
@testable import Reachability

/// issue 46: node-problem-detector's custom plugin configuration (packaging/reachd-npd.json) and
/// `reachctl is --npd`, which its rules run: exit 0 ok, 1 a problem, 2 unknown, one line on
/// standard output. The shipped rules are run as NPD runs them (their path and arguments, the
/// built reachctl in place of /usr/bin/reachctl, pointed at the test's bus), against a real
/// reachd watching a namespace whose link goes down, and with reachd gone.
struct NodeProblemDetectorTests {
    struct Rule {
        var condition: String
        var arguments: [String]
    }

    /// The shipped configuration's rules, and the conditions it declares.
    static func configuration() throws -> (rules: [Rule], conditions: Set<String>, json: [String: Any]) {
        let data = try Data(contentsOf: URL(fileURLWithPath: BusContractTests.packaging + "/reachd-npd.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let rules = try #require(json["rules"] as? [[String: Any]]).map { rule in
            Rule(condition: rule["condition"] as? String ?? "", arguments: [rule["path"] as? String ?? ""] + (rule["args"] as? [String] ?? []))
        }
        let conditions = Set(try #require(json["conditions"] as? [[String: Any]]).compactMap { $0["type"] as? String })
        return (rules, conditions, json)
    }

    /// The rules NPD loads: a custom plugin, each permanent rule on a declared condition, each
    /// running reachctl's `is --npd` with reachd's answer only (`--daemon`: in a container,
    /// an answer in-process would be the container's network).
    @Test func theConfigurationIsACustomPluginOfThreeConditions() throws {
        let (rules, conditions, json) = try Self.configuration()
        #expect(json["plugin"] as? String == "custom")
        #expect(conditions == ["NetworkOffline", "UplinkStalled", "DNSUnreachable"])
        #expect(Set(rules.map(\.condition)) == conditions)
        for rule in rules {
            #expect(rule.arguments.prefix(2) == ["/usr/bin/reachctl", "is"], "\(rule.arguments)")
            #expect(rule.arguments.contains("--npd") && rule.arguments.contains("--daemon"), "\(rule.arguments)")
            for word in rule.arguments.dropFirst(2) where !word.hasPrefix("--") {
                #expect(HostCondition(word: word) != nil, "\(word) is no condition of reachctl is")
            }
        }
    }

    /// What NPD would run for `condition`, asking the reachd on `bus`.
    static func run(_ condition: String, bus: String) throws -> CommandResult {
        let rule = try #require(try configuration().rules.first { $0.condition == condition })
        return try reachctl(Array(rule.arguments.dropFirst()) + ["--bus-address", bus])
    }

    @Test(rootOnly) func theRulesExitAsNPDExpects_okProblemAndUnknown() async throws {
        let scenario = try DaemonBusTests.Scenario()
        try scenario.ns.waitForCarrier("up0")
        let resolvConf = try makeScratchDirectory("reachd-npd") + "/resolv.conf"
        defer { removeTree(URL(fileURLWithPath: resolvConf).deletingLastPathComponent().path) }
        try "nameserver 192.0.2.1\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        let harness = try DaemonHarness(scenario.ns, resolvConf: resolvConf)
        defer { harness.shutdown() }
        try await harness.ready()

        for (condition, line) in [("NetworkOffline", "online: yes\n"), ("UplinkStalled", "not-stalled: yes\n"), ("DNSUnreachable", "dns: yes\n")] {
            let result = try Self.run(condition, bus: harness.address)
            #expect(result.status == 0 && result.stdout == line, "\(condition): \(result)")
        }

        try scenario.carrier(false)
        try await eventually("offline") { try Self.run("NetworkOffline", bus: harness.address).status == 1 }
        let offline = try Self.run("NetworkOffline", bus: harness.address)
        #expect(offline.stdout == "online: no, the host is offline (linkDown)\n", "\(offline)")
        let dns = try Self.run("DNSUnreachable", bus: harness.address)
        #expect(dns.status == 1 && dns.stdout == "dns: no, no configured nameserver is routable through a ready link\n", "\(dns)")
        // Offline is not stalled: stall detection judges only a path that carries traffic.
        #expect(try Self.run("UplinkStalled", bus: harness.address).status == 0)

        // No reachd: unknown, never a verdict in-process of the wrong network.
        harness.stopDaemon()
        for condition in ["NetworkOffline", "UplinkStalled", "DNSUnreachable"] {
            let result = try Self.run(condition, bus: harness.address)
            #expect(result.status == 2 && result.stdout.hasPrefix("unknown: "), "\(condition): \(result)")
            #expect(result.stdout.split(separator: "\n").count == 1)
        }
    }

    /// Usage errors are unknown too (2), with the line; without --npd they stay 255.
    @Test func usageErrorsAreUnknown() throws {
        let typo = try reachctl(["is", "onlin", "--npd"])
        #expect(typo.status == 2 && typo.stdout == "unknown: usage error; see reachctl's standard error\n", "\(typo)")
        #expect(typo.stderr.contains("unknown condition 'onlin'; did you mean 'online'?"), "\(typo)")
        let both = try reachctl(["is", "online", "--npd", "--json"])
        #expect(both.status == 2 && both.stderr.contains("--npd and --json"), "\(both)")
        #expect(try reachctl(["is", "onlin"]).status == 255)
    }
}
