#if canImport(Glibc)
import Glibc
#endif

/// A self-pipe that wakes a thread blocked in poll(2) on `fd` (with the bus's or netlink's descriptor):
/// `signal` from any thread, `drain` on the waking one. Both ends are non-blocking, so a full
/// pipe never blocks `signal` (it is readable already), and close on exec. Closed when the last
/// owner lets go.
public final class WakeUpPipe: Sendable {
    /// The end to poll for reading.
    public let fd: Int32
    private let writeEnd: Int32

    public init() throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemError("pipe") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        fd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(fd)
        close(writeEnd)
    }

    /// Makes `fd` readable (a full pipe already is).
    public func signal() {
        var one: UInt8 = 1
        _ = write(writeEnd, &one, 1)
    }

    /// Empties the pipe, so that the next poll waits again.
    public func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(fd, &buffer, buffer.count) > 0 {}
    }
}
