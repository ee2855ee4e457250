#if canImport(Glibc)
import Glibc
#endif

// MARK: - cleanup that also runs on signals and crashes

// The paths to undo, as C strings made before any signal can arrive. The cleanup uses only
// umount2/unlink/rmdir, which are async-signal-safe: exactly what `ip netns del` does.
nonisolated(unsafe) private var cleanupNamespacePath: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) private var cleanupSysfsPath: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) private let previousActions = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)

/// Removes the bench's mounts and namespace. Idempotent and async-signal-safe.
func runCleanup() {
    if let sysfs = cleanupSysfsPath {
        _ = umount2(sysfs, Int32(MNT_DETACH))
        _ = rmdir(sysfs)
    }
    if let namespace = cleanupNamespacePath {
        _ = umount2(namespace, Int32(MNT_DETACH))
        _ = unlink(namespace)
    }
}

/// Cleans up on termination signals and on crashes (a Swift trap is SIGILL/SIGTRAP), then lets
/// the signal do what it did before (terminate, or the Swift runtime's backtracer).
func installCleanupHandlers() {
    for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE] {
        // A signal ignored at start (SIGINT for a background job of a non-interactive shell)
        // stays ignored: it must not end the run.
        var current = sigaction()
        _ = sigaction(signal, nil, &current)
        if let handler = current.__sigaction_handler.sa_handler, unsafeBitCast(handler, to: Int.self) == 1 {  // SIG_IGN
            continue
        }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in
            runCleanup()
            _ = sigaction(signal, previousActions + Int(signal), nil)
            // Blocked until the handler returns, then delivered with the old disposition; a fault
            // raised by the kernel also comes back at once when its instruction re-executes.
            _ = raise(signal)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        _ = sigaction(signal, &action, previousActions + Int(signal))
    }
}

// MARK: - the namespace

/// A network namespace of the bench's own, `reachbench-<pid>`, created with `ip netns add` and
/// removed at exit, on error and on signals.
final class BenchNamespace {
    let name: String
    let path: String
    let ipTool: String
    /// A sysfs mounted from inside the namespace, so the monitor reads the facts of the
    /// namespace's own links (as the daemon does with the real /sys); nil when not mounted.
    private(set) var sysfsRoot: String?
    private var destroyed = false

    init() throws(BenchError) {
        guard let ipTool = findExecutable(["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]) else {
            throw BenchError("iproute2's ip not found (apt-get install iproute2)")
        }
        self.ipTool = ipTool
        name = "reachbench-\(getpid())"
        path = "/run/netns/" + name
        cleanupNamespacePath = strdup(path)
        try runProcess(ipTool, ["netns", "add", name])
        try ip("link set lo up")
        // IPv6 link-local addresses are kept (real hosts have them), but without duplicate address
        // detection, which would otherwise fire netlink events a second after every link comes up
        // or regains carrier, in the middle of the samples.
        try writeSysctls([
            "/proc/sys/net/ipv6/conf/all/accept_dad": "0",
            "/proc/sys/net/ipv6/conf/default/accept_dad": "0",
        ])
    }

    deinit { destroy() }

    /// `ip -n NAME arguments` (split on spaces).
    func ip(_ arguments: String) throws(BenchError) {
        try runProcess(ipTool, ["-n", name] + arguments.split(separator: " ").map(String.init))
    }

    /// Runs many `ip` commands in one process: `ip -n NAME -batch FILE`.
    func batch(_ lines: [String]) throws(BenchError) {
        guard !lines.isEmpty else { return }
        var template = Array("/tmp/reachbench-batch-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw BenchError.system("mkstemp") }
        let file = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { unlink(file) }
        var text = lines.joined(separator: "\n")
        text += "\n"
        let complete = text.utf8CString.withUnsafeBytes { raw -> Bool in
            var offset = 0
            let total = raw.count - 1  // without the NUL
            while offset < total {
                let written = write(fd, raw.baseAddress! + offset, total - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
        close(fd)
        guard complete else { throw BenchError.system("write \(file)") }
        try runProcess(ipTool, ["-n", name, "-batch", file])
    }

    /// Runs `body` on a fresh thread that has entered the namespace.
    func inside<T>(_ body: () -> Result<T, BenchError>) throws(BenchError) -> T {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BenchError.system("open \(path)") }
        defer { close(fd) }
        let result = try onFreshThread { () -> Result<T, BenchError> in
            guard enterNamespace(fd) == 0 else { return .failure(BenchError.system("setns \(path)")) }
            return body()
        }
        return try result.get()
    }

    /// Writes per-namespace sysctls: /proc/sys/net resolves to the namespace of the writing thread.
    func writeSysctls(_ values: [String: String]) throws(BenchError) {
        try inside { () -> Result<Void, BenchError> in
            for (file, value) in values {
                let fd = open(file, O_WRONLY | O_CLOEXEC)
                guard fd >= 0 else { return .failure(BenchError.system("open \(file)")) }
                let written = value.withCString { write(fd, $0, strlen($0)) }
                close(fd)
                guard written > 0 else { return .failure(BenchError.system("write \(file)")) }
            }
            return .success(())
        }
    }

    /// The interface index of `interface` inside the namespace.
    func index(of interface: String) throws(BenchError) -> Int32 {
        try inside { () -> Result<Int32, BenchError> in
            let index = if_nametoindex(interface)
            return index == 0 ? .failure(BenchError.system("if_nametoindex \(interface)")) : .success(Int32(index))
        }
    }

    /// Mounts a sysfs made from inside the namespace at /run/reachbench-<pid>-sys (read-only).
    /// Best effort: on failure the monitor gets an empty sysfs root and the report says so.
    @discardableResult
    func mountSysfs() -> Bool {
        let directory = "/run/reachbench-\(getpid())-sys"
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else { return false }
        cleanupSysfsPath = strdup(directory)
        let mounted = (try? inside { () -> Result<Bool, BenchError> in
            let flags = UInt(MS_RDONLY) | UInt(MS_NOSUID) | UInt(MS_NODEV) | UInt(MS_NOEXEC)
            return .success(mount("sysfs", directory, "sysfs", flags, nil) == 0)
        }) ?? false
        guard mounted, access(directory + "/class/net/lo", F_OK) == 0 else {
            _ = rmdir(directory)
            return false
        }
        sysfsRoot = directory
        return true
    }

    /// Unmounts the sysfs and deletes the namespace (the kernel frees its links in the background
    /// once the bench's own sockets in it are closed). Idempotent.
    func destroy() {
        guard !destroyed else { return }
        destroyed = true
        runCleanup()
    }
}
