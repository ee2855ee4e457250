import Foundation
import Synchronization
@testable import Reachability

/// The built `reachd` binary, next to `reachctl` (or `$REACHD`).
func reachdPath() -> String {
    if let path = ProcessInfo.processInfo.environment["REACHD"] { return path }
    return URL(fileURLWithPath: reachctlPath()).deletingLastPathComponent().appendingPathComponent("reachd").path
}

private let fixtureCounter = Atomic<Int>(0)

/// A private D-Bus bus (its own dbus-daemon) and, unless told otherwise, a reachd on it watching
/// one test namespace with an empty configuration directory. Both processes are killed and the
/// directory removed when the value is released.
final class ReachdFixture: @unchecked Sendable {
    let directory: String
    /// The bus address to hand to `reachctl --bus-address` or `ReachabilityClient`.
    let address: String
    private let bus: Process
    private(set) var reachd: Process?

    /// Starts the bus, then reachd (when `namespace` is given), and returns once reachd answers
    /// GetStatus on the bus, which it does only after its first netlink sync (READY).
    init(namespace: TestNamespace?, timeout: Duration = .seconds(10)) throws {
        directory = NSTemporaryDirectory() + "reachd-fixture-\(getpid())-\(fixtureCounter.add(1, ordering: .relaxed).newValue)"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/config", withIntermediateDirectories: true)
        address = "unix:path=\(directory)/bus"

        bus = Process()
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        bus.arguments = ["--session", "--nofork", "--nopidfile", "--address=\(address)"]
        bus.standardOutput = FileHandle.nullDevice
        bus.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try bus.run()
        let deadline = ContinuousClock.now + timeout
        while !FileManager.default.fileExists(atPath: directory + "/bus") {
            guard ContinuousClock.now < deadline, bus.isRunning else {
                throw TimedOut(what: "dbus-daemon to listen on \(address)")
            }
            usleep(2000)
        }
        guard let namespace else { return }

        let log = directory + "/reachd.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: reachdPath())
        daemon.arguments = ["--bus-address", address, "--netns", namespace.name, "--config-dir", directory + "/config"]
        daemon.standardOutput = FileHandle(forWritingAtPath: log)
        daemon.standardError = FileHandle(forWritingAtPath: log)
        try daemon.run()
        reachd = daemon
        // READY: reachd owns its name only after the first complete netlink sync.
        while true {
            if let client = try? ReachabilityClient(bus: .address(address)), (try? client.status()) != nil { return }
            guard ContinuousClock.now < deadline, daemon.isRunning else {
                throw TimedOut(what: "reachd to answer on \(address); its log: \(self.log)")
            }
            usleep(5000)
        }
    }

    /// What reachd wrote so far.
    var log: String { (try? String(contentsOfFile: directory + "/reachd.log", encoding: .utf8)) ?? "" }

    /// Stops (SIGSTOP) or resumes (SIGCONT) reachd: a reachd that owns its name but never answers.
    func freeze(_ frozen: Bool) {
        if let reachd { kill(reachd.processIdentifier, frozen ? SIGSTOP : SIGCONT) }
    }

    /// Ends both processes without ever hanging: SIGTERM for reachd (it takes signals through a
    /// signalfd), SIGKILL after a grace period; SIGKILL for dbus-daemon, because a child spawned
    /// from a Dispatch worker thread inherits a mask that blocks SIGTERM.
    deinit {
        if let reachd {
            kill(reachd.processIdentifier, SIGCONT)
            Self.end(reachd, signal: SIGTERM, grace: .seconds(3))
        }
        Self.end(bus, signal: SIGKILL, grace: .seconds(3))
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Sends `signal`, waits up to `grace` for the exit, then SIGKILL and a reap.
    static func end(_ process: Process, signal: Int32, grace: Duration) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        let deadline = ContinuousClock.now + grace
        while process.isRunning, ContinuousClock.now < deadline { usleep(2000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            while process.isRunning { usleep(2000) }
        }
    }

    /// Stops reachd now (SIGTERM), as a crash or `systemctl stop` would.
    func stopDaemon() {
        if let reachd { Self.end(reachd, signal: SIGTERM, grace: .seconds(3)) }
    }
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
