import Reachability
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A failure that ends the benchmark, with a message for stderr.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }

    /// `what: strerror(code)`.
    static func system(_ what: String, errno code: Int32 = errno) -> BenchError {
        BenchError("\(what): \(String(cString: strerror(code)))")
    }
}

/// CLOCK_MONOTONIC in nanoseconds: one vDSO call, no allocation.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// Writes a line to stderr (progress, warnings): stdout carries only the results.
func note(_ text: String) {
    let line = Array((text + "\n").utf8)
    var offset = 0
    while offset < line.count {
        let written = line.withUnsafeBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return }
        offset += written
    }
}

// MARK: - glibc calls the Glibc module does not declare (they need _GNU_SOURCE)

private func libcSymbol(_ name: String) -> UnsafeMutableRawPointer? {
    dlsym(dlopen(nil, RTLD_NOW), name)
}

/// setns(2). CLONE_NEWNET is 0x40000000.
func enterNamespace(_ fd: Int32, type: Int32 = 0x4000_0000) -> Int32 {
    typealias SetNS = @convention(c) (Int32, Int32) -> Int32
    guard let symbol = libcSymbol("setns") else {
        errno = ENOSYS
        return -1
    }
    return unsafeBitCast(symbol, to: SetNS.self)(fd, type)
}

/// malloc_trim(3): returns freed heap to the kernel, so RSS baselines are not inflated by
/// what earlier measurements freed.
func trimHeap() {
    typealias MallocTrim = @convention(c) (Int) -> Int32
    guard let symbol = libcSymbol("malloc_trim") else { return }
    _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
}

// MARK: - memory

/// Resident memory of this process from /proc/self/status, in KiB.
struct MemoryUsage: Sendable {
    /// VmRSS: everything resident (heap, stacks, and the file-backed pages of code touched so far).
    var residentKiB: Int
    /// RssAnon: anonymous memory only (heap, stacks): what state costs.
    var anonymousKiB: Int
    /// RssFile: pages of mapped files (the Swift runtime and libraries' code and data).
    var fileKiB: Int = 0

    static func current() -> MemoryUsage {
        let text = readSmallFile("/proc/self/status") ?? ""
        var usage = MemoryUsage(residentKiB: 0, anonymousKiB: 0)
        for line in text.split(separator: "\n") {
            if line.hasPrefix("VmRSS:") { usage.residentKiB = Self.kibibytes(line) }
            if line.hasPrefix("RssAnon:") { usage.anonymousKiB = Self.kibibytes(line) }
            if line.hasPrefix("RssFile:") { usage.fileKiB = Self.kibibytes(line) }
        }
        return usage
    }

    private static func kibibytes(_ line: Substring) -> Int {
        Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
}

/// The contents of a small text file (procfs, sysfs), nil when it cannot be read.
func readSmallFile(_ path: String, limit: Int = 1 << 16) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: limit)
    var filled = 0
    while filled < limit {
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, limit - filled) }
        if count > 0 {
            filled += count
        } else if count < 0 && errno == EINTR {
            continue
        } else {
            break
        }
    }
    return String(decoding: bytes[..<filled], as: UTF8.self)
}

// MARK: - machine facts

/// The 1-minute load average from /proc/loadavg: other work on the machine shows in the tails.
func loadAverage() -> String {
    (readSmallFile("/proc/loadavg") ?? "?").split(separator: " ").first.map(String.init) ?? "?"
}

/// CPU pressure (PSI): the share of the last 10 s in which some runnable thread waited for a
/// CPU, from /proc/pressure/cpu ("some avg10"); "?" when the kernel does not report it.
func cpuPressure() -> String {
    guard let line = (readSmallFile("/proc/pressure/cpu") ?? "").split(separator: "\n").first(where: { $0.hasPrefix("some") }),
        let field = line.split(separator: " ").first(where: { $0.hasPrefix("avg10=") })
    else { return "?" }
    return String(field.dropFirst("avg10=".count)) + "%"
}

struct MachineInfo: Sendable {
    var kernel: String
    var cpus: Int
    var cpuModel: String
    var swiftCompiler: String
    var buildMode: String

    static func current() -> MachineInfo {
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: &names.release) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let model = (readSmallFile("/proc/cpuinfo") ?? "").split(separator: "\n")
            .first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { String($0.drop { $0 == " " || $0 == "\t" }) } ?? "unknown"
        #if DEBUG
            let mode = "debug"
        #else
            let mode = "release"
        #endif
        return MachineInfo(
            kernel: release, cpus: sysconf(Int32(_SC_NPROCESSORS_ONLN)), cpuModel: model,
            swiftCompiler: compilerVersion, buildMode: mode)
    }

    private static var compilerVersion: String {
        #if compiler(>=6.4)
            ">= 6.4"
        #elseif compiler(>=6.3.1)
            "6.3.1"
        #elseif compiler(>=6.3)
            "6.3"
        #elseif compiler(>=6.2)
            "6.2"
        #elseif compiler(>=6.1)
            "6.1"
        #else
            "6.0"
        #endif
    }
}

// MARK: - child processes (setup only: never in a measured path)

/// Runs `path arguments...` and waits; its stdout goes to our stderr so `--json` stays clean.
func runProcess(_ path: String, _ arguments: [String]) throws(BenchError) {
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, 2, 1)
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
    guard spawned == 0 else { throw BenchError.system("spawn \(path)", errno: spawned) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw BenchError.system("waitpid \(path)") }
    }
    let exited = status & 0x7F == 0
    let code = (status >> 8) & 0xFF
    guard exited, code == 0 else {
        let how = exited ? "exited \(code)" : "killed by signal \(status & 0x7F)"
        throw BenchError("\(([path] + arguments).joined(separator: " ")) \(how)")
    }
}

/// The first of `candidates` that is executable.
func findExecutable(_ candidates: [String]) -> String? {
    candidates.first { access($0, X_OK) == 0 }
}

// MARK: - a thread of its own

/// Runs `body` on a fresh OS thread and waits for it. Used for everything that enters the
/// bench namespace with setns(2): the namespace stays with that thread, which then ends, so no
/// pooled thread ever changes namespace.
func onFreshThread<T>(_ body: () -> T) throws(BenchError) -> T {
    do { return try DedicatedThread.run(body) } catch { throw BenchError(error.description) }
}

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

func sleepMilliseconds(_ milliseconds: Int) {
    var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
    var remaining = timespec()
    while nanosleep(&request, &remaining) < 0 && errno == EINTR { request = remaining }
}

/// Writes `text` to `path` (created or truncated, mode 0644).
func writeFile(_ path: String, _ text: String) throws(BenchError) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw BenchError.system("open \(path)") }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { throw BenchError.system("write \(path)") }
        offset += written
    }
}

// MARK: - a thread that runs alongside async code

/// A pthread running `body` while the caller goes on; `join()` returns its result.
final class BackgroundThread<T: Sendable> {
    private final class Box: @unchecked Sendable {
        var value: T?
    }
    private let thread: pthread_t
    private let box = Box()

    init(_ body: @escaping @Sendable () -> T) throws(BenchError) {
        let box = self.box
        do { thread = try DedicatedThread.spawn { box.value = body() } } catch { throw BenchError(error.description) }
    }

    /// Waits for the thread; its result.
    func join() -> T {
        pthread_join(thread, nil)
        return box.value!
    }
}

/// A flag one thread sets and another polls.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

// MARK: - another process's resource use

/// What /proc says about a process (reachd): memory and how often its threads ran.
struct ProcessUsage: Sendable {
    var residentKiB = 0
    var anonymousKiB = 0
    var fileKiB = 0
    /// Proportional set size (shared pages divided among their users), from smaps_rollup.
    var proportionalKiB = 0
    var threads = 0
    /// Sum over the threads of /proc/PID/task/TID/schedstat's third field: times it got a CPU.
    var timeslices: UInt64 = 0
    /// Sum over the threads of voluntary + involuntary context switches.
    var contextSwitches: UInt64 = 0
    /// Resident KiB per mapped file (by file name) and for anonymous memory, largest first.
    var mappings: [(name: String, kib: Int)] = []

    static func read(_ pid: pid_t) -> ProcessUsage {
        var usage = ProcessUsage()
        func field(_ text: String, _ name: String) -> UInt64 {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return UInt64(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map {
                $0.filter(\.isNumber)
            } ?? "") ?? 0
        }
        let status = readSmallFile("/proc/\(pid)/status") ?? ""
        usage.residentKiB = Int(field(status, "VmRSS"))
        usage.anonymousKiB = Int(field(status, "RssAnon"))
        usage.fileKiB = Int(field(status, "RssFile"))
        usage.proportionalKiB = Int(field(readSmallFile("/proc/\(pid)/smaps_rollup") ?? "", "Pss"))
        for task in directoryEntries("/proc/\(pid)/task") where task.first?.isNumber == true {
            usage.threads += 1
            let schedstat = (readSmallFile("/proc/\(pid)/task/\(task)/schedstat") ?? "").split(separator: " ")
            if schedstat.count >= 3 { usage.timeslices += UInt64(schedstat[2].filter(\.isNumber)) ?? 0 }
            let taskStatus = readSmallFile("/proc/\(pid)/task/\(task)/status") ?? ""
            usage.contextSwitches += field(taskStatus, "voluntary_ctxt_switches")
                + field(taskStatus, "nonvoluntary_ctxt_switches")
        }
        usage.mappings = residentByMapping(pid)
        return usage
    }

    /// /proc/PID/smaps: Rss summed per file name ("[anonymous]" for heap, stacks and other anonymous maps).
    static func residentByMapping(_ pid: pid_t) -> [(name: String, kib: Int)] {
        var totals: [String: Int] = [:]
        var current = "[anonymous]"
        for line in (readSmallFile("/proc/\(pid)/smaps", limit: 1 << 22) ?? "").split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = words.first else { continue }
            if first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                // A mapping's header: range, perms, offset, dev, inode, [path].
                let path = words.count >= 6 ? String(words[5]) : ""
                current = path.hasPrefix("/") ? String(path.split(separator: "/").last ?? "") : "[anonymous]"
            } else if first == "Rss:", words.count >= 2, let kib = Int(words[1]) {
                totals[current, default: 0] += kib
            }
        }
        return totals.map { (name: $0.key, kib: $0.value) }.sorted { $0.kib > $1.kib }
    }
}

/// The names in a directory (without . and ..).
func directoryEntries(_ path: String) -> [String] {
    guard let directory = opendir(path) else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}

/// Per-thread CPU and run-queue time of this process (/proc/self/task/*/schedstat), to tell
/// "the code was slow" from "the code was waiting for a CPU".
struct ThreadTimes: Sendable {
    /// tid -> (ns on a CPU, ns runnable but waiting for a CPU)
    var threads: [String: (running: UInt64, waiting: UInt64)] = [:]

    static func current() -> ThreadTimes {
        var times = ThreadTimes()
        for task in directoryEntries("/proc/self/task") where task.first?.isNumber == true {
            let fields = (readSmallFile("/proc/self/task/\(task)/schedstat") ?? "").split(separator: " ")
            guard fields.count >= 2, let running = UInt64(fields[0]), let waiting = UInt64(fields[1]) else { continue }
            times.threads[task] = (running, waiting)
        }
        return times
    }

    /// Run-queue waiting since `earlier`: summed over the threads, and the largest of one thread.
    func waiting(since earlier: ThreadTimes) -> (total: UInt64, largest: UInt64) {
        var total: UInt64 = 0
        var largest: UInt64 = 0
        for (tid, now) in threads {
            let delta = now.waiting &- (earlier.threads[tid]?.waiting ?? 0)
            total &+= delta
            largest = max(largest, delta)
        }
        return (total, largest)
    }
}
