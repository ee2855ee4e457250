import Foundation
import Testing
@testable import Reachability

/// issue 25's path facts through reachd, against the real kernel: IPv4-only, dual-stack,
/// IPv6-only and a `prohibit` rule (a kill switch made of a rule, not a route). Each change of a
/// fact is exactly one `Changed` (counted by busctl, a client that is not ours), and
/// `reachctl status --json` through reachd and in-process give the same facts.
@Suite(rootOnly)
struct PathFactsDaemonTests {
    typealias Scenario = DaemonBusTests.Scenario

    static func changed(_ monitor: DaemonHarness.SignalMonitor) -> Int {
        ChangedSignalTests.count("Changed", monitor.signals)
    }

    /// The facts `reachctl status --json` prints, through reachd and in-process, which must agree.
    static func facts(_ scenario: Scenario, _ harness: DaemonHarness) throws -> String {
        var answers: [String] = []
        for source in [["--bus-address", harness.address, "--daemon"], ["--netns", scenario.ns.name]] {
            let json = try reachctl(["status", "--json"] + source).json()
            let v4 = json["supportsIPv4"] as? Bool ?? false, v6 = json["supportsIPv6"] as? Bool ?? false
            let gateways = (json["gateways"] as? [String] ?? []).joined(separator: ",")
            answers.append("\(json["state"] as? String ?? "?") v4=\(v4) v6=\(v6) gw=\(gateways) reason=\(json["reason"] as? String ?? "?")")
        }
        #expect(answers[0] == answers[1], "through reachd vs in-process")
        return answers[0]
    }

    /// Waits for the `count`th Changed, then long enough that a second one for the same change
    /// would have arrived, and checks there was none.
    static func exactlyOneMore(_ monitor: DaemonHarness.SignalMonitor, _ count: Int, _ what: String) async throws {
        try await monitor.wait(for: "Changed \(count): \(what)") { ChangedSignalTests.count("Changed", $0) >= count }
        try await Task.sleep(for: .milliseconds(500))
        #expect(changed(monitor) == count, "\(what): \(monitor.changes)")
    }

    @Test func familiesAndAProhibitRuleThroughReachdEachOneChanged() async throws {
        let scenario = try Scenario()
        try scenario.far.ip("-6 addr add 2001:db8:1::1/64 dev up0p nodad")
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        #expect(try Self.facts(scenario, harness) == "online v4=true v6=false gw=192.0.2.1 reason=")
        let monitor = try harness.monitor()
        defer { monitor.stop() }

        // Dual stack: the flags do not move, the facts do. The primary's new address is a host
        // change of its own (HostChangeDescribed says `addresses`), the default route another.
        try scenario.ns.ip("-6 addr add 2001:db8:1::2/64 dev up0 nodad")
        try await Self.exactlyOneMore(monitor, 1, "a global IPv6 address on the primary")
        try scenario.ns.ip("-6 route add default via 2001:db8:1::1 dev up0")
        try await Self.exactlyOneMore(monitor, 2, "IPv6 joins")
        #expect(try Self.facts(scenario, harness) == "online v4=true v6=true gw=192.0.2.1,2001:db8:1::1 reason=")

        // IPv6 only: still online, through the IPv6 default.
        try scenario.ns.ip("route del default via 192.0.2.1")
        try await Self.exactlyOneMore(monitor, 3, "IPv4's default goes")
        #expect(try Self.facts(scenario, harness) == "online v4=false v6=true gw=2001:db8:1::1 reason=")

        // A rule that prohibits everything of both families: policyBlocked, not noRoute.
        try scenario.ns.ip("-6 rule add pref 50 prohibit")
        try scenario.ns.ip("rule add pref 50 prohibit")
        try await monitor.wait(for: "offline behind the rule") { signals in
            signals.compactMap(\.changed).last.map { $0.flags & DaemonBusTests.reachable == 0 } ?? false
        }
        try await eventually("policyBlocked") { (try? Self.facts(scenario, harness))?.hasSuffix("reason=policyBlocked") ?? false }
        let blockedFacts = try Self.facts(scenario, harness)
        #expect(!blockedFacts.hasPrefix("online") && blockedFacts.hasSuffix(" v4=false v6=false gw= reason=policyBlocked"), "\(blockedFacts)")
        let blocked = Self.changed(monitor)

        try scenario.ns.ip("-6 rule del pref 50")
        try scenario.ns.ip("rule del pref 50")
        try await monitor.wait(for: "online again") { signals in
            signals.compactMap(\.changed).last.map { $0.flags & DaemonBusTests.reachable != 0 } ?? false
        }
        try await eventually("the IPv6 path back") { (try? Self.facts(scenario, harness)) == "online v4=false v6=true gw=2001:db8:1::1 reason=" }
        #expect(Self.changed(monitor) <= blocked + 1, "\(monitor.changes)")
    }
}
