import Synchronization

/// `PathMonitor` through reachd: each iteration holds a `WatchPath` object on a client thread of
/// its own, and follows reachd's bus name as `ReachabilityClient.followsService` does. While
/// reachd is away (or when it does not answer), the path is derived in-process from a monitor
/// of the iteration's own, started then and stopped when reachd is back; `PathMonitor.Iterator`
/// drops what repeats, so a switch that leaves the path as it was yields nothing. Without an
/// in-process configuration, reachd only: the paths end when reachd goes away (or never answers).
struct PathThroughReachd: Sendable {
    let bus: BusAddress
    /// The in-process settings for the time reachd is away; nil: reachd only.
    let configuration: CoreConfiguration?
    /// How long reachd's calls may take (it answers from memory).
    static let callTimeout: Duration = .seconds(2)

    /// The path now: a path watch made and let go, else derived in-process.
    func currentPath(_ restriction: Path.Restriction) -> Path {
        if let client = try? ReachdOrInProcess.connect(bus, probeTimeout: Self.callTimeout, callTimeout: Self.callTimeout),
            let path = try? client.path(restriction)
        {
            return path
        }
        guard let configuration else { return Path(status: .unsatisfied) }
        return Self.inProcessPath(restriction, configuration: configuration)
    }

    /// The path derived in-process now, from a monitor made and stopped for it; unsatisfied when
    /// the kernel cannot be watched (netlink refused).
    static func inProcessPath(_ restriction: Path.Restriction, configuration: CoreConfiguration) -> Path {
        guard let monitor = try? ReachabilityMonitor(configuration: configuration) else { return Path(status: .unsatisfied) }
        defer { monitor.stop() }
        return Path(snapshot: monitor.snapshot, restriction: restriction)
    }

    /// reachd's answers for `restriction`, in-process ones while it is away, until the stream goes;
    /// `hostChanges` is told of each host change (reachd's `HostChangeDescribed`, or the
    /// in-process monitor's own description).
    func paths(_ restriction: Path.Restriction, hostChanges: (@Sendable (HostChange) -> Void)? = nil) -> AsyncStream<Path> {
        let (stream, continuation) = AsyncStream.makeStream(of: Path.self, bufferingPolicy: .bufferingNewest(64))
        let output = PathOutput(continuation, hostChanges: hostChanges)
        do {
            let client = try ReachabilityClient(bus: bus, timeout: Self.callTimeout)
            client.followsService = true
            let follower = PathFollower(client: client, restriction: restriction, configuration: configuration, output: output)
            let thread = try ReachabilityClientThread(follower)
            thread.submit { $0.start() }
            continuation.onTermination = { _ in thread.stop() }
        } catch {
            // No bus at all: in-process for good (reachd only: no paths).
            let interim = configuration.flatMap { InProcessPaths(restriction: restriction, configuration: $0, output: output) }
            continuation.onTermination = { _ in interim?.stop() }
            if interim == nil { continuation.finish() }
        }
        return stream
    }
}

/// The iteration's stream, with the epoch that says which source may yield: a source switched
/// away from (in-process when reachd returned) yields no stale path after the new one.
final class PathOutput: Sendable {
    private let state: Mutex<(continuation: AsyncStream<Path>.Continuation, epoch: UInt64)>
    private let hostChanges: (@Sendable (HostChange) -> Void)?

    init(_ continuation: AsyncStream<Path>.Continuation, hostChanges: (@Sendable (HostChange) -> Void)? = nil) {
        state = Mutex((continuation, 0))
        self.hostChanges = hostChanges
    }

    /// A host change from the source of `epoch`, to whoever asked (`PathMonitor.hostChangeHandler`).
    func describe(_ change: HostChange, epoch: UInt64) {
        guard let hostChanges, state.withLock({ $0.epoch == epoch }) else { return }
        hostChanges(change)
    }

    /// A new source takes over; its epoch.
    func switchSource() -> UInt64 { state.withLock { $0.epoch += 1; return $0.epoch } }

    func yield(_ path: Path, epoch: UInt64) {
        state.withLock { if $0.epoch == epoch { $0.continuation.yield(path) } }
    }

    func finish() { state.withLock { $0.continuation.finish() } }
}

/// The in-process path while reachd is away: a monitor of its own, iterated in a task.
final class InProcessPaths: Sendable {
    private let monitor: ReachabilityMonitor
    private let task: Task<Void, Never>

    init?(restriction: Path.Restriction, configuration: CoreConfiguration, output: PathOutput) {
        guard let monitor = try? ReachabilityMonitor(configuration: configuration) else { return nil }
        self.monitor = monitor
        let epoch = output.switchSource()
        let paths = PathMonitor.Paths(source: .monitor(monitor), restriction: restriction) { output.describe($0, epoch: epoch) }
        // On a queue of its own, as a started monitor's own paths (`PathFollowingExecutor`): on
        // Swift's pool, an application blocking its threads got no path while reachd was away.
        task = Task.detached(executorPreference: PathFollowingExecutor()) {
            for await path in paths { output.yield(path, epoch: epoch) }
        }
    }

    func stop() {
        task.cancel()
        monitor.stop()
    }
}

/// What lives on the iteration's client thread: the client, its path watch, and the in-process
/// interim while reachd is away.
final class PathFollower: ReachabilityClientOwner {
    let client: ReachabilityClient
    private let restriction: Path.Restriction
    private let configuration: CoreConfiguration?
    private let output: PathOutput
    private var object: String?
    private var epoch: UInt64 = 0
    private var interim: InProcessPaths?

    init(client: ReachabilityClient, restriction: Path.Restriction, configuration: CoreConfiguration?, output: PathOutput) {
        self.client = client
        self.restriction = restriction
        self.configuration = configuration
        self.output = output
    }

    /// The first job: the path watch, or in-process while reachd does not answer (its name is
    /// followed all the same, so that its arrival switches back).
    func start() {
        do {
            try watch()
        } catch {
            // In-process first: following the name may wait as long again on a bus that does not answer.
            away()
            try? client.followName()
            client.subscribed = true
            client.activate()
        }
    }

    private func watch() throws {
        let object = try client.watchPath(restriction)
        self.object = object
        interim?.stop()
        interim = nil
        epoch = output.switchSource()
        if let path = client.answer(ofPath: object) { output.yield(path, epoch: epoch) }
    }

    private func away() {
        object = nil
        // Reachd only: its absence ends the paths (the client thread ends with the stream).
        guard let configuration else { return output.finish() }
        if interim == nil {
            interim = InProcessPaths(restriction: restriction, configuration: configuration, output: output)
        }
    }

    func handle(_ events: [ReachabilityClient.Event]) throws {
        for event in events {
            switch event {
            case let .path(path, value) where path == object:
                output.yield(value, epoch: epoch)
            case let .hostChangeDescribed(description, _) where object != nil:
                output.describe(description, epoch: epoch)
            case .serviceLost:
                away()
            case .serviceReturned:
                try watch()
            case .path, .changed, .interfacesChanged, .hostChangeDescribed, .watch, .change:
                continue
            }
        }
    }

    func ended(lost: Bool) {
        interim?.stop()
        interim = nil
        output.finish()
    }
}
