import Foundation
import Synchronization
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
}

/// Runs reachctl to completion with extra environment variables, and how long it took.
func reachctl(_ arguments: [String], environment extra: [String: String]) throws -> (result: CommandResult, elapsed: Duration) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: reachctlPath())
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let start = ContinuousClock.now
    try process.run()
    let errData = Mutex<Data>(Data())
    let errReader = Thread { errData.withLock { $0 = err.fileHandleForReading.readDataToEndOfFile() } }
    errReader.start()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let elapsed = ContinuousClock.now - start
    while errReader.isExecuting || !errReader.isFinished { usleep(1000) }
    let result = CommandResult(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData.withLock { $0 }, as: UTF8.self))
    return (result, elapsed)
}

/// A reachctl started now and awaited later (`wait` while the test changes the network). Its
/// exit is timed by the termination handler, so a busy test pool cannot blur the measurement.
final class BackgroundReachctl: @unchecked Sendable {
    private let process = Process()
    private let out = Pipe()
    private let err = Pipe()
    private final class Exit: Sendable { let time = Mutex<ContinuousClock.Instant?>(nil) }
    private let exited = Exit()
    let started: ContinuousClock.Instant

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: reachctlPath())
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        let exited = self.exited
        process.terminationHandler = { _ in exited.time.withLock { $0 = ContinuousClock.now } }
        started = ContinuousClock.now
        try process.run()
    }

    /// When it exited; nil while it runs.
    var exitTime: ContinuousClock.Instant? { exited.time.withLock { $0 } }

    /// Waits for the exit (at most `timeout`, then kills it) and returns the result and when it
    /// ended.
    func finish(timeout: Duration = .seconds(30)) async throws -> (result: CommandResult, ended: ContinuousClock.Instant) {
        let deadline = ContinuousClock.now + timeout
        while exitTime == nil {
            if ContinuousClock.now > deadline {
                kill(process.processIdentifier, SIGKILL)
                throw TimedOut(what: "reachctl \(process.arguments ?? []) to exit")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        process.waitUntilExit()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (CommandResult(status: process.terminationStatus, stdout: stdout, stderr: stderr), exitTime!)
    }
}
