import Foundation
import Testing
@testable import Reachability

/// ENOBUFS: the kernel drops notifications when the receive buffer overflows. The mirror must
/// notice, resync from a fresh dump, and keep monitoring (GLib's monitor silently stops here).
@Suite(rootOnly)
struct OverrunTests {
    /// A burst of changes while nobody reads, with a tiny buffer, written by one `ip -batch`.
    static func burst(_ ns: TestNamespace, pairs: Int, prefix: String) throws {
        var lines: [String] = []
        for i in 0..<pairs {
            lines.append("link add \(prefix)\(i) type veth peer name \(prefix)\(i)p")
            lines.append("addr add 10.\(i / 250).\(i % 250).1/24 dev \(prefix)\(i)")
            lines.append("link set \(prefix)\(i) up")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(ns.name)-batch")
        try lines.joined(separator: "\n").appending("\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        try ns.ip("-batch \(file.path)")
    }

    @Test func overrunTriggersResyncAndStateEqualsFreshDump() throws {
        let ns = try TestNamespace()
        var options = KernelMirror.Options()
        options.namespacePath = ns.path
        options.sysfs = SysfsReader(root: "/nonexistent-sysfs")
        options.receiveBufferBytes = 4096
        options.minimumResyncInterval = .zero
        let mirror = try KernelMirror(options: options)
        try mirror.synchronize()
        #expect(mirror.resyncCount == 1)

        try Self.burst(ns, pairs: 60, prefix: "ob")
        _ = mirror.readAvailable()
        let incidents = mirror.takeIncidents()
        #expect(incidents.contains(.overrun), "incidents: \(incidents)")
        #expect(incidents.contains(.resynced))
        #expect(mirror.resyncCount == 2)

        // The resynced state is exactly what a fresh dump derives.
        let fresh = try ns.monitor().snapshot
        let resynced = mirror.state.snapshot
        #expect(resynced.host == fresh.host)
        #expect(Set(resynced.interfaces).symmetricDifference(fresh.interfaces).map(\.name) == [])
        #expect(resynced.interfaces.count == 1 + 120)

        // And monitoring goes on: a later change is still seen.
        try ns.ip("link set ob0p up")
        var seen = false
        for _ in 0..<500 where !seen {
            _ = mirror.readAvailable()
            seen = mirror.state.interface(named: "ob0")?.flags.contains(.reachable) == true
            if !seen { usleep(2000) }
        }
        #expect(seen)
    }

    @Test func threadedMonitorSurvivesOverrun() async throws {
        let ns = try TestNamespace()
        let monitor = try ns.monitor(receiveBufferBytes: 4096)
        try Self.burst(ns, pairs: 80, prefix: "tb")
        try ns.ip("link set tb79p up")
        // Whether or not this run overran (the reader may keep up), the live picture must converge
        // on what a fresh dump says, and the monitor must still be delivering.
        try await eventually(monitor, "tb79 reachable after the burst") { $0.interface("tb79")?.flags.contains(.reachable) == true }
        try await expectMatchesFreshDump(monitor, ns, timeout: .seconds(10))
    }
}
