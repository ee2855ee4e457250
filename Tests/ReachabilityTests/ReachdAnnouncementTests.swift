import Foundation
import Testing
@testable import Reachability

/// reachd announces what it starts with: once it owns its names, one PropertiesChanged with every
/// property of the host's answer on its object and on the NetworkManager surface's, so a client
/// that caches properties across a restart (Qt reads GetAll once, then trusts the signals) is right
/// at once. The subscriber is there before reachd starts, as a client that outlives reachd is.
@Suite(rootOnly)
struct ReachdAnnouncementTests {
    static let nmName = NetworkManagerCompatibilityTests.nmName
    static let nmPath = NetworkManagerCompatibilityTests.nmPath

    /// GetAll of `interface` at `path`, variants unwrapped, as busctl reads it.
    static func all(_ harness: DaemonHarness, _ service: String, _ path: String, _ interface: String) throws -> NSDictionary {
        let output = try harness.busctl(["--json=short", "call", service, path, "org.freedesktop.DBus.Properties", "GetAll", "s", interface])
        let object = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        let values = try #require((object?["data"] as? [Any])?.first as? [String: Any], "\(output)")
        return NSDictionary(dictionary: values.mapValues { ($0 as? [String: Any])?["data"] ?? $0 })
    }

    /// The announcements on `path` so far: the PropertiesChanged signals that name every property.
    static func announcements(_ signals: [DaemonHarness.Signal], _ path: String, _ names: [String]) -> [NSDictionary] {
        signals.filter { $0.path == path }.compactMap(\.propertiesChanged)
            .filter { Set($0.values.keys) == Set(names) }.map { NSDictionary(dictionary: $0.values) }
    }

    @Test func aSubscriberPresentBeforeReachdStartsGetsEveryValueOnceItOwnsItsNames() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "eth0")
        let harness = try DaemonHarness(uplinks.ns, config: NetworkManagerCompatibilityTests.config, start: false)
        defer { harness.shutdown() }
        let monitor = try harness.monitor("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        defer { monitor.stop() }
        let reachdNames = BusVTable(ReachdContract.serviceMembers).changingProperties
        let nmNames = ["State", "Connectivity", "Metered", "PrimaryConnection"]
        #expect(reachdNames.contains("Flags") && reachdNames.contains("Generation"))

        try harness.startDaemon()
        try await harness.ready()
        // The first PropertiesChanged naming every property (a change of the host's answer later
        // names them all too: only the first one after a start is the announcement).
        var signals = try await monitor.wait(for: "both announcements") {
            !Self.announcements($0, DaemonHarness.objectPath, reachdNames).isEmpty && !Self.announcements($0, Self.nmPath, nmNames).isEmpty
        }
        var own = Self.announcements(signals, DaemonHarness.objectPath, reachdNames)[0]
        var nm = Self.announcements(signals, Self.nmPath, nmNames)[0]
        #expect(own == (try Self.all(harness, DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface)))
        #expect(own["State"] as? String == "online" && own["PrimaryInterface"] as? String == "eth0", "\(own)")
        #expect(nm == (try Self.all(harness, Self.nmName, Self.nmPath, Self.nmName)))
        #expect(nm["State"] as? Int == 70 && nm["Connectivity"] as? Int == 4, "\(nm)")

        // A restart while the link changes: the new reachd's first words are the new values.
        harness.stopDaemon()
        let mark = monitor.signals.count
        try uplinks.far.ip("link set eth0p down")
        try harness.startDaemon()
        try harness.waitUntilServing()
        signals = try await monitor.wait(for: "the restarted reachd's announcements") {
            let since = Array($0.dropFirst(mark))
            return !Self.announcements(since, DaemonHarness.objectPath, reachdNames).isEmpty && !Self.announcements(since, Self.nmPath, nmNames).isEmpty
        }
        signals = Array(signals.dropFirst(mark))
        own = Self.announcements(signals, DaemonHarness.objectPath, reachdNames)[0]
        nm = Self.announcements(signals, Self.nmPath, nmNames)[0]
        #expect(own == (try Self.all(harness, DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface)))
        #expect(own["State"] as? String != "online", "\(own)")
        #expect(nm == (try Self.all(harness, Self.nmName, Self.nmPath, Self.nmName)))
        #expect(nm["State"] as? Int != 70 && nm["Connectivity"] as? Int == 1 && nm["PrimaryConnection"] as? String == "/", "\(nm)")
    }
}
