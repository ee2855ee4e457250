import Foundation
import Testing

/// Runs each job of a test on a thread of its own, off Swift's cooperative pool.
///
/// Swift Testing runs every test on the cooperative pool, which has as many threads as the
/// machine has cores (two on CI). Another test's blocking call (waiting for `ip`, a namespace,
/// a daemon's bus) holds one of them, and a test that times what it observes sees it late: in
/// fresh-clone runs `WatchSharingTests` saw a fourth lookup within 2.5 s of the third (a backoff
/// of 4 s +-20% allows that only if the third was seen at least 1.2 s late), and a `reachctl
/// wait --timeout 60s` started by a test gave up before that test's 300 ms sleep came back.
/// Only for such tests: given to every kernel suite of the main pass, it ran all their blocking
/// work at once, and the pass took as long (278 s against 270; its length was then one test's waiting)
/// with 56 timing failures (BENCHMARKS.md, "Session 25" and "Session 26").
final class TestThreads: TaskExecutor {
    static let shared = TestThreads()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread { job.runSynchronously(on: executor) }.start()
    }
}

/// A suite's tests (and their child tasks) run on `TestThreads`.
struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(TestThreads.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Each job of the suite's tests on a thread of its own: what a test observes is seen when it
    /// happens, not when another test's blocking call lets a pool thread go.
    static var ownThreads: Self { OwnThreadsTrait() }
}
