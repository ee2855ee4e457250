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
}
