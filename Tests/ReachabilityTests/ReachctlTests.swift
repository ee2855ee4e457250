import Foundation
import Testing
@testable import Reachability

/// reachctl as a user runs it: the real binary against a namespace, output checked field by field.
@Suite(rootOnly)
struct ReachctlTests {
    static func scenario() throws -> TestNamespace {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "up1", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        try ns.ip("-6 addr add 2001:db8::2/64 dev up1 nodad")
        try ns.ip("link add dk1 type bridge")
        try ns.ip("addr add 172.17.0.1/16 dev dk1")
        return ns
    }

    @Test func statusJSONFieldByField() throws {
        let ns = try Self.scenario()
        let result = try reachctl(["status", "--json", "--netns", ns.name, "--sysfs-root", "/"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = try result.json()
        #expect(json["flags"] as? [String] == ["reachable"])
        #expect(json["state"] as? String == "online")
        #expect(json["primaryInterface"] as? String == "up1")
        #expect(json["availableInterfaces"] as? [String] == ["up1"])
        #expect((json["generation"] as? Int ?? 0) >= 1)
        let keys = Array(result.stdout.split(separator: "\"").enumerated().filter { $0.offset % 2 == 1 }.map(\.element).prefix(1))
        #expect(keys == ["flags"], "the snapshot's keys start with flags, as SnapshotJSON builds them")
        let interfaces = try #require(json["interfaces"] as? [[String: Any]])
        #expect(interfaces.map { $0["name"] as? String } == ["lo", "up1p", "up1", "dk1"])
        let up1 = try #require(interfaces.first { $0["name"] as? String == "up1" })
        #expect(up1["index"] as? Int == 3)
        #expect(up1["kind"] as? String == "virtual")
        #expect(up1["flags"] as? [String] == ["reachable"])
        let addresses = try #require(up1["addresses"] as? [String])
        #expect(addresses.first == "192.0.2.2/24")
        #expect(addresses.contains("2001:db8::2/64"))
        let bridge = try #require(interfaces.first { $0["name"] as? String == "dk1" })
        #expect(bridge["kind"] as? String == "bridge")
        #expect(bridge["flags"] as? [String] == [])  // administratively down
        #expect(bridge["addresses"] as? [String] == ["172.17.0.1/16"])
    }

    @Test func interfacesJSONAndExitCodes() throws {
        let ns = try Self.scenario()
        let listed = try reachctl(["interfaces", "--json", "--netns", ns.name])
        #expect(listed.status == 0)
        let interfaces = try #require(try listed.json()["interfaces"] as? [[String: Any]])
        #expect(interfaces.count == 4)
        #expect(interfaces.first?["kind"] as? String == "loopback")
        #expect(interfaces.first?["addresses"] as? [String] == ["127.0.0.1/8", "::1/128"])

        // Not online: exit 1, and the JSON says why.
        try ns.ip("route del default")
        try ns.ip("link set dk1 up")
        let offline = try reachctl(["status", "--json", "--netns", ns.name])
        #expect(offline.status == 1)
        #expect(try offline.json()["state"] as? String == "local")
        #expect(try offline.json()["primaryInterface"] as? String == "")

        // Errors: exit 255 with the offending value named.
        let missing = try reachctl(["status", "--netns", "no-such-ns-\(getpid())"])
        #expect(missing.status == 255)
        #expect(missing.stderr.contains("no-such-ns-\(getpid())"))
        let usage = try reachctl(["status", "--no-such-flag"])
        #expect(usage.status == 255)
        #expect(usage.stderr.contains("--no-such-flag"))
    }

    @Test func monitorJSONPrintsOneLinePerRealChange() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "mo1", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        // The peer lives in another namespace, so flapping it changes only mo1's carrier.
        let far = try TestNamespace("far")
        try ns.ip("link set mo1p netns \(far.name)")
        try far.ip("link set mo1p up")
        let monitor = try ReachctlProcess(["monitor", "--json", "--netns", ns.name])
        defer { _ = monitor.terminate() }
        var lines = try await monitor.waitForLines(1)
        let first = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        #expect(first?["state"] as? String == "online")
        #expect(first?["interfaces"] != nil, "the first line is the full snapshot")

        for round in 0..<3 {
            try far.ip("link set mo1p down")
            lines = try await monitor.waitForLines(2 + 2 * round)
            try far.ip("link set mo1p up")
            lines = try await monitor.waitForLines(3 + 2 * round)
        }
        try await Task.sleep(for: .milliseconds(300))
        lines = monitor.output
        #expect(lines.count == 7, "one line per carrier change, no noise: \(lines)")
        let changes = try lines.dropFirst().map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(changes.map { $0["state"] as? String } == ["offline", "online", "offline", "online", "offline", "online"])
        let generations = changes.compactMap { $0["generation"] as? Int }
        #expect(generations == Array(generations[0]..<(generations[0] + 6)), "generations increase by one")
        #expect(changes[0]["flags"] as? [String] == ["connectionRequired"])
        let changed = changes[0]["changedInterfaces"] as? [[String: Any]]
        #expect(changed?.map { $0["name"] as? String } == ["mo1"])
        #expect(monitor.terminate() == 0)
    }
}
