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
