#if canImport(Glibc)
import Glibc
#endif
import Synchronization

// MARK: - cleanup that also runs on signals and crashes

/// Everything the bench must undo at exit, on error, on termination signals and on crashes:
/// child processes to kill, files to unlink, directories to remove, mounts to detach and
/// namespaces to delete. Entries are registered as plain C data before any signal could need
/// them, and undone with async-signal-safe calls only (kill, unlink, rmdir, umount2): exactly
/// what `ip netns del` does for a namespace.
enum Cleanup {
    enum Kind: Int32 {
        /// SIGKILL the process (the normal path stops it gracefully and resolves the entry first).
        case process = 1
        case file = 2
        case directory = 3
        /// A mount point that is also a directory of ours (the namespace's sysfs).
        case mountDirectory = 4
        /// `/run/netns/NAME`: a bind mount on a file, as `ip netns add` makes it.
        case namespace = 5
    }

    struct Entry {
        var kind: Int32
        var pid: pid_t
        var path: UnsafeMutablePointer<CChar>?
    }

    static let capacity = 512
    nonisolated(unsafe) private static let entries: UnsafeMutablePointer<Entry> = {
        let entries = UnsafeMutablePointer<Entry>.allocate(capacity: capacity)
        entries.initialize(repeating: Entry(kind: 0, pid: 0, path: nil), count: capacity)
        return entries
    }()
    private static let used = Atomic<Int>(0)

    /// Touches the table, so the first signal never runs a lazy global initializer.
    static func prepare() {
        _ = entries
        _ = used.load(ordering: .relaxed)
    }

    /// Registers one thing to undo; returns its slot for `perform` or `forget`.
    @discardableResult
    static func register(_ kind: Kind, path: String? = nil, pid: pid_t = 0) -> Int {
        let slot = used.add(1, ordering: .sequentiallyConsistent).oldValue
        precondition(slot < capacity, "too many cleanup entries")
        entries[slot] = Entry(kind: 0, pid: pid, path: path.map { strdup($0) })
        // The kind last: a signal between the two stores sees an empty slot, not a half one.
        entries[slot].kind = kind.rawValue
        return slot
    }

    /// Undoes one entry now (idempotent).
    static func perform(_ slot: Int) { undo(entries + slot) }

    /// Drops an entry without undoing it (a process that was already stopped and reaped: its pid
    /// may be reused, so it must never be killed later).
    static func forget(_ slot: Int) { entries[slot].kind = 0 }

    /// Undoes everything still registered, the newest first. Idempotent and async-signal-safe.
    static func runAll() {
        var slot = min(used.load(ordering: .sequentiallyConsistent), capacity)
        while slot > 0 {
            slot -= 1
            undo(entries + slot)
        }
    }

    private static func undo(_ entry: UnsafeMutablePointer<Entry>) {
        let kind = entry.pointee.kind
        entry.pointee.kind = 0
        switch Kind(rawValue: kind) {
        case .process?:
            if entry.pointee.pid > 0 { _ = kill(entry.pointee.pid, SIGKILL) }
        case .file?:
            if let path = entry.pointee.path { _ = unlink(path) }
        case .directory?:
            if let path = entry.pointee.path { _ = rmdir(path) }
        case .mountDirectory?:
            if let path = entry.pointee.path {
                _ = umount2(path, Int32(MNT_DETACH))
                _ = rmdir(path)
            }
        case .namespace?:
            if let path = entry.pointee.path {
                _ = umount2(path, Int32(MNT_DETACH))
                _ = unlink(path)
            }
        case nil:
            break
        }
    }
}

nonisolated(unsafe) private let previousActions = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)

/// Undoes everything the bench set up that is still there. Idempotent and async-signal-safe.
func runCleanup() { Cleanup.runAll() }

/// Cleans up on termination signals and on crashes (a Swift trap is SIGILL/SIGTRAP), then lets
/// the signal do what it did before (terminate, or the Swift runtime's backtracer).
func installCleanupHandlers() {
    Cleanup.prepare()
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

/// A network namespace of the bench's own (`reachbench-<pid>`, or with a suffix), created with
/// `ip netns add` and removed at exit, on error and on signals.
final class BenchNamespace {
    let name: String
    let path: String
    let ipTool: String
    /// A sysfs mounted from inside the namespace, so the monitor reads the facts of the
    /// namespace's own links (as the daemon does with the real /sys); nil when not mounted.
    private(set) var sysfsRoot: String?
    /// Cleanup slots: the namespace, then the sysfs mount when there is one.
    private var cleanupSlots: [Int] = []

    /// `suffix` makes the name `reachbench-<pid>-SUFFIX`, for a second or third namespace.
    init(suffix: String? = nil) throws(BenchError) {
        guard let ipTool = findExecutable(["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]) else {
            throw BenchError("iproute2's ip not found (apt-get install iproute2)")
        }
        self.ipTool = ipTool
        name = "reachbench-\(getpid())" + (suffix.map { "-" + $0 } ?? "")
        path = "/run/netns/" + name
        cleanupSlots.append(Cleanup.register(.namespace, path: path))
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

    /// Mounts a sysfs made from inside the namespace at /run/NAME-sys (read-only).
    /// Best effort: on failure the monitor gets an empty sysfs root and the report says so.
    @discardableResult
    func mountSysfs() -> Bool {
        let directory = "/run/\(name)-sys"
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else { return false }
        cleanupSlots.append(Cleanup.register(.mountDirectory, path: directory))
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
        // The newest first: the sysfs mount before the namespace.
        for slot in cleanupSlots.reversed() { Cleanup.perform(slot) }
        cleanupSlots = []
    }
}
