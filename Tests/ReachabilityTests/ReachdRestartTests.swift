import Foundation
import Testing
@testable import Reachability

/// Subscribers that outlive reachd: `reachctl monitor` and `wait` across a real restart of reachd
/// on the private bus (killed, then started again), as systemd restarts it after a crash or an
/// upgrade.
@Suite(rootOnly)
struct ReachdRestartTests {
    typealias Scenario = ReachctlDaemonTests

    /// Waits until `process` wrote `text` to standard error.
    static func stderr(_ process: ReachctlProcess, contains text: String) async throws {
        try await eventually("'\(text)' on stderr: \(process.errorOutput)") { process.errorOutput.contains(text) }
    }

    /// How many watch objects reachd serves now.
    static func watchCount(_ fixture: ReachdFixture) throws -> Int {
        let tree = try fixture.harness.busctl(["tree", "--list", DaemonHarness.busName])
        return tree.stdout.split(separator: "\n").filter { $0.hasPrefix(ReachdContract.watchPathNamespace + "/") }.count
    }

    @Test func monitorsAndWaitsKeepGoingAcrossARestartAndReportTheFlapThatFollows() async throws {
        let ns = try Scenario.scenario()
        let far = try Scenario.farPeer(of: ns)
        try ns.ip("route del default")
        let fixture = try ReachdFixture(namespace: ns)
        let bus = ["--bus-address", fixture.address]
        let host = try ReachctlProcess(["monitor", "--json"] + bus)
        defer { _ = host.terminate() }
        let target = try ReachctlProcess(["monitor", "198.51.100.7"] + bus)
        defer { _ = target.terminate() }
        let online = try BackgroundReachctl(["wait", "--timeout", "120s"] + bus)
        let reachable = try BackgroundReachctl(["wait", "--timeout", "120s", "--target", "198.51.100.7"] + bus)
        // Each target follower holds a watch once subscribed: both there, the waits (the plain one
        // started first, subscribed before its watch-holding sibling) follow reachd, not in-process.
        try await eventually("two watches") { try Self.watchCount(fixture) == 2 }
        var hostLines = try await host.waitForLines(1)
        #expect(try Scenario.object(hostLines[0])["state"] as? String == "local")
        var targetLines = try await target.waitForLines(1)
        #expect(targetLines[0].hasSuffix("198.51.100.7: not reachable: noRoute"), "\(targetLines)")

        // A crash: both monitors say so once and keep running.
        fixture.killDaemon()
        try await Self.stderr(host, contains: "reachctl: reachd went away; waiting for it to return\n")
        try await Self.stderr(target, contains: "reachctl: reachd went away; waiting for it to return\n")
        // The uplink comes while reachd is away: the returned reachd's answer differs, and is printed.
        try ns.ip("route add default via 192.0.2.1 dev up0 metric 100")
        try await Task.sleep(for: .milliseconds(200))
        #expect(online.exitTime == nil && reachable.exitTime == nil, "no reachd, no answer: still waiting")
        try fixture.startDaemon()
        hostLines = try await host.waitForLines(2)
        let back = try Scenario.object(hostLines[1])
        #expect(back["state"] as? String == "online", "\(hostLines)")
        targetLines = try await target.waitForLines(2)
        #expect(targetLines[1].hasSuffix("198.51.100.7: reachable via up0"), "\(targetLines)")
        try await Self.stderr(host, contains: "reachctl: reachd is back\n")
        #expect(host.errorOutput.components(separatedBy: "went away").count == 2, "said once: \(host.errorOutput)")

        let (onlineResult, _) = try await online.finish()
        #expect(onlineResult.status == 0, "\(onlineResult.stderr)")
        #expect(onlineResult.stdout == "online via up0 (virtual)\n")
        let (reachableResult, _) = try await reachable.finish()
        #expect(reachableResult.status == 0, "\(reachableResult.stderr)")

        // A carrier flap after the restart reaches both monitors.
        try far.ip("link set up0p down")
        hostLines = try await host.waitForLines(3)
        #expect(try Scenario.object(hostLines[2])["state"] as? String == "offline", "\(hostLines)")
        targetLines = try await target.waitForLines(3)
        #expect(targetLines[2].hasSuffix("not reachable via up0: linkDown"), "\(targetLines)")
        try far.ip("link set up0p up")
        hostLines = try await host.waitForLines(4)
        #expect(try Scenario.object(hostLines[3])["state"] as? String == "online")
        targetLines = try await target.waitForLines(4)

        // A restart that changes nothing prints nothing.
        fixture.stopDaemon()
        try await Self.stderr(host, contains: "reachctl: reachd is back\nreachctl: reachd went away")
        try fixture.startDaemon()
        try await eventually("back twice: \(target.errorOutput)") {
            target.errorOutput.components(separatedBy: "reachd is back").count == 3
        }
        try await Self.stderr(host, contains: "reachctl: reachd went away; waiting for it to return\nreachctl: reachd is back\n")
        try await Task.sleep(for: .milliseconds(300))
        #expect(host.output.count == 4, "\(host.output)")
        #expect(target.output.count == 4, "\(target.output)")
        #expect(host.terminate() == 0)
        #expect(target.terminate() == 0)
    }

    @Test func aMonitorOutlivesTheBusAndReportsTheFlapThatFollows() async throws {
        let ns = try Scenario.scenario()
        let far = try Scenario.farPeer(of: ns)
        let fixture = try ReachdFixture(namespace: ns)
        let harness = fixture.harness
        // The socket's path, not the address with the guid of this one dbus-daemon.
        let monitor = try ReachctlProcess(["monitor", "--json", "--bus-address", harness.busPathAddress])
        defer { _ = monitor.terminate() }
        _ = try await monitor.waitForLines(1)

        // dbus-daemon restarts: reachd, losing it, exits 1 (systemd would restart it).
        try harness.restartBus()
        try await Self.stderr(monitor, contains: "reachctl: reachd went away; waiting for it to return\n")
        #expect(harness.daemon?.waitForExit(timeout: .seconds(5)) == 1, "\(harness.diagnostics)")
        try fixture.startDaemon()
        try await Self.stderr(monitor, contains: "reachctl: reachd is back\n")
        #expect(monitor.exitTime == nil)
        #expect(monitor.output.count == 1, "nothing differs: \(monitor.output)")

        try far.ip("link set up0p down")
        let lines = try await monitor.waitForLines(2)
        #expect(try Scenario.object(lines[1])["state"] as? String == "offline", "\(lines)")
    }

    @Test func daemonAsksToFailFastWhenReachdGoesAway() async throws {
        let ns = try Scenario.scenario()
        let fixture = try ReachdFixture(namespace: ns)
        let monitor = try ReachctlProcess(["monitor", "--daemon", "--bus-address", fixture.address])
        _ = try await monitor.waitForLines(1)
        // A bare veth is never wired: it waits; its watch of the target shows it subscribed.
        let wait = try BackgroundReachctl(
            ["wait", "--daemon", "--kind", "wired", "--target", "192.0.2.1", "--timeout", "60s", "--bus-address", fixture.address])
        try await eventually("the wait's watch") { try Self.watchCount(fixture) == 1 }
        fixture.killDaemon()
        try await eventually("monitor --daemon ends") { monitor.exitTime != nil }
        #expect(monitor.terminate() == 255)
        #expect(monitor.errorOutput == "reachctl: reachd went away (--daemon: not waiting for it to return)\n")
        let (result, _) = try await wait.finish()
        #expect(result.status == 255)
        #expect(result.stderr == "reachctl: reachd went away while waiting (--daemon: not waiting for it to return)\n")
    }
}
