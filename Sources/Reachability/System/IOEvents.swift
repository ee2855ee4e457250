#if canImport(Glibc)
import Glibc
#endif

/// What a loop waits for on a descriptor and what it found: poll(2) event bits, which epoll(7)
/// and sd-event share (EPOLLIN == POLLIN...).
package struct IOEvents: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let readable = IOEvents(rawValue: UInt32(POLLIN))
    public static let writable = IOEvents(rawValue: UInt32(POLLOUT))
    public static let error = IOEvents(rawValue: UInt32(POLLERR))
    public static let hangUp = IOEvents(rawValue: UInt32(POLLHUP))

    /// Readable, or failed or hung up: a read will tell which.
    public var canRead: Bool { !isDisjoint(with: [.readable, .error, .hangUp]) }
}
