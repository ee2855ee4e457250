import Foundation

/// Polls `condition` every `interval` until it holds. Throws `TimedOut` after `timeout`, naming
/// `what`, which is evaluated only then, so it can describe the state at the deadline.
func eventually(
    _ what: @autoclosure () -> String, timeout: Duration = waitLimit, every interval: Duration = .milliseconds(5),
    _ condition: () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what()) }
        try await Task.sleep(for: interval)
    }
}
