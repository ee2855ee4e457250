#if canImport(Glibc)
import Glibc
#endif

/// A listening Unix stream socket at `path` (bound and listening, close-on-exec), for the
/// tests' fake buses: a peer that never speaks (`SilentBusPeer`), a broker that never answers
/// (`MuteBroker`). The caller owns the descriptor.
func listeningUnixSocket(at path: String, backlog: Int32) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SetupFailure(call: "socket", path: path, code: errno) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard bound == 0, listen(fd, backlog) == 0 else {
        let code = errno
        close(fd)
        throw SetupFailure(call: "bind/listen", path: path, code: code)
    }
    return fd
}
