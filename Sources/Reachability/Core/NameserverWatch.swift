#if canImport(Glibc)
import Glibc
#endif

/// The nameservers `supportsDNS` is about, and their changes as they happen: resolv.conf as
/// `ResolverFiles` reads it for the lookups (without trust, once per version, at most
/// `ResolverConfiguration.maximumNameservers`), followed with inotify on the
/// directories that hold it. resolv.conf is written aside and renamed over (resolvconf,
/// NetworkManager), or is a symlink into /run/systemd/resolve whose target is renamed over, so
/// the file itself is never watched: its directory, and its target's, are. Loop-thread only.
///
/// systemd-resolved's stub: when every nameserver is on loopback (127.0.0.53, 127.0.0.54, ::1)
/// and resolved's upstream list (`upstreamPath`) names servers, those are the ones that must
/// be routable; without it the stub stays, and the Engine counts it while the host is online.
final class NameserverWatch {
    /// The files, shared with the lookups so that a fault in one is said once.
    let files: ResolverFiles
    /// The resolv.conf lookups read.
    var path: String { files.resolvConfPath }
    /// systemd-resolved's list of its upstream servers; nil never looks.
    var upstreamPath: String? { files.upstreamPath }
    private var inotify: Descriptor?
    private var source: (any LoopSource)?
    /// The directories watched; a symlink's new target may add one.
    private var directories: Set<String> = []
    private var buffer = [UInt8](repeating: 0, count: 4096)

    init(files: ResolverFiles) {
        self.files = files
    }

    /// Reads the files on its own (tests).
    convenience init(path: String, upstreamPath: String?) {
        self.init(files: ResolverFiles(resolvConfPath: path, upstreamPath: upstreamPath))
    }

    /// The servers now, after the stub rule. A file that names no server (where lookups ask
    /// 127.0.0.1, as glibc's do) has none: nobody configured one, and a path to nowhere
    /// supports no DNS. Nor has a file never read well (a FIFO since reachd started).
    func nameservers() -> [IPAddress] {
        let servers = files.resolverConfiguration()?.nameservers ?? []
        guard !servers.isEmpty, servers.allSatisfy(\.isLoopback), let upstream = files.upstreamConfiguration()?.nameservers else {
            return servers
        }
        return upstream.contains(where: { !$0.isLoopback }) ? upstream : servers
    }

    /// Follows the files on `loop`; `changed` runs after anything that may have changed them.
    func start(on loop: any EventLoopProtocol, changed: @escaping () -> Void) throws(SystemError) {
        let descriptor = try Descriptor(checking: inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)), "inotify_init1")
        let fd = descriptor.rawValue
        inotify = consume descriptor
        watchDirectories()
        source = try loop.addWatch(fd: fd, events: .readable) { [unowned self] _ in
            if self.drain() {
                self.watchDirectories()
                changed()
            }
        }
    }

    /// Without inotify (root's instances used up, a sandbox without it): whether a watched file
    /// changed since the last look, by `FileIdentity` (the host checks' resolv.conf cache key) -
    /// a few stat(2) calls the core makes when the kernel reports a change anyway, so nothing
    /// wakes for it.
    func changedSinceLastLook() -> Bool {
        let now = watchedFiles.map(FileIdentity.init(path:))
        defer { lastIdentity = now }
        return now != lastIdentity
    }
    private var lastIdentity: [FileIdentity?] = []

    /// The names whose change matters: resolv.conf, its symlink's target, resolved's list.
    private var watchedFiles: [String] {
        [path, Self.target(of: path), upstreamPath].compactMap { $0 }
    }

    /// Each directory of a watched file, once; one that does not exist (yet) is skipped.
    private func watchDirectories() {
        guard let fd = inotify?.rawValue else { return }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE)
        for file in watchedFiles {
            let directory = Self.directory(of: file)
            guard !directories.contains(directory), inotify_add_watch(fd, directory, mask) >= 0 else { continue }
            directories.insert(directory)
        }
    }

    /// Reads every queued event; true when one names a watched file (or events were lost).
    private func drain() -> Bool {
        guard let fd = inotify?.rawValue else { return false }
        let names = Set(watchedFiles.map(Self.baseName))
        var relevant = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return relevant }
            buffer.withUnsafeBytes { bytes in
                var offset = 0
                let header = MemoryLayout<inotify_event>.size
                while offset + header <= count {
                    let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let nameBytes = bytes[(offset + header)..<min(count, offset + header + Int(event.len))]
                    let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                    if event.mask & UInt32(IN_Q_OVERFLOW) != 0 || names.contains(name) { relevant = true }
                    offset += header + Int(event.len)
                }
            }
        }
    }

    /// Where a symlink leads (resolved's stub-resolv.conf); nil when `path` is none or dangles.
    static func target(of path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        let target = String(cString: resolved)
        return target == path ? nil : target
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func baseName(_ path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }
}
