import Foundation
import Testing
@testable import Reachability

/// `reachctl status/monitor --kind/--not-kind`: the library's `PathMonitor` consumed by a program
/// of its own, through reachd and in-process on the same namespace, after the same kernel changes.
extension WatchPathTests {
    static let restrictions = [["--kind", "wired"], ["--kind", "wifi"], ["--not-kind", "wired"]]

    /// Adds the Wi-Fi-classified `pw0` with a default route, its peer in `far` and down: no carrier.
    static func wifiWithoutCarrier(_ ns: TestNamespace, far: TestNamespace) throws {
        try KernelMonitorTests.uplink(ns, "pw0", "198.51.100.2/24", gateway: "198.51.100.1", metric: 200)
        try ns.ip("link set pw0p netns \(far.name)")
    }

    @Test func monitorKindPrintsTheSamePathsThroughReachdAndInProcess() async throws {
        let (ns, far, harness) = try Self.scenario()
        try Self.wifiWithoutCarrier(ns, far: far)
        let viaDaemon = ["--bus-address", harness.address]
        let inProcess = ["--netns", ns.name, "--config-dir", harness.configDirectory]
        let pairs = try Self.restrictions.map { kind in
            (try ReachctlProcess(["monitor", "--json"] + kind + viaDaemon), try ReachctlProcess(["monitor", "--json"] + kind + inProcess))
        }
        defer { for (daemon, local) in pairs { _ = daemon.terminate(); _ = local.terminate() } }
        let (wired, wifi, notWired) = (pairs[0], pairs[1], pairs[2])
        func lines(_ pair: (ReachctlProcess, ReachctlProcess), _ count: Int) async throws {
            _ = try await pair.0.waitForLines(count)
            _ = try await pair.1.waitForLines(count)
        }
        for pair in pairs { try await lines(pair, 1) }

        // The wired uplink's carrier lost and back.
        try far.ip("link set pm0p down")
        try await lines(wired, 2)
        try far.ip("link set pm0p up")
        try await lines(wired, 3)
        // The Wi-Fi link's carrier comes: its default route makes the Wi-Fi paths satisfied.
        try far.ip("link set pw0p up")
        try await lines(wifi, 2)
        try await lines(notWired, 2)
        try await Task.sleep(for: .milliseconds(500))

        // Each line says when it was written: the same paths, at their own moments.
        func paths(_ lines: [String]) -> [String] { lines.map { $0.replacing(#/,"timestamp":"[^"]*"/#, with: "") } }
        for (daemon, local) in pairs {
            #expect(daemon.output.allSatisfy { $0.contains(#","timestamp":""#) }, "\(daemon.output)")
            #expect(paths(daemon.output) == paths(local.output), "through reachd:\n\(daemon.output)\nin-process:\n\(local.output)")
            #expect(daemon.errorOutput == "", "\(daemon.errorOutput)")
        }
        let wiredPaths = try wired.0.output.map(ReachctlDaemonTests.object)
        #expect(wiredPaths.map { $0["status"] as? String } == ["satisfied", "unsatisfied", "satisfied"])
        #expect(wiredPaths[1]["reason"] as? String == "linkDown")
        #expect(wiredPaths[0]["requiredKind"] as? String == "wired")
        let wifiPaths = try wifi.0.output.map(ReachctlDaemonTests.object)
        #expect(wifiPaths.map { $0["status"] as? String } == ["unsatisfied", "satisfied"], "the wired flaps printed nothing")
        #expect(wifiPaths[0]["reason"] as? String == "linkDown")
        #expect(wifiPaths[1]["availableInterfaces"] as? [String] == ["pw0"])
        #expect(wifiPaths[1]["flags"] as? [String] == ["reachable", "isWiFi"])
        let notWiredPaths = try notWired.0.output.map(ReachctlDaemonTests.object)
        #expect(notWiredPaths.map { $0["status"] as? String } == ["unsatisfied", "satisfied"])
        #expect(notWiredPaths[0]["prohibitedKinds"] as? [String] == ["wired"])
    }

    @Test func statusKindIsTheSameThroughReachdAndInProcess() throws {
        let (ns, far, harness) = try Self.scenario()
        try Self.wifiWithoutCarrier(ns, far: far)
        let viaDaemon = ["--bus-address", harness.address]
        let inProcess = ["--netns", ns.name, "--config-dir", harness.configDirectory]
        for kind in Self.restrictions + [["--not-kind", "wired", "--not-kind", "virtual"]] {
            for json in [["--json"], []] {
                let daemon = try reachctl(["status"] + kind + json + viaDaemon)
                let local = try reachctl(["status"] + kind + json + inProcess)
                #expect(daemon.stdout == local.stdout && daemon.status == local.status, "\(kind) \(json): \(daemon) \(local)")
                #expect(daemon.stderr == "" && local.stderr == "")
            }
        }
        let wired = try reachctl(["status", "--kind", "wired"] + viaDaemon)
        #expect(wired.status == 0)
        #expect(wired.stdout == "kind wired: satisfied via pm0 (wired), IPv4 via 192.0.2.1\n", "\(wired.stdout)")
        let verbose = try reachctl(["status", "--kind", "wired", "--verbose"] + viaDaemon)
        #expect(verbose.stdout == "kind wired: satisfied via pm0 (wired) [reachable|isWired], IPv4 via 192.0.2.1\n", "\(verbose.stdout)")
        let wifi = try reachctl(["status", "--kind", "wifi"] + viaDaemon)
        #expect(wifi.status == 1, "unsatisfied exits 1")
        #expect(wifi.stdout == "kind wifi: unsatisfied (offline): linkDown\n", "\(wifi.stdout)")
        let bad = try reachctl(["status", "--not-kind", "modem"] + viaDaemon)
        #expect(bad.status == 255 && bad.stderr.contains("unknown interface kind 'modem'"), "\(bad.stderr)")
    }

    /// PathMonitor follows reachd's name: reachd leaving and returning change nothing a program
    /// sees when the path stays; a change while it is away comes from in-process.
    @Test func monitorKindFollowsReachdAwayAndBack() async throws {
        let (ns, far, harness) = try Self.scenario()
        let monitor = try ReachctlProcess(inNamespace: ns.name, [
            "monitor", "--json", "--kind", "wired", "--bus-address", harness.address, "--config-dir", harness.configDirectory,
        ])
        defer { _ = monitor.terminate() }
        _ = try await monitor.waitForLines(1)
        harness.stopDaemon()
        try await Task.sleep(for: .milliseconds(500))
        #expect(monitor.output.count == 1, "the same path in-process prints nothing: \(monitor.output) \(monitor.errorOutput)")
        try far.ip("link set pm0p down")
        let lines = try await monitor.waitForLines(2)
        #expect(try ReachctlDaemonTests.object(lines[1])["reason"] as? String == "linkDown")
        try harness.startDaemon()
        try harness.waitUntilServing()
        // Back to reachd: the monitor holds a path watch of the new reachd.
        let client = try Self.client(harness)
        try await eventually("a path watch on the returned reachd") { try client.metrics().contains("\nreachd_watches 1\n") }
        try far.ip("link set pm0p up")
        let back = try await monitor.waitForLines(3)
        #expect(try ReachctlDaemonTests.object(back[2])["status"] as? String == "satisfied")
        try await Task.sleep(for: .milliseconds(500))
        #expect(monitor.output.count == 3, "\(monitor.output)")
        #expect(monitor.terminate() == 0)
    }

    /// With --daemon, reachd is the only source: its leaving ends the monitor (exit 255, saying so),
    /// and reachctl's own reading of reachd.conf never stands between a caller and reachd.
    @Test func monitorKindWithDaemonEndsWhenReachdGoes() async throws {
        // `far` holds pm0's peer: let go, it would take pm0 with it.
        let (ns, far, harness) = try Self.scenario()
        defer { withExtendedLifetime(far) {} }
        let broken = try makeScratchDirectory("watchpath-broken-config")
        defer { removeTree(broken) }
        try "[Interface]\nName=pm*\nKind=modem\n".write(toFile: broken + "/reachd.conf", atomically: true, encoding: .utf8)
        let viaDaemon = ["status", "--kind", "wired", "--bus-address", harness.address, "--config-dir", broken]
        try await eventually("pm0's carrier, as reachd sees it") { try reachctl(viaDaemon).status != 1 }
        let status = try reachctl(viaDaemon)
        #expect(status.status == 0 && status.stderr == "", "reachd answers whatever reachctl makes of reachd.conf: \(status)")
        #expect(status.stdout.hasPrefix("kind wired: satisfied via pm0"), "\(status.stdout)")
        let local = try reachctl(["status", "--kind", "wired", "--netns", ns.name, "--config-dir", broken])
        #expect(local.status == 255 && local.stderr.contains("modem"), "in-process, the bad value is named: \(local)")

        let monitor = try ReachctlProcess(inNamespace: ns.name, [
            "monitor", "--json", "--kind", "wired", "--daemon", "--bus-address", harness.address,
        ])
        defer { _ = monitor.terminate() }
        let first = try await monitor.waitForLines(1)
        #expect(try ReachctlDaemonTests.object(first[0])["status"] as? String == "satisfied")
        harness.stopDaemon()
        try await eventually("monitor --daemon --kind ends") { monitor.exitTime != nil }
        #expect(monitor.terminate() == 255)
        #expect(monitor.errorOutput == "reachctl: reachd went away (--daemon: not waiting for it to return)\n")
        #expect(monitor.output.count == 1, "nothing in-process after reachd left: \(monitor.output)")

        // Without --daemon but with a reachd.conf reachctl cannot use: reachd's paths while it
        // answers, and when it goes, an end that names the bad value instead of wrong answers.
        try harness.startDaemon()
        try harness.waitUntilServing()
        let unconfigured = try ReachctlProcess(inNamespace: ns.name, [
            "monitor", "--kind", "wired", "--bus-address", harness.address, "--config-dir", broken,
        ])
        defer { _ = unconfigured.terminate() }
        let line = try await unconfigured.waitForLines(1)
        #expect(line[0].contains("] kind wired: satisfied via pm0"), "\(line)")
        #expect(unconfigured.errorOutput == "")
        harness.stopDaemon()
        try await eventually("monitor --kind ends without a usable reachd.conf") { unconfigured.exitTime != nil }
        #expect(unconfigured.terminate() == 255)
        #expect(unconfigured.errorOutput.hasPrefix("reachctl: reachd went away (cannot answer in-process: "), "\(unconfigured.errorOutput)")
        #expect(unconfigured.errorOutput.contains("unknown interface kind 'modem'"), "\(unconfigured.errorOutput)")
    }
}
