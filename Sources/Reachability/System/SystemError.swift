#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call, on what, and the errno it returned.
package struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    public var operation: String
    public var errno: Int32

    public init(_ operation: String, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String {
        "\(operation): \(String(cString: strerror(errno)))"
    }
}

/// Retries a system call interrupted by a signal (EINTR); other results pass through.
@inline(__always)
package func retryingOnInterrupt<T: FixedWidthInteger>(_ call: () -> T) -> T {
    while true {
        let result = call()
        if result == -1, errno == EINTR { continue }
        return result
    }
}
