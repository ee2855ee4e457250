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
package final class NameserverWatch {
    /// The files, shared with the lookups so that a fault in one is said once.
    package let files: ResolverFiles
    /// The resolv.conf lookups read.
    package var path: String { files.resolvConfPath }
    /// systemd-resolved's list of its upstream servers; nil never looks.
    package var upstreamPath: String? { files.upstreamPath }
    private var watch: DirectoryWatch?
    private var source: (any LoopSource)?
    /// The directories watched; a symlink's new target may add one.
    private var directories: Set<String> = []

    package init(files: ResolverFiles) {
        self.files = files
    }

    /// Reads the files on its own (tests).
    package convenience init(path: String, upstreamPath: String?) {
        self.init(files: ResolverFiles(resolvConfPath: path, upstreamPath: upstreamPath))
    }

    /// The servers now, after the stub rule. A file that names no server (where lookups ask
    /// 127.0.0.1, as glibc's do) has none: nobody configured one, and a path to nowhere
    /// supports no DNS. Nor has a file never read well (a FIFO since reachd started).
    package func nameservers() -> [IPAddress] {
        let servers = files.resolverConfiguration()?.nameservers ?? []
        guard !servers.isEmpty, servers.allSatisfy(\.isLoopback), let upstream = files.upstreamConfiguration()?.nameservers else {
            return servers
        }
        return upstream.contains(where: { !$0.isLoopback }) ? upstream : servers
    }

    /// Follows the files on `loop`; `changed` runs after anything that may have changed them.
    package func start(on loop: any EventLoopProtocol, changed: @escaping () -> Void) throws(SystemError) {
        let watch = try DirectoryWatch()
        self.watch = watch
        watchDirectories()
        source = try loop.addWatch(fd: watch.fd, events: .readable) { [unowned self] _ in
            if self.drain() {
                self.watchDirectories()
                changed()
            }
        }
    }

    /// Stops following (the watch's descriptor closes with it).
    package func stop() {
        source?.cancel()
        (source, watch) = (nil, nil)
    }

    /// Without inotify (root's instances used up, a sandbox without it): whether a watched file
    /// changed since the last look, by `FileIdentity` (the host checks' resolv.conf cache key) -
    /// a few stat(2) calls the core makes when the kernel reports a change anyway, so nothing
    /// wakes for it.
    package func changedSinceLastLook() -> Bool {
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
        guard let watch else { return }
        for file in watchedFiles {
            let directory = Self.directory(of: file)
            guard !directories.contains(directory), (try? watch.watch(directory)) != nil else { continue }
            directories.insert(directory)
        }
    }

    /// Reads every queued event; true when one names a watched file (or events were lost).
    private func drain() -> Bool {
        guard let watch else { return false }
        let events = watch.drain()
        return events.overflowed || !events.names.isDisjoint(with: watchedFiles.map(Self.baseName))
    }

    /// Where a symlink leads (resolved's stub-resolv.conf); nil when `path` is none or dangles.
    package static func target(of path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        let target = String(cString: resolved)
        return target == path ? nil : target
    }

    package static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    package static func baseName(_ path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }
}
