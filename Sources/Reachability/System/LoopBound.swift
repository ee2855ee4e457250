#if canImport(Glibc)
import Glibc
#endif

/// A value that belongs to the thread of one loop, carried through a `@Sendable` closure of the
/// loop's own work (a host check's completion, which the core runs on the loop): every read
/// checks that it happens on the thread that made the box, and traps otherwise, so a completion
/// that lands on another thread stops the program instead of racing (swift-nio's NIOLoopBound).
package struct LoopBound<Value>: @unchecked Sendable {
    private let held: Value
    private let thread: pthread_t

    /// Made on the loop's thread: the only one that may read it.
    package init(_ value: Value) {
        held = value
        thread = pthread_self()
    }

    package var value: Value {
        precondition(pthread_equal(thread, pthread_self()) != 0, "a value bound to its loop's thread was read on another thread")
        return held
    }
}
