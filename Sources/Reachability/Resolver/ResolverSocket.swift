import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// The socket(2) details of c-ares' socket calls (`AresLookup.SocketCalls`), in a file that does
/// not import CAres. ares.h pulls <sys/socket.h> in outside Glibc's module, and then Glibc's
/// SOCK_* constants vanish from the module in a whole-module (release) build; CNetlink's header
/// includes <sys/socket.h> too and provides them, as NetlinkSocket takes them.
package enum ResolverSocket {
    /// A socket for c-ares, non-blocking and close-on-exec, as c-ares makes its own.
    package static func open(domain: Int32, type: Int32, protocol: Int32) -> Int32 {
        socket(domain, type | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
    }

    package static func isDatagram(_ fd: Int32) -> Bool {
        var type: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0 && type == Int32(SOCK_DGRAM.rawValue)
    }
}
