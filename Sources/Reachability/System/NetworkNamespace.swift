import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// Opens sockets inside another network namespace (`ip netns` names or any nsfs path).
/// A socket stays in the namespace it was created in, so only its creation needs to happen
/// there; that is done on a throwaway thread so no other thread ever changes namespace.
package enum NetworkNamespace {
    /// `/run/netns/NAME` for a bare name (as `ip -n NAME`), the text itself when it holds a `/`.
    public static func path(forName nameOrPath: String) -> String {
        nameOrPath.contains("/") ? nameOrPath : "/run/netns/" + nameOrPath
    }

    /// Runs `body` on a thread that has entered the namespace at `path`.
    package static func run<T>(in path: String, _ body: () -> Result<T, SystemError>) throws(SystemError) -> T {
        try DedicatedThread.run { () -> Result<T, SystemError> in
            do throws(SystemError) { try enter(path) } catch { return .failure(error) }
            return body()
        }.get()
    }

    /// Whether the calling thread is in the namespace at `path`: the same namespace inode.
    package static func holdsCallingThread(_ path: String) -> Bool {
        var watched = stat()
        var own = stat()
        guard stat(path, &watched) == 0, stat("/proc/thread-self/ns/net", &own) == 0 else { return false }
        return watched.st_dev == own.st_dev && watched.st_ino == own.st_ino
    }

    /// Moves the calling thread into the namespace at `path`. Only for a thread the caller owns
    /// for good (reachd's main thread, `ReachabilityMonitor`'s, `run`'s throwaway one): never a pooled one.
    public static func enter(_ path: String) throws(SystemError) {
        let namespace = try Descriptor(checking: open(path, O_RDONLY | O_CLOEXEC), "open network namespace \(path)")
        guard cnetlink_setns(namespace.rawValue, cnetlink_clone_newnet()) == 0 else { throw SystemError("setns \(path)") }
    }
}
