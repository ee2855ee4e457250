import Dispatch
import Synchronization

/// NWPathMonitor's four members: a handler called on a queue with the current path, then with
/// each change, from `start(queue:)` until `cancel()`. Code written for Network.framework ports
/// by renaming `NWPathMonitor` to `PathMonitor` (and `NWPath` to `Path`).
extension PathMonitor {
    /// Called on the queue given to `start(queue:)` with the current path, then with each new
    /// one. Read at each call: set it before `start(queue:)` to see the first path.
    public var pathUpdateHandler: (@Sendable (Path) -> Void)? {
        get { delivery.state.withLock { $0.handler } }
        set { delivery.state.withLock { $0.handler = newValue } }
    }

    /// Called on the queue given to `start(queue:)` with each change of the host's answer: what it
    /// changed and whether sockets must be rebound (`HostChange.rebind`: the source address of
    /// the host's internet path went away or was replaced). The host's, whatever the kinds the
    /// monitor counts; through reachd (its `HostChangeDescribed`) or in-process alike. A change
    /// that leaves the path as it was (a new source address on the same link) is told here
    /// though `pathUpdateHandler` is not called. Set it before `start(queue:)`.
    public var hostChangeHandler: (@Sendable (HostChange) -> Void)? {
        get { delivery.state.withLock { $0.hostChangeHandler } }
        set { delivery.state.withLock { $0.hostChangeHandler = newValue } }
    }

    /// The queue given to `start(queue:)`; nil before.
    public var queue: DispatchQueue? { delivery.state.withLock { $0.queue } }

    /// Starts following the path; `pathUpdateHandler` is then called on `queue`. Never waits:
    /// whether reachd answers is found out on a thread of the monitor's own, and in-process
    /// monitors are made there. Once only: a second call, or one after `cancel()`, does nothing.
    public func start(queue: DispatchQueue) {
        var following = self.paths
        following.hostChanges = { [delivery] change in delivery.deliver(change) }
        let paths = following
        delivery.start(queue: queue) { [delivery] in
            Task.detached(executorPreference: PathFollowingExecutor()) {
                for await path in paths { delivery.deliver(path) }
            }
        }
    }

    /// Stops following the path: the handler is called no more, not even for a path already on
    /// its way to the queue. For good: the monitor cannot be started again. Idempotent.
    public func cancel() { delivery.cancel() }

    /// The last path delivered, as Apple's: never waits, and unsatisfied before `start(queue:)`
    /// and until the first path arrives. `askPath()` asks at once instead.
    public var currentPath: Path {
        delivery.state.withLock { $0.latest ?? Path(status: .unsatisfied) }
    }

    /// The path now, asked for at once (what `currentPath` cannot do without waiting): a shared
    /// monitor's answer, else reachd's (one call, bounded by the client's call timeout) or one
    /// derived in-process from a monitor made for it. For a one-shot question (`reachctl status
    /// --kind`); a program that follows the path starts the monitor and reads `currentPath`.
    public func askPath() -> Path { pathNow() }
}

/// What a started `PathMonitor` shares with the task that follows its paths: the handler, the
/// queue, the last path. The task holds this, not the monitor, so releasing the monitor cancels it.
final class PathDelivery: Sendable {
    struct State {
        var handler: (@Sendable (Path) -> Void)?
        var hostChangeHandler: (@Sendable (HostChange) -> Void)?
        var queue: DispatchQueue?
        /// The task following the paths, from `start(queue:)`.
        var task: Task<Void, Never>?
        var latest: Path?
        var cancelled = false
    }
    let state = Mutex(State())

    /// Runs `follow` (which starts the task) unless started or cancelled already.
    func start(queue: DispatchQueue, follow: () -> Task<Void, Never>) {
        state.withLock { state in
            guard state.task == nil, !state.cancelled else { return }
            state.queue = queue
            state.task = follow()
        }
    }

    /// A new path from the task: the latest, and the handler's on the queue.
    func deliver(_ path: Path) {
        let queue = state.withLock { state -> DispatchQueue? in
            guard !state.cancelled else { return nil }
            state.latest = path
            return state.queue
        }
        queue?.async { [self] in
            // Cancelled since it was queued: Apple's cancel() stops the calls, this one too.
            guard let handler = state.withLock({ $0.cancelled ? nil : $0.handler }) else { return }
            handler(path)
        }
    }

    /// A host change from the task: the handler's on the queue, unless nobody asked.
    func deliver(_ change: HostChange) {
        let queue = state.withLock { $0.cancelled || $0.hostChangeHandler == nil ? nil : $0.queue }
        queue?.async { [self] in
            guard let handler = state.withLock({ $0.cancelled ? nil : $0.hostChangeHandler }) else { return }
            handler(change)
        }
    }

    func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            return state.task
        }
        // Ends the iteration, which lets go of its reachd connection or in-process monitor.
        task?.cancel()
    }
}

/// Where the task following a started monitor's paths runs: a serial queue of its own, which
/// Dispatch gives a thread whenever it has work, not Swift's cooperative pool, whose threads
/// (one per core) an application blocking in async code can all hold. The paths then stopped
/// with it, where NWPathMonitor's keep coming on their queue (a test suite blocking two tasks
/// on a 2-core machine starved them for 87 s).
final class PathFollowingExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "org.reachd.PathMonitor.following")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
