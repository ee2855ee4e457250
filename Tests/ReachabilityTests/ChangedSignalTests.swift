import Foundation
import Testing
@testable import Reachability

/// issue 8: `Changed` fires exactly once per change of the host's answer and never otherwise;
/// interface-level changes have `InterfacesChanged`. Counted by busctl, a client that is not ours.
@Suite(rootOnly)
struct ChangedSignalTests {
    typealias Scenario = DaemonBusTests.Scenario

    /// reachd's own `member` signals (its object's), in the order busctl printed them.
    static func signals(_ member: String, _ signals: [DaemonHarness.Signal]) -> [DaemonHarness.Signal] {
        signals.filter { $0.path == DaemonHarness.objectPath && $0.member == member }
    }

    static func count(_ member: String, _ signals: [DaemonHarness.Signal]) -> Int { Self.signals(member, signals).count }

    @Test func containerChurnAndAnIPv6LinkElsewhereSendNoChanged() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()

        // What `docker run` does: a bridge with its subnet, a veth pair with one end enslaved.
        try scenario.ns.ip("link add docker0 type bridge")
        try scenario.ns.ip("addr add 172.17.0.1/16 dev docker0")
        try scenario.ns.ip("link set docker0 up")
        try scenario.ns.ip("link add vethc1 type veth peer name vethc1p")
        try scenario.ns.ip("link set vethc1 master docker0")
        try scenario.ns.ip("link set vethc1 up")
        try scenario.ns.ip("link set vethc1p up")
        // And a link with IPv6 on (link-local address, DAD) that carries no path of this host.
        try scenario.ns.ip("link add lan1 type veth peer name lan1p")
        try scenario.ns.ip("link set lan1p up")
        try scenario.ns.ip("link set lan1 up")
        try await monitor.wait(for: "InterfacesChanged for the new links") { signals in
            signals.contains { $0.member == "InterfacesChanged" && "\($0.data)".contains("lan1") }
        }
        try scenario.ns.ip("link set lan1 mtu 1400")
        try await Task.sleep(for: .milliseconds(1500))  // DAD of lan1's link-local address ends
        let signals = monitor.signals
        #expect(Self.count("Changed", signals) == 0, "\(signals.map(\.member))")
        #expect(Self.count("InterfacesChanged", signals) >= 1)
        // Generation moves with the interface changes, and PropertiesChanged says so, alone.
        let properties = signals.filter { $0.path == DaemonHarness.objectPath }.compactMap(\.propertiesChanged)
        #expect(properties.allSatisfy { Set($0.values.keys) == ["Generation"] }, "\(properties.map(\.values))")
        monitor.stop()
    }

    /// issue 43: PropertiesChanged names only the host's properties whose values moved (each
    /// subscriber's sd-bus or GDBus reads every name it is given), and Generation. Followed from
    /// GetAll through a carrier flap of the primary, as busctl, not our client, sees it.
    @Test func propertiesChangedNamesOnlyWhatMoved() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let all = try harness.busctl([
            "--json=short", "call", DaemonHarness.busName, DaemonHarness.objectPath, "org.freedesktop.DBus.Properties", "GetAll", "s",
            DaemonHarness.interface,
        ])
        var known: [String: String] = [:]
        for (name, value) in (try DaemonHarness.jsonData(all).first as? [String: Any]) ?? [:] {
            known[name] = "\((value as? [String: Any])?["data"] ?? value)"
        }
        #expect(known.count == HostProperty.all.count + 1, "GetAll: \(known.keys.sorted())")
        let monitor = try harness.monitor()
        try scenario.carrier(false)
        try await monitor.wait(for: "Changed on carrier loss") { Self.count("Changed", $0) >= 1 }
        try scenario.carrier(true)
        try await monitor.wait(for: "Changed on carrier return") { Self.count("Changed", $0) >= 2 }
        try await Task.sleep(for: .milliseconds(300))
        let properties = monitor.signals.filter { $0.path == DaemonHarness.objectPath }.compactMap(\.propertiesChanged)
        #expect(properties.count >= 2)
        for signal in properties {
            #expect(signal.values.keys.contains("Generation"), "\(signal.values)")
            for (name, value) in signal.values where name != "Generation" {
                #expect(known[name] != "\(value)", "\(name) named though it stayed \(value)")
                known[name] = "\(value)"
            }
        }
        let named = Set(properties.flatMap(\.values.keys))
        #expect(named.isSuperset(of: ["State", "Flags", "Generation"]) && named.count < known.count, "named: \(named.sorted())")
        monitor.stop()
    }

    @Test func carrierFlapWithIPv6ElsewhereIsExactlyTwoChanged() async throws {
        let scenario = try Scenario()
        // A second, local link: the host stays "local" (not "offline") while the uplink is out.
        try scenario.ns.ip("link add lan2 type veth peer name lan2p")
        try scenario.ns.ip("addr add 10.9.0.1/24 dev lan2")
        try scenario.ns.ip("link set lan2p up")
        try scenario.ns.ip("link set lan2 up")
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()
        try scenario.carrier(false)
        // An IPv6 address on the other link: tentative, then DAD finishes during the outage.
        try scenario.ns.ip("addr add 2001:db8:5::1/64 dev lan2")
        try await monitor.wait(for: "Changed on carrier loss") { Self.count("Changed", $0) >= 1 }
        try scenario.carrier(true)
        try await monitor.wait(for: "Changed on carrier return") { Self.count("Changed", $0) >= 2 }
        try await Task.sleep(for: .milliseconds(1500))  // lan2's DAD ends meanwhile
        #expect(Self.count("InterfacesChanged", monitor.signals) >= 3, "up0 down, lan2's address, up0 up")
        let changes = monitor.changes
        #expect(changes.map(\.flags) == [DaemonBusTests.connectionRequired, DaemonBusTests.reachable], "\(changes)")
        monitor.stop()
    }

    @Test func reachctlMonitorPrintsHostChangesOnlyUnlessAskedForInterfaces() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let hostOnly = try ReachctlProcess(["monitor", "--json", "--bus-address", harness.address])
        let everything = try ReachctlProcess(["monitor", "--interfaces", "--json", "--bus-address", harness.address])
        _ = try await hostOnly.waitForLines(1)
        _ = try await everything.waitForLines(1)
        try scenario.ns.ip("link add vethc2 type veth peer name vethc2p")
        try scenario.ns.ip("addr add 172.18.0.2/16 dev vethc2")
        try scenario.ns.ip("link set vethc2p up")
        try scenario.ns.ip("link set vethc2 up")
        // Once the veth is ready (so the host, when the uplink goes, is "local" at once, not
        // "offline" first and "local" when the veth's readiness arrives later on a busy machine).
        let deadline = ContinuousClock.now + waitLimit
        while !everything.output.contains(where: { $0.contains("\"name\":\"vethc2\",\"kind\":\"virtual\",\"state\":\"ready\",\"flags\":[\"reachable\"") }) {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "vethc2 ready: \(everything.output)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        try scenario.carrier(false)
        let lines = try await hostOnly.waitForLines(2)
        let second = try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any]
        #expect(second?["state"] as? String == "local")
        #expect(second?["underlyingInterface"] as? String == "")
        _ = try await everything.waitForLines(3)
        #expect(hostOnly.terminate() == 0)
        #expect(everything.terminate() == 0)
        #expect(hostOnly.output.count == 2, "the veth appearing printed a line: \(hostOnly.output)")
    }
}
