import Foundation
import Testing
@testable import Reachability

extension StallDaemonTests {
    /// issue 47, a unit's own traffic, with shipped defaults: a real cgroup v2 (made by the test
    /// in a cgroup2 mount of its own, reachd's `--sysfs-root` a copy of /sys by links with it at
    /// fs/cgroup) holds a process with four busy connections, as systemd's would hold a
    /// service's; root's other connections beside it keep flowing. systemd's ControlGroup comes
    /// from an owner of its bus name (`UnitCheckDaemonTests.owner`). An nft rule of the client's
    /// output hook that matches the cgroup (`socket cgroupv2`) marks its packets and the gateway
    /// drops them, silently, as a path that drops one service's traffic does. The unit is
    /// flagged within 15 s (status --unit, CheckUnit's traffic layer, reachd_unit_stalled) and
    /// the host's Stalled stays false throughout, also once the unit's root-owned connections are
    /// the only ones left; without the rule the unit's verdict clears. A second watched unit that
    /// does not run (no cgroup) is asked of systemd again every 10 s, its ControlGroup alone.
    @Test func aUnitsDroppedTrafficFlagsTheUnitAndNeverTheHost() async throws {
        let topology = try Topology("sdunit", shortRTO: false)
        let root = try makeScratchDirectory("reachd-units")
        for entry in try FileManager.default.contentsOfDirectory(atPath: "/sys") where entry != "fs" {
            try FileManager.default.createSymbolicLink(atPath: root + "/" + entry, withDestinationPath: "/sys/" + entry)
        }
        let hierarchy = root + "/fs/cgroup"
        try FileManager.default.createDirectory(atPath: hierarchy, withIntermediateDirectories: true)
        let mounted = try DaemonHarness.execute("/usr/bin/mount", ["-t", "cgroup2", "none", hierarchy])
        try #require(mounted.status == 0, "mount -t cgroup2: \(mounted.stderr)")
        let group = "reachd-unit-\(getpid())"
        try FileManager.default.createDirectory(atPath: hierarchy + "/" + group, withIntermediateDirectories: false)
        defer {
            rmdir(hierarchy + "/" + group)
            _ = try? DaemonHarness.execute("/usr/bin/umount", [hierarchy])
            removeTree(root)
        }

        let server = try topology.startServer()
        defer { server.kill() }
        let others = try topology.startClients(to: Topology.serverV4, count: 4)
        defer { others.kill() }
        // The unit's process: into its cgroup first, so every socket it makes is the cgroup's.
        let unit = try ChildProcess("/usr/sbin/ip", ["netns", "exec", topology.client.name, "/bin/sh", "-c",
            "echo $$ > \(hierarchy)/\(group)/cgroup.procs && exec /usr/bin/python3 -c \"$0\" busy \(Topology.serverV4) \(StallKernelTests.port) 4",
            StallKernelTests.traffic])
        defer { unit.kill() }
        _ = try unit.firstLine(timeout: .seconds(20))

        let harness = try DaemonHarness(
            topology.client, config: "[Units]\nWatch=sdunit.service stopped.service\n", start: false, arguments: ["--sysfs-root", root])
        defer { harness.shutdown() }
        let systemd = try UnitCheckDaemonTests.startOwner(harness, #"{"sdunit.service": {"ControlGroup": ["s", "/\#(group)"]}, "stopped.service": {}}"#)
        defer { systemd.kill() }
        try harness.startDaemon()
        try await harness.ready()
        let watching = ContinuousClock.now

        func unitStatus() throws -> [String: Any] {
            try reachctl(["status", "--unit", "sdunit.service", "--json", "--bus-address", harness.address]).json()
        }
        try await eventually("the unit's own traffic judged flowing", timeout: .seconds(45), every: .milliseconds(500)) {
            ((try unitStatus()["traffic"] as? [String])?.first ?? "").contains("flowing")
        }
        #expect(try unitStatus()["stalled"] as? Bool == false)

        // Mark the cgroup's packets (nft resolves the path in /sys/fs/cgroup: a mount of its own).
        let mark = "nft add table inet svc && nft add chain inet svc out '{ type filter hook output priority 0; }' && "
            + "nft add rule inet svc out socket cgroupv2 level 1 '\"\(group)\"' ip dscp set cs1"
        try topology.client.exec("/usr/bin/unshare", ["-m", "/bin/sh", "-c", "mount -t cgroup2 none /sys/fs/cgroup && " + mark])
        try topology.gateway.exec("/usr/sbin/nft", ["add table inet svc"])
        try topology.gateway.exec("/usr/sbin/nft", ["add chain inet svc relay { type filter hook forward priority 0; }"])
        try topology.gateway.exec("/usr/sbin/nft", ["add rule inet svc relay ip dscp cs1 drop"])
        let begin = ContinuousClock.now
        var hostStalled = 0
        var flagged: Duration?
        while flagged == nil, ContinuousClock.now - begin < .seconds(30) {
            if try Self.status(harness).host.stalled { hostStalled += 1 }
            if try unitStatus()["stalled"] as? Bool == true { flagged = ContinuousClock.now - begin }
            try await Task.sleep(for: .milliseconds(500))
        }
        let took = try #require(flagged, "the unit flagged within 30 s: \(harness.diagnostics)")
        #expect(took <= .seconds(15), "flagged after \(took)")
        // The host's other traffic flows: its verdict stays clear while the unit's holds.
        for _ in 0..<10 {
            if try Self.status(harness).host.stalled { hostStalled += 1 }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(hostStalled == 0, "the host's Stalled was true in \(hostStalled) reads")
        // Root's other traffic ends: the unit's failing connections (root's too) are all the
        // host has, and a watched unit is one owner to the host's rule: still not the host's.
        others.kill()
        for _ in 0..<24 {
            if try Self.status(harness).host.stalled { hostStalled += 1 }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(hostStalled == 0, "the host's Stalled was true in \(hostStalled) reads with the unit's traffic alone")
        let status = try unitStatus()
        #expect(status["stalled"] as? Bool == true, "\(status)")
        let text = try reachctl(["status", "--unit", "sdunit.service", "--bus-address", harness.address]).stdout
        #expect(text.contains("but its own traffic is stalled") && text.contains("sdunit.service's own traffic: c0: stalled: "), "\(text)")
        // A unit that depends on it (ExecCondition=reachctl is --unit …) is held back, naming why.
        let condition = try reachctl(["is", "--unit", "sdunit.service", "online", "--bus-address", harness.address])
        #expect(condition.status == 1 && condition.stderr.contains("sdunit.service's own traffic stopped flowing"), "\(condition)")
        let why = try reachctl(["why", "--unit", "sdunit.service", "--json", "--bus-address", harness.address]).json()
        #expect(why["brokenLayer"] as? String == "traffic", "\(why)")
        // Whose traffic the layer judged is a fact of CheckUnit's reply, not a reading of its words.
        #expect(why["trafficScope"] as? String == "unit", "\(why)")
        let call = try harness.busctlCall("CheckUnit", "ss", "sdunit.service", "")
        #expect(call.stdout.contains(#""TrafficScope":{"type":"s","data":"unit"}"#), "\(call)")
        let metrics = try reachctl(["metrics", "--bus-address", harness.address]).stdout
        #expect(metrics.contains("reachd_unit_stalled{unit=\"sdunit.service\"} 1"), "\(metrics)")
        #expect(metrics.contains("reachd_stalled 0"))
        print("stall(unit): flagged \(took) after its cgroup's packets were dropped; the host's Stalled false in every read: \(text)")

        try topology.gateway.exec("/usr/sbin/nft", ["delete table inet svc"])
        let restored = ContinuousClock.now
        try await eventually("the unit's verdict cleared", timeout: .seconds(45), every: .milliseconds(500)) {
            try unitStatus()["stalled"] as? Bool == false
        }
        print("stall(unit): cleared \(ContinuousClock.now - restored) after the drop rule went")
        // The unit that never ran: one Get a read, a read every 10 s (at the polls of every half Interval=).
        let watched = ContinuousClock.now - watching
        let gets = systemd.lines.filter { $0.hasPrefix("Get stopped.service ") }
        #expect(gets.allSatisfy { $0 == "Get stopped.service ControlGroup" }, "\(gets)")
        // The first read comes as reachd starts, a moment before `watching`.
        let most = Int(watched.components.seconds / 10) + 2
        #expect(gets.count >= 2 && gets.count <= most, "\(gets.count) reads in \(watched), at most \(most)")
        print("stall(unit): a watched unit not running read \(gets.count) times in \(watched), one property each")
    }
}
