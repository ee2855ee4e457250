import Foundation
import Synchronization

/// The built `reachctl` binary, next to the test bundle in the build directory.
func reachctlPath() -> String {
    if let path = ProcessInfo.processInfo.environment["REACHCTL"] { return path }
    let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var directory = bundle.deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("reachctl")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
        directory = directory.deletingLastPathComponent()
    }
    let fromExe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
    return URL(fileURLWithPath: fromExe).deletingLastPathComponent().appendingPathComponent("reachctl").path
}

struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String

    /// stdout parsed as one JSON object.
    func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        guard let dictionary = object as? [String: Any] else { throw CommandFailed(command: "json", status: 0, output: stdout) }
        return dictionary
    }
}

/// Runs reachctl to completion, capturing both streams and the exit status.
func reachctl(_ arguments: [String]) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: reachctlPath())
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let errData = Mutex<Data>(Data())
    let errReader = Thread { errData.withLock { $0 = err.fileHandleForReading.readDataToEndOfFile() } }
    errReader.start()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    while errReader.isExecuting || !errReader.isFinished { usleep(1000) }
    return CommandResult(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData.withLock { $0 }, as: UTF8.self))
}

/// A long-running reachctl (monitor) whose stdout lines are collected as they arrive.
final class ReachctlProcess: Sendable {
    private let process: Process
    private final class Lines: Sendable { let value = Mutex<[String]>([]) }
    private let lines = Lines()

    init(_ arguments: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: reachctlPath())
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let handle = out.fileHandleForReading
        let lines = self.lines
        let reader = Thread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    lines.value.withLock { $0.append(line) }
                    pending.removeSubrange(pending.startIndex...newline)
                }
            }
        }
        reader.start()
    }

    var output: [String] { lines.value.withLock { $0 } }

    /// Waits until at least `count` lines arrived.
    func waitForLines(_ count: Int, timeout: Duration = waitLimit) async throws -> [String] {
        let deadline = ContinuousClock.now + timeout
        while output.count < count {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "\(count) lines, have \(output)") }
            try await Task.sleep(for: .milliseconds(2))
        }
        return output
    }

    /// Sends SIGTERM and returns the exit status.
    func terminate() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
