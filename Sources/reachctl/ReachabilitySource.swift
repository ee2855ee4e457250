import Reachability

/// Where reachctl gets its answers. Today only the library in-process; later reachd over D-Bus
/// first, with the in-process monitor as the fallback (DESIGN.md "reachctl"). Commands see only
/// this protocol, so the choice lives in `CommonOptions.openSource()`.
protocol ReachabilitySource: Sendable {
    /// The current picture.
    func snapshot() async throws -> ReachabilitySnapshot
    /// The current snapshot, then every change, until `stop()`.
    func updates() async throws -> AsyncStream<ReachabilityUpdate>
    /// Checks an address (at once) or a host name (within `timeout`).
    func check(_ target: String, timeout: Duration) async throws -> CheckResult
    /// Releases the source; pending update streams finish.
    func stop()
}

/// The library's own monitor, watching the kernel from inside this process.
struct InProcessSource: ReachabilitySource {
    let monitor: ReachabilityMonitor

    init(configuration: MonitorConfiguration) throws {
        monitor = try ReachabilityMonitor(configuration: configuration)
    }

    func snapshot() -> ReachabilitySnapshot { monitor.snapshot }
    func updates() -> AsyncStream<ReachabilityUpdate> { monitor.updates() }
    func check(_ target: String, timeout: Duration) async throws -> CheckResult {
        try await monitor.check(target, timeout: timeout)
    }
    func stop() { monitor.stop() }
}
