import Foundation
import Testing
@testable import Reachability

/// `HostChangeDescribed`: a real reachd on a private bus, watching a private namespace, counted
/// by busctl (a client that is not ours). Exactly one description per `Changed`, with its
/// generation, and `rebind` exactly when the source address of the host's internet path went
/// away or was replaced.
@Suite(rootOnly)
struct HostChangeDaemonTests {
    typealias Scenario = DaemonBusTests.Scenario

    /// One `HostChangeDescribed` as busctl printed it (`a{sv}`: each value `{"type":...,"data":...}`).
    struct Description {
        var generation: UInt64
        var changed: [String]
        var rebind: Bool
        var primary: String
        var sourceAddress: String
        var previousSourceAddress: String

        init?(_ signal: DaemonHarness.Signal) {
            guard signal.member == "HostChangeDescribed", signal.signature == "a{sv}",
                let entries = signal.data.first as? [String: Any]
            else { return nil }
            func value(_ key: String) -> Any? { (entries[key] as? [String: Any])?["data"] }
            guard let generation = value("generation").flatMap(DaemonHarness.jsonNumber), let changed = value("changed") as? [String],
                let rebind = value("rebind") as? Bool, let primary = value("primary") as? String,
                let source = value("sourceAddress") as? String, let previous = value("previousSourceAddress") as? String
            else { return nil }
            self.generation = generation
            self.changed = changed
            self.rebind = rebind
            self.primary = primary
            sourceAddress = source
            previousSourceAddress = previous
        }
    }

    static func descriptions(_ signals: [DaemonHarness.Signal]) -> [Description] {
        signals.filter { $0.path == DaemonHarness.objectPath }.compactMap(Description.init)
    }

    /// Every `Changed` has exactly one description, of its generation, right after it; and no
    /// description comes without one.
    static func expectOnePerChange(_ signals: [DaemonHarness.Signal], sourceLocation: SourceLocation = #_sourceLocation) {
        let ours = signals.filter { $0.path == DaemonHarness.objectPath && $0.interface == DaemonHarness.interface }
        let changed = ours.compactMap(\.changed).map(\.generation)
        let described = descriptions(ours).map(\.generation)
        #expect(changed == described, "Changed \(changed), described \(described)", sourceLocation: sourceLocation)
        // Every move of the host's answer has a name: no description names nothing.
        #expect(descriptions(ours).allSatisfy { !$0.changed.isEmpty }, sourceLocation: sourceLocation)
        for (index, signal) in ours.enumerated() where signal.member == "Changed" {
            let next = index + 1 < ours.count ? ours[index + 1].member : "nothing"
            #expect(next == "HostChangeDescribed", "after Changed came \(next)", sourceLocation: sourceLocation)
        }
    }

    /// Waits for the first description after `seen` that satisfies `condition`, lets reachd
    /// settle (what one `ip` command sets off comes within a few batches) and returns the
    /// descriptions that came since `seen`.
    static func next(
        _ monitor: DaemonHarness.SignalMonitor, after seen: Int, _ what: String, _ condition: @escaping (Description) -> Bool
    ) async throws -> [Description] {
        try await monitor.wait(for: what) { signals in descriptions(signals).dropFirst(seen).contains(where: condition) }
        try await Task.sleep(for: .milliseconds(700))
        return Array(descriptions(monitor.signals).dropFirst(seen))
    }

    @Test func aSecondAddress_theSourceReplaced_anotherUplink_andOffline_describeWhatMovedAndWhenToRebind() async throws {
        let scenario = try Scenario()
        // Deleting the primary IPv4 address promotes a secondary one, as on most distributions
        // (the kernel's default deletes them all).
        try scenario.ns.exec("/usr/sbin/sysctl", ["-qw", "net.ipv4.conf.up0.promote_secondaries=1"])
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()
        defer { monitor.stop() }

        // A second address that does not become the source: described, no rebind.
        try scenario.ns.ip("addr add 192.0.2.3/24 dev up0")
        var seen = 0
        var got = try await Self.next(monitor, after: seen, "the second address") { $0.changed.contains("addresses") }
        #expect(got.allSatisfy { !$0.rebind }, "\(got)")
        let second = try #require(got.first { $0.changed.contains("addresses") })
        #expect(second.changed == ["addresses"])
        #expect(second.sourceAddress == "192.0.2.2" && second.previousSourceAddress == "192.0.2.2")
        #expect(second.primary == "up0")
        seen += got.count

        // The source replaced: 192.0.2.2 goes, 192.0.2.3 is promoted and becomes the source.
        try scenario.ns.ip("addr del 192.0.2.2/24 dev up0")
        got = try await Self.next(monitor, after: seen, "the source replaced") { $0.changed.contains("sourceAddress") }
        #expect(got.filter(\.rebind).count == 1, "\(got)")
        let replaced = try #require(got.first { $0.rebind })
        #expect(replaced.previousSourceAddress == "192.0.2.2" && replaced.sourceAddress == "192.0.2.3")
        #expect(replaced.changed.contains("sourceAddress") && replaced.changed.contains("addresses"))
        #expect(replaced.primary == "up0")
        seen += got.count

        // Another uplink, worse: the host's path stays, only the available interfaces move.
        try scenario.addUplink("up1", "198.51.100", metric: 200)
        got = try await Self.next(monitor, after: seen, "a second uplink") { $0.changed.contains("interfaces") }
        #expect(got.allSatisfy { !$0.rebind }, "\(got)")
        #expect(got.allSatisfy { $0.sourceAddress == "192.0.2.3" }, "\(got)")
        seen += got.count

        // The primary moves to it: another source, rebind.
        try scenario.ns.ip("route del default via 192.0.2.1 dev up0")
        got = try await Self.next(monitor, after: seen, "the primary moved") { $0.primary == "up1" }
        #expect(got.filter(\.rebind).count == 1, "\(got)")
        let moved = try #require(got.first { $0.primary == "up1" })
        #expect(moved.rebind)
        #expect(moved.changed.contains("primary") && moved.changed.contains("sourceAddress") && moved.changed.contains("gateway"))
        #expect(moved.previousSourceAddress == "192.0.2.3" && moved.sourceAddress == "198.51.100.2")
        seen += got.count

        // Its carrier lost: no path out, the source went away.
        try scenario.far.ip("link set up1p down")
        got = try await Self.next(monitor, after: seen, "offline") { $0.changed.contains("state") }
        let offline = try #require(got.first { $0.changed.contains("state") })
        #expect(offline.rebind)
        #expect(offline.sourceAddress == "" && offline.previousSourceAddress == "198.51.100.2")
        seen += got.count

        // And back: coming online from no source is nothing to rebind.
        try scenario.far.ip("link set up1p up")
        got = try await Self.next(monitor, after: seen, "online again") { $0.sourceAddress == "198.51.100.2" }
        #expect(got.allSatisfy { !$0.rebind }, "\(got)")

        Self.expectOnePerChange(monitor.signals)
    }

    @Test func aMeteredFlagAlone_isDescribedAsExpensive_withoutRebind() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()
        defer { monitor.stop() }

        try harness.writeConfig("[Interface]\nName=up0\nMetered=yes\n")
        harness.daemon?.signal(SIGHUP)
        let got = try await Self.next(monitor, after: 0, "metered") { $0.changed.contains("expensive") }
        #expect(got.count == 1, "\(got)")
        #expect(got.first?.changed == ["expensive"])
        #expect(got.first?.rebind == false)
        #expect(got.first?.sourceAddress == "192.0.2.2")
        Self.expectOnePerChange(monitor.signals)
    }

    @Test func interfaceNoise_sendsNoDescription() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()
        defer { monitor.stop() }
        // A container's bridge: an interface change, none of the host's.
        try scenario.ns.ip("link add docker9 type bridge")
        try scenario.ns.ip("addr add 172.17.0.1/16 dev docker9")
        try scenario.ns.ip("link set docker9 up")
        try await monitor.wait(for: "InterfacesChanged for docker9") { signals in
            signals.contains { $0.member == "InterfacesChanged" && "\($0.data)".contains("docker9") }
        }
        try await Task.sleep(for: .milliseconds(500))
        #expect(Self.descriptions(monitor.signals).isEmpty)
        Self.expectOnePerChange(monitor.signals)
    }
}
