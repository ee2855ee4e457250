import Foundation

/// A product built beside the test bundle (`reachctl`, `reachd`), or `$NAME` (uppercased) when set.
func productPath(_ name: String) -> String {
    if let path = ProcessInfo.processInfo.environment[name.uppercased()] { return path }
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
        directory = directory.deletingLastPathComponent()
    }
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
    return URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent(name).path
}

func reachctlPath() -> String { productPath("reachctl") }

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
    try reachctl(arguments, environment: [:]).result
}

/// A long-running reachctl (monitor) whose stdout lines are collected as they arrive.
final class ReachctlProcess: Sendable {
    private let child: ChildProcess

    init(_ arguments: [String]) throws {
        child = try ChildProcess(reachctlPath(), arguments)
    }

    /// reachctl run inside network namespace `name` (`ip netns exec`), as a program on that
    /// host would be: its in-process answers are that namespace's without `--netns`.
    init(inNamespace name: String, _ arguments: [String]) throws {
        child = try ChildProcess("/usr/sbin/ip", ["netns", "exec", name, reachctlPath()] + arguments)
    }

    var output: [String] { child.lines }
    /// What it wrote to standard error so far.
    var errorOutput: String { child.errorOutput }
    /// When it exited; nil while it runs.
    var exitTime: ContinuousClock.Instant? { child.exitTime }

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
        child.signal(SIGTERM)
        return child.waitForExit(timeout: waitLimit) ?? -1
    }
}

/// reachctl run to completion inside network namespace `name` (`ip netns exec`), as a unit on
/// that host runs it: its in-process answers are that namespace's without `--netns`.
func reachctl(inNamespace name: String, _ arguments: [String]) throws -> CommandResult {
    let child = try ChildProcess("/usr/sbin/ip", ["netns", "exec", name, reachctlPath()] + arguments)
    let (status, stdout, stderr) = try child.finish(timeout: .seconds(600))
    return CommandResult(status: status, stdout: stdout, stderr: stderr)
}
