import Foundation
import Testing
@testable import Reachability

/// Radios switched off (rfkill) through reachd against the real kernel: a veth uplink made Wi-Fi
/// by a rule, its switch in a fake sysfs tree (this kernel has no rfkill), taken down as cfg80211
/// takes a blocked phy's links down. Once through the sysfs fallback, once through records on a
/// stand-in for /dev/rfkill (a FIFO: the same read(2) of one record at a time).
@Suite(rootOnly)
struct RadioDaemonTests {
    static let wifiRule = "[Interface]\nName=rw*\nKind=wifi\n"

    static func status(_ harness: DaemonHarness) throws -> [String: Any] {
        try reachctl(["status", "--json", "--bus-address", harness.address]).json()
    }

    static func flags(of name: String, in status: [String: Any]) -> [String] {
        let interface = (status["interfaces"] as? [[String: Any]])?.first { $0["name"] as? String == name }
        return interface?["flags"] as? [String] ?? []
    }

    @Test func aBlockedWiFiTakenDownIsRadioOffInOneChanged_switchedOnAndUpIsOnlineAgain() async throws {
        let tree = try FakeRadioTree()
        defer { tree.remove() }
        try tree.addRadio(link: "rw0", switch: 7)
        let scenario = try DaemonBusTests.Scenario(uplink: "rw0")
        let harness = try DaemonHarness(
            scenario.ns, config: Self.wifiRule, arguments: ["--sysfs-root", tree.root, "--rfkill-device", tree.root + "/rfkill"])
        defer { harness.shutdown() }
        try await harness.ready()
        #expect(harness.daemonErrorLines.contains { $0.contains("radios: \(tree.root)/rfkill absent, reading sysfs on link events") },
                "\(harness.daemonErrorLines)")
        #expect(Self.flags(of: "rw0", in: try Self.status(harness)) == ["reachable", "isWiFi"])

        let monitor = try harness.monitor()
        // `rfkill block wifi`: the kernel records the block, then cfg80211 closes the phy's links.
        try tree.block(7, .soft)
        try scenario.ns.ip("link set rw0 down")
        try await monitor.wait(for: "Changed when the radio went off") { ChangedSignalTests.count("Changed", $0) >= 1 }
        let off = try Self.status(harness)
        #expect(off["state"] as? String == "offline")
        #expect(off["reason"] as? String == "radioOff", "\(off)")
        #expect(Self.flags(of: "rw0", in: off) == ["radioOff", "isWiFi"])
        let reason = try harness.busctl(["get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "Reason"])
        #expect(reason.stdout == "s \"radioOff\"\n", "\(reason)")
        let text = try reachctl(["status", "--bus-address", harness.address]).stdout
        #expect(text.contains("State: offline: rw0 (wifi, radio off)") && text.contains("Reason: radioOff"), "\(text)")
        let table = try reachctl(["interfaces", "--verbose", "--bus-address", harness.address]).stdout
        #expect(table.contains("radio off") && table.contains("radioOff|isWiFi"), "\(table)")
        try await Task.sleep(for: .milliseconds(500))
        #expect(ChangedSignalTests.count("Changed", monitor.signals) == 1, "the block and the link down are one change: \(monitor.changes)")

        // Switched on, the link brought up and its route back (what NetworkManager would do).
        try tree.block(7, [])
        try scenario.ns.ip("link set rw0 up")
        try scenario.ns.ip("route add default via 192.0.2.1 dev rw0 metric 100")
        try await harness.ready(state: "online")
        try await eventually("rw0 without radioOff") { Self.flags(of: "rw0", in: try Self.status(harness)) == ["reachable", "isWiFi"] }
        #expect(try Self.status(harness)["reason"] as? String == "")
        monitor.stop()
    }

    /// An rfkill record in /dev/rfkill's format: idx, type WLAN, op, soft, hard.
    static func record(_ index: UInt32, _ operation: RfkillEvent.Operation, soft: Bool) -> [UInt8] {
        withUnsafeBytes(of: index) { Array($0) } + [RfkillEvent.typeWLAN, operation.rawValue, soft ? 1 : 0, 0]
    }

    @Test func recordsOnTheRfkillDeviceMarkTheLinkWithoutALinkEvent() async throws {
        let tree = try FakeRadioTree()
        defer { tree.remove() }
        try tree.addRadio(link: "rw1", switch: 7)
        let device = tree.root + "/rfkill"
        #expect(mkfifo(device, 0o600) == 0)
        // Held open read-write, so reachd's reads find records or nothing (EAGAIN), never an end.
        let writer = open(device, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        #expect(writer >= 0)
        defer { close(writer) }
        let scenario = try DaemonBusTests.Scenario(uplink: "rw1")
        let harness = try DaemonHarness(scenario.ns, config: Self.wifiRule, arguments: ["--sysfs-root", tree.root, "--rfkill-device", device])
        defer { harness.shutdown() }
        try await harness.ready()
        #expect(harness.daemonErrorLines.contains { $0.contains("radios: following \(device)") }, "\(harness.daemonErrorLines)")
        func send(_ bytes: [UInt8]) { #expect(bytes.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) } == bytes.count) }

        // A block: the link is still up. (A FIFO keeps no record boundaries, as the device does:
        // each record is awaited before the next is sent.)
        send(Self.record(7, .change, soft: true))
        try await eventually("rw1 radioOff") { Self.flags(of: "rw1", in: try Self.status(harness)).contains("radioOff") }
        #expect(try Self.status(harness)["state"] as? String == "online", "a radio off alone moves no route")
        send(Self.record(7, .change, soft: false))
        try await eventually("rw1 radio on") { Self.flags(of: "rw1", in: try Self.status(harness)) == ["reachable", "isWiFi"] }
        #expect(harness.daemon?.isRunning == true)
    }
}
