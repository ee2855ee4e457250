#if canImport(Glibc)
import Glibc
#endif

/// Runs work on a fresh OS thread of its own. Needed where thread state matters (a network
/// namespace entered with setns(2) must never leak into a pooled thread) or where a loop
/// must block in poll(2) without starving Swift's cooperative pool.
package enum DedicatedThread {
    private final class Work: @unchecked Sendable {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new detached thread.
    public static func start(_ body: @escaping @Sendable () -> Void) throws(SystemError) {
        pthread_detach(try spawn(body))
    }

    /// Runs `body` on a new thread and waits for it: its result.
    public static func run<T>(_ body: () -> T) throws(SystemError) -> T {
        var result: T?
        try withoutActuallyEscaping(body) { (body) throws(SystemError) in
            _ = pthread_join(try spawn { result = body() }, nil)
        }
        return result!
    }

    /// Starts `body` on a new joinable thread; `pthread_join` it.
    public static func spawn(_ body: @escaping () -> Void) throws(SystemError) -> pthread_t {
        let context = Unmanaged.passRetained(Work(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            let work = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
            work.body()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<Work>.fromOpaque(context).release()
            throw SystemError("pthread_create", errno: result)
        }
        return thread
    }
}
