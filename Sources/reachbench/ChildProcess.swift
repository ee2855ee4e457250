import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - long-running children (servers, daemons, monitors)

/// A child process the bench starts and stops itself: a DNS server, dbus-daemon, reachd,
/// `ip monitor`. It is registered for cleanup (SIGKILL) from the moment it exists, so a signal or
/// a crash of the bench never leaves it behind.
final class ChildProcess {
    let pid: pid_t
    let command: String
    /// The read end of a pipe on the child's stdout, when asked for (non-blocking, close-on-exec).
    let output: Int32?
    private let cleanupSlot: Int
    private(set) var exitStatus: Int32?

    /// The environment children get: no NOTIFY_SOCKET or WATCHDOG_USEC from ours.
    static let cleanEnvironment = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"]

    /// Starts `path arguments...`. stdin is /dev/null; stdout goes to a pipe (`pipeOutput`), to
    /// `logFile`, or to our stderr; stderr goes to `logFile` or to our stderr.
    init(_ path: String, _ arguments: [String], pipeOutput: Bool = false, logFile: String? = nil) throws(BenchError) {
        command = ([path] + arguments).joined(separator: " ")
        var fds: [Int32] = [-1, -1]
        if pipeOutput {
            guard pipe(&fds) == 0 else { throw BenchError.system("pipe") }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        defer { if fds[1] >= 0 { close(fds[1]) } }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp: [UnsafeMutablePointer<CChar>?] = Self.cleanEnvironment.map { strdup($0) } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let logFile {
            posix_spawn_file_actions_addopen(&actions, 2, logFile, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        }
        // stdout: the pipe, or wherever stderr goes now (the log file, or our stderr).
        posix_spawn_file_actions_adddup2(&actions, pipeOutput ? fds[1] : 2, 1)
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard spawned == 0 else {
            if fds[0] >= 0 { close(fds[0]) }
            throw BenchError.system("spawn \(path)", errno: spawned)
        }
        self.pid = pid
        cleanupSlot = Cleanup.register(.process, pid: pid)
        if pipeOutput {
            _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
            output = fds[0]
        } else {
            output = nil
        }
    }

    deinit {
        if exitStatus == nil { stop(signal: SIGKILL, graceMilliseconds: 1000) }
        if let output { close(output) }
    }

    var isRunning: Bool { poll() == nil }

    /// The wait status once the child has exited (reaped here), nil while it runs.
    @discardableResult
    func poll() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        guard result == pid else { return nil }
        exitStatus = status
        Cleanup.forget(cleanupSlot)
        return status
    }

    /// Waits up to `milliseconds` for the child to exit; its wait status, or nil.
    @discardableResult
    func wait(milliseconds: Int) -> Int32? {
        let deadline = monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000
        while true {
            if let status = poll() { return status }
            if monotonicNanoseconds() >= deadline { return nil }
            sleepMilliseconds(2)
        }
    }

    /// Sends `signal`, waits up to `graceMilliseconds`, then SIGKILL; returns the wait status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM, graceMilliseconds: Int = 5000) -> Int32? {
        if let exitStatus { return exitStatus }
        _ = kill(pid, signal)
        if let status = wait(milliseconds: graceMilliseconds) { return status }
        _ = kill(pid, SIGKILL)
        return wait(milliseconds: 5000)
    }

    /// "exited 0", "killed by signal 9".
    static func describe(_ status: Int32?) -> String {
        guard let status else { return "still running" }
        return status & 0x7F == 0 ? "exited \((status >> 8) & 0xFF)" : "killed by signal \(status & 0x7F)"
    }
}

/// Reads lines from a non-blocking descriptor (a child's stdout).
struct LineReader {
    let fd: Int32
    private var pending: [UInt8] = []

    init(fd: Int32) { self.fd = fd }

    /// Reads what is available now and returns the complete lines; nil at end of file.
    mutating func availableLines() -> [String]? {
        var lines: [String] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                pending.append(contentsOf: chunk[..<count])
                continue
            }
            if count == 0 && lines.isEmpty && pending.isEmpty { return nil }
            if count < 0 && errno == EINTR { continue }
            break
        }
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: pending[..<newline], as: UTF8.self))
            pending.removeSubrange(...newline)
        }
        return lines
    }

    /// Waits up to `milliseconds` for one complete line.
    mutating func line(withinMilliseconds milliseconds: Int) -> String? {
        let deadline = monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000
        while true {
            if let lines = availableLines() {
                if let first = lines.first { return first }
            } else {
                return nil
            }
            let now = monotonicNanoseconds()
            guard now < deadline else { return nil }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = Glibc.poll(&descriptor, 1, Int32(min((deadline - now) / 1_000_000 + 1, 60_000)))
        }
    }
}
