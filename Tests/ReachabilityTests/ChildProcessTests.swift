import Foundation
import Testing

/// The harness's own promise that timing tests lean on: a line's time is when its read returned
/// on the reader's thread, not when a test, late on a busy pool, looked at it.
struct ChildProcessTests {
    @Test func aLineArrivesWhenItsReadReturned_notWhenTheTestLooks() async throws {
        let child = try ChildProcess("/bin/sh", ["-c", "echo first; sleep 0.4; echo second"])
        #expect(try await child.exit(timeout: .seconds(10)) == 0)
        try await Task.sleep(for: .milliseconds(300))
        let looked = ContinuousClock.now
        let lines = child.timedLines
        try #require(lines.map(\.line) == ["first", "second"])
        #expect(lines[1].arrived - lines[0].arrived >= .milliseconds(390), "\(lines)")
        #expect(looked - lines[1].arrived >= .milliseconds(290), "\(lines)")
    }

    /// One splitter for both streams: an unterminated last line counts once the stream ended,
    /// with the last read's time, and never while it may still grow.
    @Test func anUnterminatedLastLineCountsOnceTheStreamEnded() async throws {
        // Until killed: in the main pass this test's first look came 60 s and more after the
        // spawn once (its whole run took 105 s), when a `sleep 60` had ended both streams.
        let child = try ChildProcess("/bin/sh", ["-c", "printf 'a\\nb'; printf 'x\\ny' >&2; exec sleep infinity"])
        try await eventually("both streams' bytes", timeout: .seconds(10), every: .milliseconds(10)) {
            child.output == "a\nb" && child.errorOutput == "x\ny"
        }
        #expect(child.lines == ["a"] && child.errorLines == ["x"], "\(child.lines) \(child.errorLines)")
        child.kill()
        #expect(child.waitForExit(timeout: .seconds(10)) != nil)
        #expect(child.lines == ["a", "b"] && child.errorLines == ["x", "y"], "\(child.lines) \(child.errorLines)")
        let timed = child.timedLines
        #expect(timed.count == 2 && timed[1].arrived >= timed[0].arrived, "\(timed)")
    }
}
