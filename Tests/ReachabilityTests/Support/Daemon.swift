import Foundation
@testable import Reachability

/// What the reachctl tests need of a `DaemonHarness`: a private bus and, given a namespace, a
/// reachd on it that already answers (after its first netlink sync).
final class ReachdFixture: @unchecked Sendable {
    let harness: DaemonHarness
    /// The bus address to hand to `reachctl --bus-address` or `ReachabilityClient`.
    var address: String { harness.address }

    init(namespace: TestNamespace?) throws {
        harness = try DaemonHarness(namespace, start: namespace != nil)
        if namespace != nil { try harness.waitUntilServing() }
    }

    func freeze(_ frozen: Bool) { harness.freeze(frozen) }
    func stopDaemon() { harness.stopDaemon() }

    /// A crash, as a restart by systemd follows it: SIGKILL (reachd says goodbye to nobody).
    func killDaemon() { harness.killDaemon() }

    /// reachd started again on the same bus, once it answers.
    func startDaemon() throws {
        try harness.startDaemon()
        try harness.waitUntilServing()
    }
}

/// Runs reachctl to completion with extra environment variables, and how long it took.
func reachctl(_ arguments: [String], environment extra: [String: String]) throws -> (result: CommandResult, elapsed: Duration) {
    let start = ContinuousClock.now
    let child = try ChildProcess(
        reachctlPath(), arguments, environment: ProcessInfo.processInfo.environment.merging(extra) { _, new in new })
    let (status, stdout, stderr) = try child.finish(timeout: .seconds(600))
    return (CommandResult(status: status, stdout: stdout, stderr: stderr), child.exitTime! - start)
}

/// A reachctl started now and awaited later (`wait` while the test changes the network). Its
/// exit is timed when it is reaped, so a busy test pool cannot blur the measurement.
final class BackgroundReachctl: Sendable {
    private let child: ChildProcess
    let started: ContinuousClock.Instant

    init(_ arguments: [String]) throws {
        started = ContinuousClock.now
        child = try ChildProcess(reachctlPath(), arguments)
    }

    /// When it exited; nil while it runs.
    var exitTime: ContinuousClock.Instant? { child.exitTime }

    /// Waits for the exit (at most `timeout`, then kills it) and returns the result and when it
    /// ended.
    func finish(timeout: Duration = .seconds(30)) async throws -> (result: CommandResult, ended: ContinuousClock.Instant) {
        guard try await child.exit(timeout: timeout) != nil, let status = child.waitForExit(timeout: .seconds(2)) else {
            child.kill()
            throw TimedOut(what: "\(child.command) to exit")
        }
        return (CommandResult(status: status, stdout: child.output, stderr: child.errorOutput), child.exitTime!)
    }
}
