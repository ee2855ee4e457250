import Foundation
import Testing
@testable import Reachability

/// `reachctl hold CONDITION...` (what reachd-is@.service runs) against the real kernel in a
/// private namespace and a real reachd on a private bus, with systemd's side played by a real
/// datagram socket the test owns as `NOTIFY_SOCKET`: no READY=1 while the condition does not
/// hold, READY=1 when it begins, and the process gone within a second when it ends. Across a
/// restart of reachd it keeps holding; without reachd it answers in-process.
@Suite(rootOnly)
struct ReachctlHoldTests {
    /// `reachctl hold ARGUMENTS` with `NOTIFY_SOCKET` at `notify`, as PID 1 starts a Type=notify unit.
    /// `in`: run inside that namespace (`ip netns exec`), as a unit runs on the host reachd watches.
    static func hold(_ arguments: [String], notify: DaemonHarness.NotifySocket, in namespace: TestNamespace? = nil) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID"] { environment.removeValue(forKey: key) }
        environment["NOTIFY_SOCKET"] = notify.path
        guard let namespace else { return try ChildProcess(reachctlPath(), ["hold"] + arguments, environment: environment) }
        return try ChildProcess("/usr/sbin/ip", ["netns", "exec", namespace.name, reachctlPath(), "hold"] + arguments, environment: environment)
    }

    static func isReady(_ datagram: DaemonHarness.NotifySocket.Datagram) -> Bool { datagram.fields["READY"] == "1" }

    /// A namespace with up0 ready but no default route yet: local, not online.
    static func withoutDefaultRoute() throws -> TestNamespace {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        try ns.ip("route del default")
        return ns
    }

    static let addDefault = "route add default via 192.0.2.1 dev up0 metric 100"

    @Test func readyWhenTheConditionBeginsAndGoneWithinASecondWhenItEnds() async throws {
        let ns = try Self.withoutDefaultRoute()
        let harness = try DaemonHarness(ns, config: "[Interface]\nName=up0\nKind=wired\n")
        defer { harness.shutdown() }
        try await harness.ready(state: "local")
        let notify = try DaemonHarness.NotifySocket(path: harness.directory + "/hold-notify")
        defer { notify.close() }
        let hold = try Self.hold(["online", "via-wired", "--daemon", "--bus-address", harness.address], notify: notify)
        defer { hold.kill() }

        // Not online: it says why in STATUS= and is not ready.
        let waiting = try await notify.wait(for: "STATUS=waiting") { $0.fields["STATUS"]?.hasPrefix("waiting: ") == true }
        #expect(waiting.datagram.fields["STATUS"]?.contains("online: no, the host is local") == true, "\(waiting.datagram.text)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(!notify.datagrams.contains(where: Self.isReady) && hold.isRunning, "\(notify.datagrams.map(\.text)) \(hold.errorOutput)")

        // The condition begins: READY=1, and the process stays.
        let began = ContinuousClock.now
        try ns.ip(Self.addDefault)
        let ready = try await notify.wait(for: "READY=1", Self.isReady)
        #expect(ready.datagram.time - began < .seconds(1), "READY \(ready.datagram.time - began) after the route")
        #expect(ready.datagram.fields["STATUS"] == "holds: online via-wired", "\(ready.datagram.text)")
        #expect(notify.datagrams.filter(Self.isReady).count == 1)
        try await Task.sleep(for: .milliseconds(300))
        #expect(hold.isRunning, "\(hold.errorOutput)")

        // It ends: exit 0 within a second, one line saying which condition and why.
        let ended = ContinuousClock.now
        try ns.ip("route del default")
        let status = try await hold.exit(timeout: .seconds(5))
        #expect(status == 0, "\(hold.errorOutput)")
        let exited = try #require(hold.exitTime)
        #expect(exited - ended < .seconds(1), "exited \(exited - ended) after the route went")
        #expect(hold.errorLines.filter { !$0.isEmpty } == ["reachctl: no longer holds: online: no, the host is local (noRoute)"]
            || hold.errorOutput.hasPrefix("reachctl: no longer holds: online: no, the host is local"), "\(hold.errorOutput)")
        #expect(notify.datagrams.contains { $0.fields["STOPPING"] == "1" })
        #expect(notify.datagrams.filter(Self.isReady).count == 1, "READY once")
    }

    /// issue 51: a killed reachd's last answer is nobody's. hold says so at once and goes on
    /// in-process, from the kernel's events: the condition still holds, nothing ends; when it
    /// then ends (the default route goes), hold exits within a second, reachd still dead.
    @Test func readyAtOnceWhenItHoldsAlreadyAndGoesOnInProcessWhenReachdIsKilled() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let harness = try DaemonHarness(ns, config: "[Interface]\nName=up0\nKind=wired\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let notify = try DaemonHarness.NotifySocket(path: harness.directory + "/hold-notify")
        defer { notify.close() }
        // Without --daemon, as the unit runs it, and on the host reachd watches, whose kernel
        // its in-process answers then read.
        let hold = try Self.hold(["online", "--bus-address", harness.busPathAddress], notify: notify, in: ns)
        defer { hold.kill() }
        try await notify.wait(for: "READY=1", Self.isReady)
        #expect(!hold.errorOutput.contains("in-process"), "through reachd: \(hold.errorOutput)")

        let killed = ContinuousClock.now
        harness.killDaemon()
        try hold.waitForErrorLine(containing: "reachd went away; holding online in-process from now on")
        #expect(ContinuousClock.now - killed < .seconds(5), "said within 5 s of the kill")
        try await Task.sleep(for: .milliseconds(300))
        #expect(hold.isRunning, "\(hold.errorOutput)")

        let ended = ContinuousClock.now
        try ns.ip("route del default")
        #expect(try await hold.exit(timeout: .seconds(5)) == 0, "\(hold.errorOutput)")
        #expect(try #require(hold.exitTime) - ended < .seconds(1))
        #expect(hold.errorOutput.contains("reachctl: no longer holds: online: no, the host is local"), "\(hold.errorOutput)")
        #expect(notify.datagrams.filter(Self.isReady).count == 1)
    }

    @Test func withoutReachdItFollowsTheKernelInProcess() async throws {
        let ns = try Self.withoutDefaultRoute()
        let directory = try makeScratchDirectory("hold-inproc")
        defer { removeTree(directory) }
        let notify = try DaemonHarness.NotifySocket(path: directory + "/notify")
        defer { notify.close() }
        let hold = try Self.hold(["online", "--netns", ns.name, "--config-dir", directory], notify: notify)
        defer { hold.kill() }
        try await notify.wait(for: "STATUS=waiting") { $0.fields["STATUS"]?.hasPrefix("waiting: ") == true }
        #expect(!notify.datagrams.contains(where: Self.isReady))
        try ns.ip(Self.addDefault)
        try await notify.wait(for: "READY=1", Self.isReady)
        // A carrier loss ends it.
        let ended = ContinuousClock.now
        try ns.ip("link set up0p down")
        #expect(try await hold.exit(timeout: .seconds(5)) == 0, "\(hold.errorOutput)")
        #expect(try #require(hold.exitTime) - ended < .seconds(1))
        #expect(hold.errorOutput.contains("reachctl: no longer holds: online: no"), "\(hold.errorOutput)")
    }

    @Test func outsideSystemdItSaysWhenTheConditionBegins() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let directory = try makeScratchDirectory("hold-plain")
        defer { removeTree(directory) }
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "NOTIFY_SOCKET")
        let hold = try ChildProcess(reachctlPath(), ["hold", "online", "--netns", ns.name, "--config-dir", directory], environment: environment)
        defer { hold.kill() }
        try await eventually("the line; \(hold.output) \(hold.errorOutput)") { hold.output == "holds: online\n" }
        try ns.ip("route del default")
        #expect(try await hold.exit(timeout: .seconds(5)) == 0, "\(hold.errorOutput)")
    }
}

/// `reachctl hold`'s usage errors: exit 255 (reachd-is@.service then fails, visibly, instead of
/// restarting), the word named with the nearest condition.
struct ReachctlHoldCommandLineTests {
    @Test func unknownAndMissingConditionsAreRefused() throws {
        let typo = try reachctl(["hold", "unmeterd"])
        #expect(typo.status == 255, "\(typo.stderr)")
        #expect(typo.stderr.contains("unknown condition 'unmeterd'; did you mean 'unmetered'?"), "\(typo.stderr)")
        let none = try reachctl(["hold"])
        #expect(none.status == 255 && none.stderr.contains("Name at least one condition"), "\(none.stderr)")
    }
}
