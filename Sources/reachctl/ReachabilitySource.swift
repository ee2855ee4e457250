import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// Where reachctl gets its answers: reachd over D-Bus (`DaemonSource`), or the library
/// in-process (`InProcessSource`) when no reachd answers or `--netns` asks for a namespace
/// (docs/admins.md, "Asking with reachctl"). Commands see only this protocol, so the choice lives in
/// `CommonOptions.openSource()`, and the output is the same either way.
protocol ReachabilitySource: Sendable {
    /// The current picture.
    func snapshot() async throws -> ReachabilitySnapshot
    /// The kernel mirror's overruns and resyncs; nil when reachd does not say.
    func counters() async throws -> MirrorCounters?
    /// The Prometheus exposition (reachd's own, or the in-process monitor's rendered the same way).
    func metrics() async throws -> String
    /// The current snapshot, then every change, until `stop()`.
    func updates() async throws -> AsyncStream<ReachabilityUpdate>
    /// The same, each given to `body` where it arrives; the stream ends when they do.
    func updates(handledBy body: @escaping @Sendable (ReachabilityUpdate) -> Void) async throws -> AsyncStream<Never>
    /// Checks an address (at once) or a host name (within `timeout`; nil: the configured
    /// DefaultTimeout= of reachd.conf, reachd's own when reachd answers); with `uid`, as that
    /// Unix user's traffic is routed (`reachctl check --user`).
    func check(_ target: String, timeout: Duration?, asUser uid: UInt32?) async throws -> CheckResult
    /// The layers behind the answer for the host (`target` empty) or an address, as this
    /// user's traffic is routed (`reachctl why`). An invalid address throws, naming it.
    func explain(_ target: String) async throws -> Explanation
        /// The answer for each of `targets` as soon as it is known, then again whenever the network
    /// changes, until `stop()`. An answer may repeat; callers drop repeats. An invalid target
    /// answers once with reason `invalidTarget`.
    func answers(for targets: [String]) async throws -> AsyncStream<TargetAnswer>
    /// Releases the source; pending update streams finish.
    func stop()
}

extension ReachabilitySource {
    /// `updates()` iterated by a task of its own, for sources with no thread to hand them on.
    func updates(handledBy body: @escaping @Sendable (ReachabilityUpdate) -> Void) async throws -> AsyncStream<Never> {
        let updates = try await self.updates()
        return AsyncStream { continuation in
            let task = Task {
                for await update in updates { body(update) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// The library's own monitor, watching the kernel from inside this process.
struct InProcessSource: ReachabilitySource {
    let monitor: ReachabilityMonitor
    /// How long a host name may take when the caller names no timeout: DefaultTimeout= of the
    /// configuration reachd would read, so both answer the same.
    let defaultTimeout: Duration
    /// The resolver's lookups at once (half of them for followed targets).
    let lookups: Int

    init(configuration: CoreConfiguration, defaultTimeout: Duration) throws {
        monitor = try ReachabilityMonitor(configuration: configuration)
        self.defaultTimeout = defaultTimeout
        lookups = configuration.maximumConcurrentLookups
    }

    func snapshot() -> ReachabilitySnapshot { monitor.snapshot }
    func counters() -> MirrorCounters? { monitor.counters }
    /// In-process there are no watches and no checks but this command's: those count 0, the
    /// start time is reachctl's, and the state and netlink counters are the monitor's.
    func metrics() -> String {
        MetricsExposition.render(MetricsSample(snapshot: monitor.snapshot, mirror: monitor.counters, startTime: SystemClock.wallSeconds()))
    }
    func updates() -> AsyncStream<ReachabilityUpdate> { monitor.updates() }
    func check(_ target: String, timeout: Duration?, asUser uid: UInt32?) async throws -> CheckResult {
        try await monitor.check(target, timeout: timeout ?? defaultTimeout, asUser: uid)
    }
    func stop() { monitor.stop() }
    func explain(_ target: String) throws -> Explanation {
        try monitor.explain(target, uid: getuid()).mapError { ReachctlError("invalid target: \($0)") }.get()
    }

    /// Follows the targets through the library's follower, as reachd's watches do: addresses
    /// at once, host names each with one lookup in flight, all asked again when the routing
    /// moves. Each answer carries the generation of the state it was found in.
    func answers(for targets: [String]) -> AsyncStream<TargetAnswer> {
        let (stream, continuation) = AsyncStream.makeStream(of: TargetAnswer.self)
        let monitor = self.monitor
        let answer = { @Sendable (result: CheckResult) -> Void in
            continuation.yield(TargetAnswer(result: result, generation: monitor.snapshot.generation))
        }
        let followed = MonitorTargets(
            monitor: monitor, settings: TargetFollower.Settings(lookups: lookups, hostTimeout: defaultTimeout),
            answered: { answer($1) }, ended: { continuation.finish() })
        for target in targets { followed.follow(target, known: answer) }
        continuation.onTermination = { _ in followed.stop() }
        return stream
    }
}

/// One answer for a watched target (`reachctl monitor TARGET`, `reachctl wait --target`).
struct TargetAnswer: Sendable, Hashable {
    var result: CheckResult
    /// The generation of the network state the answer rests on, when known.
    var generation: UInt64?

    /// What a user sees change: the verdict, its flags, the interface and the reason.
    var essence: Essence { Essence(flags: result.flags, interface: result.interface, reason: result.reason) }
    struct Essence: Hashable, Sendable {
        var flags: ReachabilityFlags
        var interface: String
        var reason: Reason?
    }
}
