import Foundation
import Synchronization
@testable import Reachability

/// A program a test runs: spawned with posix_spawn, its stdout and stderr collected as they
/// arrive, its exit learnt from waitpid.
///
/// Not Foundation's Process: that learns of a child's exit from the end of file on a socket the
/// child holds, and a long-lived child (an HTTP or DNS server) that another test spawned at the
/// same moment inherited the socket too, so a test's wait lasted until the other test's server
/// died. Here the child inherits exactly stdin (/dev/null), stdout, stderr and the descriptors
/// passed to it: every other descriptor is closed in the child before it runs (closefrom).
///
/// It also starts with an empty signal mask and default signal handlers, as a service manager
/// starts a service: spawned from a Swift-concurrency thread it would otherwise inherit
/// libdispatch's mask (SIGTERM, SIGHUP, SIGINT... blocked).
final class ChildProcess: Sendable {
    let pid: pid_t
    /// The program and arguments, for messages.
    let command: String
    private let out = Stream()
    private let err = Stream()
    private let state = ExitState()

    private struct Exit {
        /// The raw wait status once the child was reaped.
        var status: Int32?
        var time: ContinuousClock.Instant?
    }

    private final class ExitState: Sendable {
        let exit = Mutex(Exit())
        func withLock<T>(_ body: (inout Exit) -> T) -> T { exit.withLock { body(&$0) } }
    }

    private final class Stream: Sendable {
        let received = Mutex(Received())
        let done = Atomic<Bool>(false)
    }

    /// The bytes so far, and where and when each read ended: a line arrived when the read that
    /// brought its newline returned, however late a test's task gets to look at it.
    private struct Received {
        var bytes: [UInt8] = []
        var reads: [(end: Int, at: ContinuousClock.Instant)] = []
    }

    /// `environment`: the whole environment (nil: this process's). `errorsToOutput`: stderr goes
    /// where stdout goes (one stream, in the order written). `passing`: descriptors the child gets
    /// as 3, 4, ... (socket activation).
    init(
        _ program: String, _ arguments: [String], environment: [String: String]? = nil, errorsToOutput: Bool = false,
        passing descriptors: [Int32] = []
    ) throws {
        command = ([program] + arguments).joined(separator: " ")
        let outPipe = try Self.pipe()
        let errPipe = errorsToOutput ? nil : try Self.pipe()
        var spawned = false
        defer {
            close(outPipe.write)
            if let errPipe { close(errPipe.write) }
            if !spawned {
                close(outPipe.read)
                if let errPipe { close(errPipe.read) }
            }
        }
        // The passed descriptors are first copied above the slots they go to, so placing one can
        // never overwrite another still to be placed; the copies close at exec.
        let firstFree = 3 + Int32(descriptors.count)
        var copies: [Int32] = []
        defer { copies.forEach { close($0) } }
        for descriptor in descriptors {
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, firstFree)
            guard copy >= 0 else { throw SystemError("fcntl(F_DUPFD_CLOEXEC) of \(descriptor)") }
            copies.append(copy)
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe.write, 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe?.write ?? outPipe.write, 2)
        for (slot, copy) in copies.enumerated() { posix_spawn_file_actions_adddup2(&actions, copy, 3 + Int32(slot)) }
        guard let addCloseFrom = Self.addCloseFrom else { throw SystemError("posix_spawn_file_actions_addclosefrom_np", errno: ENOSYS) }
        let refused = addCloseFrom(&actions, firstFree)
        guard refused == 0 else { throw SystemError("posix_spawn_file_actions_addclosefrom_np", errno: refused) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else { throw SystemError("posix_spawn \(program)", errno: result) }
        spawned = true
        self.pid = pid
        Self.collect(outPipe.read, into: out)
        if let errPipe { Self.collect(errPipe.read, into: err) } else { err.done.store(true, ordering: .releasing) }
        Self.reap(pid, into: state)
    }

    /// Killed (SIGKILL) when released if still running.
    deinit { kill() }

    /// glibc 2.34 and later have it (Debian 12: 2.36), but declare it only with _GNU_SOURCE, which
    /// Swift's Glibc module does not set: looked up by name. (POSIX_SPAWN_CLOEXEC_DEFAULT is not in glibc.)
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// A pipe whose ends close at exec. (pipe2 is _GNU_SOURCE too; in the window before FD_CLOEXEC
    /// is set, a program spawned here still gets only what closefrom leaves it.)
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard Glibc.pipe(&ends) == 0 else { throw SystemError("pipe") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// Reads `fd` to its end on a thread of its own, so a full pipe never stalls the child.
    private static func collect(_ fd: Int32, into stream: Stream) {
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                let now = ContinuousClock.now
                stream.received.withLock {
                    $0.bytes.append(contentsOf: buffer[0..<count])
                    $0.reads.append((end: $0.bytes.count, at: now))
                }
            }
            close(fd)
            stream.done.store(true, ordering: .releasing)
        }
    }

    /// Waits on a thread of its own for the exit (waitid with WNOWAIT leaves the child a zombie,
    /// so its pid cannot be reused yet), then reaps it under the lock `signal` takes: a signal is
    /// never sent to a pid that already belongs to someone else.
    private static func reap(_ pid: pid_t, into state: ExitState) {
        Thread.detachNewThread {
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0, errno == EINTR {}
            let time = ContinuousClock.now
            state.withLock { exit in
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                exit = Exit(status: status, time: time)
            }
        }
    }

    // MARK: output

    private static func text(_ stream: Stream) -> String { String(decoding: stream.received.withLock { $0.bytes }, as: UTF8.self) }

    /// Complete stdout lines, each with when it arrived.
    var timedLines: [(line: String, arrived: ContinuousClock.Instant)] { Self.lines(out) }

    /// Complete lines, each with when the read that ended it returned; the last unterminated one
    /// only once the stream ended (arrived with the last read).
    private static func lines(_ stream: Stream) -> [(line: String, arrived: ContinuousClock.Instant)] {
        let ended = stream.done.load(ordering: .acquiring)
        let received = stream.received.withLock { $0 }
        var lines: [(String, ContinuousClock.Instant)] = []
        var start = 0
        var read = 0
        for (offset, byte) in received.bytes.enumerated() where byte == UInt8(ascii: "\n") {
            while received.reads[read].end <= offset { read += 1 }
            lines.append((String(decoding: received.bytes[start..<offset], as: UTF8.self), received.reads[read].at))
            start = offset + 1
        }
        if ended, start < received.bytes.count, let last = received.reads.last {
            lines.append((String(decoding: received.bytes[start...], as: UTF8.self), last.at))
        }
        return lines
    }

    var output: String { Self.text(out) }
    var errorOutput: String { Self.text(err) }
    var lines: [String] { Self.lines(out).map(\.line) }
    var errorLines: [String] { Self.lines(err).map(\.line) }

    /// The first stdout line (waiting for it, synchronously).
    func firstLine(timeout: Duration) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while lines.isEmpty {
            guard ContinuousClock.now < deadline, isRunning else {
                throw TimedOut(what: "first line of \(command): stderr \(errorLines)")
            }
            usleep(1000)
        }
        return lines[0]
    }

    /// Waits until stderr contains `text`.
    func waitForErrorLine(containing text: String, timeout: Duration = .seconds(10)) throws {
        let deadline = ContinuousClock.now + timeout
        while !errorOutput.contains(text) {
            guard ContinuousClock.now < deadline, isRunning else {
                throw TimedOut(what: "'\(text)' from \(command): stderr \(errorLines)")
            }
            usleep(1000)
        }
    }

    // MARK: exit

    var isRunning: Bool { state.withLock { $0.status == nil } }
    /// When the exit was seen; nil while it runs.
    var exitTime: ContinuousClock.Instant? { state.withLock { $0.time } }

    /// The exit code, or the number of the signal that ended it (as Foundation's
    /// `terminationStatus`); nil while it runs.
    var status: Int32? {
        guard let raw = state.withLock({ $0.status }) else { return nil }
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
    }

    var terminatedBySignal: Bool { state.withLock { $0.status }.map { $0 & 0x7f != 0 } ?? false }

    private var streamsEnded: Bool { out.done.load(ordering: .acquiring) && err.done.load(ordering: .acquiring) }

    /// Waits (blocking) for the exit and for both streams to end; the exit status, or nil on timeout.
    func waitForExit(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while isRunning || !streamsEnded {
            guard ContinuousClock.now < deadline else { return nil }
            usleep(1000)
        }
        return status
    }

    /// The exit status, or nil if it still runs after `timeout`, without blocking a thread of
    /// the cooperative pool for long. Its streams are given up to 2 s more to end (a daemon it
    /// started may hold them open).
    func exit(timeout: Duration) async throws -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            guard ContinuousClock.now < deadline else { return nil }
            try await Task.sleep(for: .milliseconds(5))
        }
        _ = waitForExit(timeout: .seconds(2))
        return status
    }

    /// Runs to completion (at most `timeout`, then killed and reported): status and both streams.
    func finish(timeout: Duration) throws -> (status: Int32, stdout: String, stderr: String) {
        guard let status = waitForExit(timeout: timeout) else {
            kill()
            throw TimedOut(what: "\(command) to exit; stderr \(errorOutput)")
        }
        return (status, output, errorOutput)
    }

    /// Sends `number` if it still runs (never to a reaped pid that may belong to another process).
    func signal(_ number: Int32) {
        state.withLock { exit in
            if exit.status == nil { _ = Glibc.kill(pid, number) }
        }
    }

    /// SIGKILL, never SIGTERM: a child may block or ignore SIGTERM (dbus-daemon and dnsmasq
    /// spawned with libdispatch's mask never ended on it), and a test that ends must not leave
    /// servers behind. Returns once the child is reaped.
    func kill() {
        signal(SIGKILL)
        while isRunning { usleep(1000) }
    }
}
