import Foundation
import Testing
@testable import Reachability

/// issue 51 item 6: `reachctl wait` and `reachctl monitor` notice a dead or a hung reachd within
/// 5 s and say so (reachctl(1), "When reachd goes away or hangs"). A killed reachd loses its bus
/// name, which the bus says at once; a stopped one (SIGSTOP: as a deadlock looks from outside)
/// keeps it and goes quiet, so reachctl asks it every 2 s. Real reachd, private bus, private
/// namespace; the host is local (no default route) so `wait` keeps waiting.
@Suite(rootOnly)
struct ReachctlFollowTests {
    static func started(_ arguments: [String]) async throws -> (DaemonHarness, ChildProcess, TestNamespace) {
        let ns = try ReachctlHoldTests.withoutDefaultRoute()
        let harness = try DaemonHarness(ns, config: "[Interface]\nName=up0\nKind=wired\n")
        try await harness.ready(state: "local")
        let command = try ChildProcess(reachctlPath(), arguments + ["--bus-address", harness.address])
        // Following reachd: a moment to subscribe before reachd is hurt.
        try await Task.sleep(for: .seconds(1))
        #expect(command.isRunning, "\(command.errorOutput)")
        return (harness, command, ns)
    }

    @Test(arguments: [["wait", "--timeout", "2min"], ["monitor"]])
    func aKilledReachdIsSaidWithinFiveSeconds(_ arguments: [String]) async throws {
        let (harness, command, _) = try await Self.started(arguments)
        defer { harness.shutdown() }
        defer { command.kill() }
        let killed = ContinuousClock.now
        harness.killDaemon()
        try command.waitForErrorLine(containing: "reachd went away", timeout: .seconds(5))
        #expect(ContinuousClock.now - killed < .seconds(5), "\(command.errorOutput)")
        #expect(command.isRunning, "it waits for reachd to return: \(command.errorOutput)")
    }

    @Test(arguments: [["wait", "--timeout", "2min"], ["monitor"]])
    func aStoppedReachdIsSaidWithinFiveSecondsAndItsReturnToo(_ arguments: [String]) async throws {
        let (harness, command, ns) = try await Self.started(arguments)
        defer { harness.shutdown() }
        defer { harness.daemon?.signal(SIGCONT) }
        defer { command.kill() }
        let stopped = ContinuousClock.now
        harness.daemon?.signal(SIGSTOP)
        try command.waitForErrorLine(containing: "reachd does not answer (no reply within 2s: hung or stopped?)", timeout: .seconds(5))
        #expect(ContinuousClock.now - stopped < .seconds(5), "\(command.errorOutput)")
        #expect(command.isRunning, "\(command.errorOutput)")
        // Said once, not every 2 s.
        try await Task.sleep(for: .seconds(5))
        #expect(command.errorOutput.components(separatedBy: "does not answer").count == 2, "\(command.errorOutput)")
        harness.daemon?.signal(SIGCONT)
        try command.waitForErrorLine(containing: "reachd answers again", timeout: .seconds(5))
        guard arguments[0] == "wait" else { return }
        // Back to normal: the condition begins, wait returns.
        try ns.ip(ReachctlHoldTests.addDefault)
        #expect(try await command.exit(timeout: .seconds(5)) == 0, "\(command.errorOutput)")
    }

    /// With --daemon a hung reachd ends the command (exit 255), as a dead one does.
    @Test(arguments: [["wait", "--timeout", "2min", "--daemon"], ["monitor", "--daemon"]])
    func withDaemonAStoppedReachdEndsIt(_ arguments: [String]) async throws {
        let (harness, command, _) = try await Self.started(arguments)
        defer { harness.shutdown() }
        defer { harness.daemon?.signal(SIGCONT) }
        defer { command.kill() }
        let stopped = ContinuousClock.now
        harness.daemon?.signal(SIGSTOP)
        let status = try await command.exit(timeout: .seconds(6))
        #expect(status == 255, "\(command.errorOutput)")
        #expect(try #require(command.exitTime) - stopped < .seconds(5))
        #expect(command.errorOutput.contains("reachd does not answer"), "\(command.errorOutput)")
    }
}

/// issue 42: `reachctl wait --internet` with reachd running and its probe off ([Connectivity]
/// URL= not set): the verdict it waits for never comes. It must not wait out its timeout
/// silently for an exit status 1, which ExecCondition= takes for "skip", but fail at once with
/// 255 (reachctl(1)'s rule for errors) and say why; with the probe on it waits as before.
@Suite(rootOnly)
struct ReachctlWaitInternetTests {
    @Test func withTheProbeOffItFailsAtOnceAndSaysWhy() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let harness = try DaemonHarness(ns, config: "[Interface]\nName=up0\nKind=wired\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let (result, elapsed) = try reachctl(["wait", "--internet", "--timeout", "2min", "--bus-address", harness.address], environment: [:])
        #expect(result.status == 255, "\(result)")
        #expect(elapsed < .seconds(5), "at once, not after the timeout: \(elapsed)")
        #expect(result.stderr.contains("the probe is off: set [Connectivity] URL= in reachd.conf"), "\(result.stderr)")
        // The plain wait still works beside it: the host is online.
        #expect(try reachctl(["wait", "--timeout", "10s", "--bus-address", harness.address]).status == 0)
    }
}

extension ReachctlFollowTests {
    /// issue 51: a stopped reachd's last answer is nobody's either. `hold` says within 5 s that it
    /// does not answer and goes on in-process; the condition then ending still ends it at once.
    @Test func holdGoesOnInProcessWhenReachdIsStopped() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let harness = try DaemonHarness(ns, config: "[Interface]\nName=up0\nKind=wired\n")
        defer { harness.shutdown() }
        defer { harness.daemon?.signal(SIGCONT) }
        try await harness.ready()
        let notify = try DaemonHarness.NotifySocket(path: harness.directory + "/hold-notify")
        defer { notify.close() }
        let hold = try ReachctlHoldTests.hold(["online", "--bus-address", harness.busPathAddress], notify: notify, in: ns)
        defer { hold.kill() }
        try await notify.wait(for: "READY=1", ReachctlHoldTests.isReady)

        let stopped = ContinuousClock.now
        harness.daemon?.signal(SIGSTOP)
        try hold.waitForErrorLine(containing: "reachd went away; holding online in-process from now on", timeout: .seconds(5))
        #expect(ContinuousClock.now - stopped < .seconds(5), "\(hold.errorOutput)")
        #expect(hold.errorOutput.contains("reachd does not answer"), "\(hold.errorOutput)")
        let ended = ContinuousClock.now
        try ns.ip("route del default")
        #expect(try await hold.exit(timeout: .seconds(5)) == 0, "\(hold.errorOutput)")
        #expect(try #require(hold.exitTime) - ended < .seconds(1))
    }
}
