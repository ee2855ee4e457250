#if canImport(Glibc)
import Glibc
#endif

/// A self-pipe that wakes a thread blocked in poll(2) on `fd` (with the bus's or netlink's descriptor):
/// `signal` from any thread, `drain` on the waking one. Both ends are non-blocking, so a full
/// pipe never blocks `signal` (it is readable already), and close on exec. Closed when the last
/// owner lets go.
package final class WakeUpPipe: Sendable {
    private let readEnd: Descriptor
    private let writeEnd: Descriptor
    /// The end to poll for reading.
    public var fd: Int32 { readEnd.rawValue }

    public init() throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemError("pipe") }
        readEnd = Descriptor(ends[0])
        writeEnd = Descriptor(ends[1])
        readEnd.setCloseOnExec()
        readEnd.setNonBlocking()
        writeEnd.setCloseOnExec()
        writeEnd.setNonBlocking()
    }

    /// Makes `fd` readable (a full pipe already is).
    public func signal() {
        var one: UInt8 = 1
        _ = write(writeEnd.rawValue, &one, 1)
    }

    /// Empties the pipe, so that the next poll waits again.
    public func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(fd, &buffer, buffer.count) > 0 {}
    }
}
