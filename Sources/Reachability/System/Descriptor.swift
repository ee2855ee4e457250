#if canImport(Glibc)
import Glibc
#endif

/// A file descriptor owned by one value: closed exactly once, when the value ends or by
/// `close()`. `~Copyable`, so a double close or a leak is a compile error (swift-system's
/// `FileDescriptor` with `IORing`'s ownership). Close is never retried: Linux releases the
/// descriptor even when close(2) reports EINTR, and a retry could close one opened meanwhile.
package struct Descriptor: ~Copyable, Sendable {
    public let rawValue: Int32

    /// Takes over `rawValue`, which no one else closes.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// Takes over the result of a call that returns a new descriptor, or -1 and errno.
    public init(checking result: Int32, _ operation: @autoclosure () -> String) throws(SystemError) {
        guard result >= 0 else { throw SystemError(operation()) }
        rawValue = result
    }

    deinit { Glibc.close(rawValue) }

    /// Closes it now.
    public consuming func close() {}

    /// Sets O_NONBLOCK (the loop reads and writes only when ready); false when fcntl failed.
    @discardableResult
    public func setNonBlocking() -> Bool {
        let flags = fcntl(rawValue, F_GETFL)
        return flags >= 0 && fcntl(rawValue, F_SETFL, flags | O_NONBLOCK) == 0
    }

    /// Sets FD_CLOEXEC.
    public func setCloseOnExec() { _ = fcntl(rawValue, F_SETFD, FD_CLOEXEC) }
}
