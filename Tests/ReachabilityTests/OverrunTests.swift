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
        var options = KernelSource.Options()
        options.namespacePath = ns.path
        options.sysfs = SysfsReader(root: "/nonexistent-sysfs")
        options.receiveBufferBytes = 4096
        options.minimumResyncInterval = .zero
        let mirror = try HandDrivenKernel(options: options)
        try mirror.synchronize()
        #expect(mirror.resyncCount == 1)

        try Self.burst(ns, pairs: 60, prefix: "ob")
        mirror.readAvailable()
        try mirror.completeDump()
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
            mirror.readAvailable()
            try mirror.completeDump()
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

    /// The kernel's own view, as `ip -j addr` prints it: link name -> its addresses with prefix length.
    static func kernelView(_ ns: TestNamespace) throws -> [String: Set<String>] {
        let output = try ns.ip("-j addr show")
        // ip's warnings share the output (a veth whose peer is being deleted: "Peer netns
        // reference is invalid"); the JSON is the array between them.
        guard let start = output.firstIndex(of: "["), let end = output.lastIndex(of: "]") else {
            throw CommandFailed(command: "ip -j addr show", status: 0, output: output)
        }
        let links = try JSONSerialization.jsonObject(with: Data(output[start...end].utf8)) as? [[String: Any]] ?? []
        var view: [String: Set<String>] = [:]
        for link in links {
            guard let name = link["ifname"] as? String else { continue }
            let addresses = (link["addr_info"] as? [[String: Any]] ?? []).compactMap { info -> String? in
                guard let local = info["local"] as? String, let length = info["prefixlen"] as? Int else { return nil }
                return "\(local)/\(length)"
            }
            view[name] = Set(addresses)
        }
        return view
    }

    static func mirrorView(_ mirror: HandDrivenKernel) -> [String: Set<String>] {
        Dictionary(uniqueKeysWithValues: mirror.state.snapshot.interfaces.map { ($0.name, Set($0.addresses.map(\.description))) })
    }

    /// issue 16: a paused reader, a small buffer and a burst of hundreds of links created, addressed,
    /// half deleted and a quarter set down; once reading resumes, the state equals `ip -j addr`
    /// within 1 s. Twenty rounds, each on top of the last, without a miss.
    @Test func afterEachOverrunTheStateEqualsTheKernelWithinOneSecond() throws {
        let ns = try TestNamespace()
        var options = KernelSource.Options()
        options.namespacePath = ns.path
        options.sysfs = SysfsReader(root: "/nonexistent-sysfs")
        // Big enough that the backlog left at an overrun outlasts one turn of reading (the bug
        // this guards against applied that stale backlog after the dump), small enough to overrun.
        options.receiveBufferBytes = 1 << 20
        let mirror = try HandDrivenKernel(options: options)
        try mirror.synchronize()
        var misses: [String] = []
        var alive: [Int] = []
        var next = 0
        for round in 0..<20 {
            // The links deleted later in the burst are touched first: their last word in what the
            // small queue keeps is "present", and the deletion is among the messages lost.
            let deleted = alive.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
            var lines = deleted.map { "link set v\($0) mtu \(1300 + round)" }
            let created = Array(next..<next + 120)
            next += 120
            for i in created {
                lines.append("link add v\(i) type veth peer name v\(i)p")
                lines.append("addr add 10.\(i / 250).\(i % 250).1/24 dev v\(i)")
                lines.append("link set v\(i) up")
                lines.append("link set v\(i)p up")
            }
            for i in deleted { lines.append("link del v\(i)") }
            alive = alive.filter { !deleted.contains($0) } + created
            for i in alive.enumerated().filter({ $0.offset % 4 == 1 }).map(\.element) { lines.append("link set v\(i) down") }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(ns.name)-round")
            try lines.joined(separator: "\n").appending("\n").write(to: file, atomically: true, encoding: .utf8)
            try ns.ip("-batch \(file.path)")
            try? FileManager.default.removeItem(at: file)

            let resumed = ContinuousClock.now
            var difference: Set<String> = []
            repeat {
                // One turn of the loop: the queue, then the dump it may have started.
                mirror.readAvailable()
                try mirror.completeDump()
                let kernel = try Self.kernelView(ns)
                let mirrored = Self.mirrorView(mirror)
                difference = Set(kernel.keys).symmetricDifference(mirrored.keys)
                    .union(kernel.keys.filter { kernel[$0] != mirrored[$0] && mirrored[$0] != nil })
                if difference.isEmpty { break }
                usleep(5000)
            } while ContinuousClock.now - resumed < .seconds(1)
            if !difference.isEmpty { misses.append("round \(round): differs for \(difference.sorted().prefix(8))") }
        }
        #expect(misses.isEmpty, "\(misses)")
        #expect(mirror.overrunCount > 0, "the 4 KiB buffer never overran: the test proved nothing")
    }
}
