import Testing
@testable import Reachability

/// A loop-bound value is read on its loop's thread, and a read from any other thread stops the
/// process: a completion that lands off its loop traps instead of racing on the loop's state.
@Suite struct LoopBoundTests {
    @Test func readsOnItsOwnThread() {
        let box = LoopBound([1, 2, 3])
        #expect(box.value == [1, 2, 3])
    }

    @Test func trapsWhenReadOffItsLoop() async {
        await #expect(processExitsWith: .failure) {
            let box = LoopBound(7)
            // Read on a thread of its own, as a completion delivered to the wrong loop would be.
            let read = try DedicatedThread.run { box.value }
            Issue.record("read \(read) off the loop without a trap")
        }
    }
}
