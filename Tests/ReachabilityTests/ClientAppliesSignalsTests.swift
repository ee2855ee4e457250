import Foundation
import Testing
@testable import Reachability

/// issue 43, item 3: clients apply what they are sent. After its first snapshot `reachctl
/// monitor` makes no method call per change (its match narrows to `Updated` once), counted by busctl (a monitor of the bus, not our
/// client); the snapshot a client keeps from the signals alone is the one it would read; and a
/// flap of a link that is not the primary names no host property.
@Suite(rootOnly)
struct ClientAppliesSignalsTests {
    typealias Scenario = DaemonBusTests.Scenario

    /// One message as `busctl monitor --json=short` printed it.
    struct Seen {
        var type: String
        var sender: String
        var member: String
    }

    static func messages(_ monitor: DaemonHarness.SignalMonitor) -> [Seen] {
        monitor.child.lines.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return Seen(type: object["type"] as? String ?? "", sender: object["sender"] as? String ?? "", member: object["member"] as? String ?? "")
        }
    }

    /// A second, local link that carries none of the host's paths: its flaps are interface changes.
    static func addLocalLink(_ scenario: Scenario) throws {
        try scenario.ns.ip("link add lan2 type veth peer name lan2p")
        try scenario.ns.ip("link set lan2 addrgenmode none")
        try scenario.ns.ip("link set lan2p addrgenmode none")
        try scenario.ns.ip("addr add 10.9.0.1/24 dev lan2")
        try scenario.ns.ip("link set lan2p up")
        try scenario.ns.ip("link set lan2 up")
    }

    /// Flaps lan2 and the uplink's carrier `rounds` times each, waiting for each to be printed.
    static func flap(_ scenario: Scenario, rounds: Int, seen: (String) async throws -> Void) async throws {
        for _ in 0..<rounds {
            try scenario.ns.ip("link set lan2 down")
            try await seen("\"name\":\"lan2\"")
            try scenario.ns.ip("link set lan2 up")
            try await seen("\"name\":\"lan2\"")
            try scenario.carrier(false)
            try await seen("\"state\":\"local\"")
            try scenario.carrier(true)
            try await seen("\"state\":\"online\"")
        }
    }

    @Test func reachctlMonitorMakesNoMethodCallPerChange() async throws {
        let scenario = try Scenario()
        try Self.addLocalLink(scenario)
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        // Every message on the bus but the monitor's own: calls and the signals alike.
        let bus = try harness.monitor("type='method_call'")
        defer { bus.stop() }
        try await Task.sleep(for: .milliseconds(300))
        let earlier = Self.messages(bus).count
        let monitor = try ReachctlProcess(["monitor", "--interfaces", "--json", "--bus-address", harness.address])
        _ = try await monitor.waitForLines(1)
        // The monitor is the one caller of GetStatus since it started: its unique name.
        try await eventually("the monitor's GetStatus seen by busctl") { Self.messages(bus).dropFirst(earlier).contains { $0.member == "GetStatus" } }
        let name = Self.messages(bus).dropFirst(earlier).first { $0.member == "GetStatus" }?.sender
        try await Task.sleep(for: .milliseconds(300))
        // Calls about reachability; the heartbeat's Peer.Ping every 2 s asks whether reachd's
        // loop answers, not what changed.
        let before = Self.messages(bus).filter { $0.sender == name && $0.member != "Ping" }
        // GetStatus carries the interfaces of its generation: the probe's call, then the snapshot
        // to follow, read again once the matches are made (a change between would be lost).
        let snapshotCalls = before.map(\.member).filter { $0 == "GetStatus" || $0 == "ListInterfaces" }
        #expect(snapshotCalls == ["GetStatus", "GetStatus"], "the first snapshot's calls: \(before.map(\.member))")
        var printed = 1
        try await Self.flap(scenario, rounds: 3) { wanted in
            // The change asked for may come with others (an address's route): wait for its line.
            let start = printed
            try await eventually("\(wanted) in \(monitor.output)") { monitor.output.dropFirst(start).contains { $0.contains(wanted) } }
            printed = monitor.output.count
        }
        try await Task.sleep(for: .milliseconds(300))
        let after = Self.messages(bus).filter { $0.sender == name && $0.member != "Ping" }
        // Once, at the first Updated: the match narrowed to it (AddMatch, RemoveMatch of the broad
        // one), calls to the bus, not per change.
        let since = after.dropFirst(before.count).map(\.member)
        #expect(!before.isEmpty && since.sorted() == ["AddMatch", "RemoveMatch"], "calls after the first snapshot: \(since)")
        // Every change was printed: the generations rise with every line (reachd tells one loop
        // turn's changes as one, under the turn's last generation, so they may skip), and the
        // last line is the host as reachd answers now.
        let lines = monitor.output.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let generations = lines.compactMap { ($0["generation"] as? NSNumber)?.uint64Value }
        #expect(generations.count == lines.count && generations.count >= 13, "\(monitor.output)")
        #expect(zip(generations, generations.dropFirst()).allSatisfy { $1 > $0 }, "\(generations)")
        let now = try ReachabilityClient(bus: .address(harness.address)).snapshot()
        #expect(generations.last == now.generation)
        #expect(lines.last?["state"] as? String == "online" && lines.last?["primaryInterface"] as? String == now.host.primaryInterface)
        #expect(monitor.terminate() == 0)

        // `reachctl status` is one call: the probe's GetStatus carries the whole picture.
        let seen = Self.messages(bus).count
        let status = try reachctl(["status", "--bus-address", harness.address])
        #expect(status.status == 0 && status.stdout.contains("up0"), "\(status)")
        try await Task.sleep(for: .milliseconds(300))
        let statusCalls = Self.messages(bus).dropFirst(seen).map(\.member).filter { $0 == "GetStatus" || $0 == "ListInterfaces" }
        #expect(statusCalls == ["GetStatus"], "reachctl status's calls: \(statusCalls)")

        // So is `reachctl is` with a condition on the interfaces' kinds (up0, a veth, is virtual).
        let viaSeen = Self.messages(bus).count
        let via = try reachctl(["is", "online", "via-virtual", "--bus-address", harness.address])
        #expect(via.status == 0, "\(via)")
        try await Task.sleep(for: .milliseconds(300))
        let viaCalls = Self.messages(bus).dropFirst(viaSeen).map(\.member).filter { $0 == "GetStatus" || $0 == "ListInterfaces" }
        #expect(viaCalls == ["GetStatus"], "reachctl is online via-virtual's calls: \(viaCalls)")
    }

    /// The snapshot kept from the signals is the one a read gives, the facts beside the fixed
    /// struct included: lan2's ExpensiveReason with each of its flaps, the uplink's NetworkID
    /// once its gateway's address is known.
    @Test func theSnapshotKeptFromSignalsIsTheOneRead() async throws {
        let scenario = try Scenario()
        try Self.addLocalLink(scenario)
        let harness = try DaemonHarness(scenario.ns, config: "[Interface]\nName=lan2\nMetered=yes\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try ReachabilityClient(bus: .address(harness.address))
        let first = try client.followSnapshot()
        var changes: [ReachabilityChange] = []
        let pump = { () throws -> Void in
            for event in try client.nextEvents(timeout: .milliseconds(20)) {
                if case let .change(change) = event { changes.append(change) }
            }
        }
        try await Self.flap(scenario, rounds: 2) { _ in
            let count = changes.count
            let deadline = ContinuousClock.now + waitLimit
            while changes.count == count {
                guard ContinuousClock.now < deadline else { throw TimedOut(what: "a change after \(changes.count)") }
                try pump()
            }
        }
        try scenario.ns.ip("neigh replace 192.0.2.1 lladdr 02:00:5e:10:00:01 dev up0 nud permanent")
        // Until the network settles (the gateway's answer): then the kept and the read agree.
        var read = try ReachabilityClient(bus: .address(harness.address)).snapshot()
        let deadline = ContinuousClock.now + waitLimit
        while client.followed?.generation != read.generation || read.interfaces.allSatisfy({ $0.networkID.isEmpty }) {
            guard ContinuousClock.now < deadline else { break }
            try pump()
            read = try ReachabilityClient(bus: .address(harness.address)).snapshot()
        }
        var kept = try #require(client.followed)
        kept.stallEvidence = read.stallEvidence
        #expect(kept == read, "kept \(kept)\nread \(read)")
        #expect(read.interfaces.contains { !$0.networkID.isEmpty }, "no NetworkID: \(read.interfaces)")
        #expect(read.interfaces.contains { $0.expensiveReason == .configuration }, "no ExpensiveReason: \(read.interfaces)")
        let generations = [first.generation] + changes.map(\.generation)
        #expect(zip(generations, generations.dropFirst()).allSatisfy { $1 > $0 }, "\(generations)")
    }

    /// A flap of a link that is not the primary moves no host property: PropertiesChanged names
    /// Generation alone.
    @Test func aFlapOfANonPrimaryLinkNamesNoHostProperty() async throws {
        let scenario = try Scenario()
        try Self.addLocalLink(scenario)
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()
        defer { monitor.stop() }
        let lan2 = { (signals: [DaemonHarness.Signal]) in signals.count { $0.member == "InterfacesChanged" && "\($0.data)".contains("lan2") } }
        for step in 0..<6 {
            // One at a time: a down and an up in the same batch may change nothing in the end.
            let seen = lan2(monitor.signals)
            try scenario.ns.ip("link set lan2 \(step % 2 == 0 ? "down" : "up")")
            try await monitor.wait(for: "InterfacesChanged for lan2 after step \(step)") { lan2($0) > seen }
        }
        try await Task.sleep(for: .milliseconds(300))
        let signals = monitor.signals.filter { $0.path == DaemonHarness.objectPath }
        #expect(signals.count { $0.member == "Changed" } == 0, "\(signals.map(\.member))")
        let properties = signals.compactMap(\.propertiesChanged)
        #expect(properties.count >= 6)
        #expect(properties.allSatisfy { Set($0.values.keys) == ["Generation"] }, "\(properties.map(\.values))")
        // Updated says the same whole, first of each generation: no host value, no description,
        // the interface; so a client applies it on one wake-up.
        let updated = signals.filter { $0.member == "Updated" }
        #expect(updated.count == properties.count, "\(signals.map(\.member))")
        for signal in updated {
            let parts = signal.data
            #expect(parts.count == 6 && (parts[1] as? [String: Any])?.isEmpty == true && (parts[2] as? [String: Any])?.isEmpty == true, "\(parts)")
            #expect("\(parts[3])".contains("lan2"), "\(parts)")
        }
        let order = signals.map(\.member)
        for (index, member) in order.enumerated() where member == "InterfacesChanged" {
            #expect(index > 0 && order[index - 1] == "Updated", "Updated does not come first: \(order)")
        }
    }
}
