import Synchronization

/// One delivery from a monitor: first the full picture, then each change.
public enum ReachabilityUpdate: Sendable {
    case snapshot(ReachabilitySnapshot)
    case change(ReachabilityChange)
}

/// Watches the kernel in-process and keeps a derived reachability picture in step with it.
///
/// ```swift
/// let monitor = try ReachabilityMonitor()
/// for await update in monitor.updates() { ... }
/// ```
/// The netlink sockets are read on a thread of the monitor's own, so awaiting updates never
/// ties up Swift's cooperative pool.
public final class ReachabilityMonitor: Sendable {
    private let hub: Hub
    private let mirror: SharedState

    /// Opens the netlink sockets and completes the first sync before returning, so the
    /// monitor is valid from its first value: there is no "unknown until the first update".
    /// The kernel answers at once; one too busy to (a namespace of thousands of links being
    /// torn down) is waited for, up to 30 s, before this throws.
    public convenience init() throws {
        try self.init(configuration: CoreConfiguration())
    }

    /// `init()` with reachd's settings (another namespace, reachd.conf's rules and deadlines).
    package init(configuration: CoreConfiguration) throws {
        let hub = try Hub()
        let loop = PollLoop(wakeup: hub.wakeup)
        let core = try ReachabilityCore(configuration: configuration, loop: loop, checkIDs: hub.checkIDs)
        self.hub = hub
        mirror = core.shared
        core.follow { update in hub.publish(update) }
        // Handed over whole: from here on only the thread touches the core and its loop.
        nonisolated(unsafe) let (threadCore, threadLoop) = (core, loop)
        let namespacePath = configuration.namespacePath
        try DedicatedThread.start {
            // The thread enters the watched namespace (the core's netlink sockets were opened in
            // it already), so the DNS sockets it opens live there too.
            if let namespacePath {
                do throws(SystemError) { try NetworkNamespace.enter(namespacePath) } catch {
                    threadCore.disableHostChecks(because: "cannot enter the network namespace: \(error)")
                }
            }
            hub.run(threadCore, on: threadLoop)
        }
    }

    deinit { stop() }

    /// The current picture.
    public var snapshot: ReachabilitySnapshot { mirror.snapshot }

    /// Reads the current state under the mirror's lock (address checks, tests).
    func withState<T>(_ body: (borrowing NetworkState) -> T) -> T { mirror.withState(body) }

    /// How many times the monitor re-dumped the kernel's state after an overrun (and at start).
    public var resyncCount: Int { Int(mirror.counters.resyncs) }

    /// Overruns and resyncs so far.
    package var counters: MirrorCounters { mirror.counters }

    /// The current snapshot, then every change, until `stop()` or the stream is dropped.
    public func updates() -> AsyncStream<ReachabilityUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReachabilityUpdate.self)
        let (mirror, hub) = (self.mirror, self.hub)
        let id = hub.shared.withLock { shared -> UInt64? in
            guard !shared.stopped else { return nil }
            // Under the hub's lock, which every change passes before it is yielded: a change
            // applied after this snapshot reaches the stream, one included in it does not.
            let snapshot = mirror.snapshot
            continuation.yield(.snapshot(snapshot))
            shared.nextID += 1
            shared.subscribers[shared.nextID] = (continuation, snapshot.generation)
            return shared.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak hub] _ in hub?.shared.withLock { _ = $0.subscribers.removeValue(forKey: id) } }
        return stream
    }

    /// Checks one address against the kernel's routing truth and the link states held here.
    /// Never touches DNS and never waits: two system calls and a table lookup.
    /// `0.0.0.0` and `::` answer "is there general connectivity".
    public func check(address text: String) -> CheckResult { mirror.check(address: text) }

    /// Explains the answer for the host (`target` empty) or an address: every layer from the
    /// radio to the probe, and the first that fails (`Explanation`). `uid`: whose traffic the
    /// route is looked up for; nil: the system's. Never waits.
    package func explain(_ target: String, uid: UInt32? = nil) -> Result<Explanation, ExplanationRefusal> {
        mirror.explain(target, uid: uid)
    }

    /// Checks an address at once, or a host name within `timeout`. `uid`: as Unix user `uid`'s
    /// traffic would be routed (RTA_UID: `ip rule ... uidrange`); without, as this process's own,
    /// which are already its user's. DNS is the same for every user.
    public func check(_ target: String, timeout: Duration = .seconds(5), asUser uid: UInt32? = nil) async throws -> CheckResult {
        if AddressTarget.looksLikeAddress(target) { return mirror.check(address: target, uid: uid) }
        let result = try await check(host: target, deadline: .now + timeout)
        guard uid != nil, !result.addresses.isEmpty else { return result }
        return mirror.evaluate(addresses: result.addresses, target: target, uid: uid)
    }

    /// The host's path facts (families, gateways, why not online) in the state now.
    public var pathFacts: PathFacts { mirror.withState { $0.pathFacts } }

    /// Resolves `host` (A and AAAA; /etc/hosts, then DNS) and checks its addresses. Answers by
    /// `deadline` whatever DNS does: `dnsTimeout` then. Answers at once, without a query, when
    /// no nameserver is routable. Cancelling the calling task ends the check (`CheckCancelled`).
    public func check(host: String, deadline: ContinuousClock.Instant) async throws -> CheckResult {
        if case let .failure(error) = HostName.validate(host) { return .invalid(host, error.description) }
        let id = hub.nextCheckID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CheckResult, any Error>) in
                startHostCheck(id: id, host: host, deadline: deadline) { result in
                    continuation.resume(with: result.mapError { $0 as any Error })
                }
            }
        } onCancel: {
            _ = hub.submit(.cancel(id))
        }
    }

    /// `check(host:deadline:)` for callers that cannot await (SystemConfiguration's GetFlags, a
    /// watch re-checked after a change): `completion` runs once, on the monitor's thread, with
    /// the answer by `deadline`, or `CheckCancelled` when the monitor has stopped.
    package func check(
        host: String, deadline: ContinuousClock.Instant,
        completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void
    ) {
        if case let .failure(error) = HostName.validate(host) { return completion(.success(.invalid(host, error.description))) }
        startHostCheck(id: hub.nextCheckID(), host: host, deadline: deadline, completion: completion)
    }

    private func startHostCheck(
        id: UInt64, host: String, deadline: ContinuousClock.Instant,
        completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void
    ) {
        let request = HostCheckRequest(id: id, name: host, deadline: deadline, completion: completion)
        if !hub.submit(.check(request)) { return completion(.failure(CheckCancelled())) }
    }

    /// Runs `body` on the monitor's thread with its core and loop, after the work submitted
    /// before it; false, and `body` never runs, once the monitor has stopped.
    @discardableResult
    func onThread(_ body: @escaping @Sendable (ReachabilityCore, PollLoop) -> Void) -> Bool { hub.submit(.run(body)) }

    /// Runs `body` once the monitor has stopped: on its thread as it ends, or at once when it has.
    func onStop(_ body: @escaping @Sendable () -> Void) {
        let later = hub.shared.withLock { shared in
            guard !shared.ended else { return false }
            shared.stopHandlers.append(body)
            return true
        }
        if !later { body() }
    }

    /// Stops watching; every update stream finishes. Idempotent.
    public func stop() { hub.stop() }

    /// What the monitor's callers share with its thread: the subscribers, the inbox of host
    /// checks and the wake-up pipe. Owned here, so it outlives both the thread and the monitor,
    /// whichever ends last.
    final class Hub: Sendable {
        struct Shared: ~Copyable {
            /// Each subscriber with the generation of the snapshot it started from.
            var subscribers: [UInt64: (AsyncStream<ReachabilityUpdate>.Continuation, since: UInt64)] = [:]
            var nextID: UInt64 = 0
            var stopped = false
            /// `onStop` bodies, run as the thread ends (`ended`).
            var stopHandlers: [@Sendable () -> Void] = []
            var ended = false
        }
        let shared = Mutex(Shared())
        /// Work for the monitor's thread from other threads; `nil` once the thread is gone.
        private let inbox = Mutex<[LoopRequest]?>([])
        let checkIDs = HostCheckIDs()
        let wakeup: WakeUpPipe

        enum LoopRequest: Sendable {
            case check(HostCheckRequest)
            case cancel(UInt64)
            case run(@Sendable (ReachabilityCore, PollLoop) -> Void)
        }

        init() throws(SystemError) { wakeup = try WakeUpPipe() }

        /// From the core's own sequence: never one of the ids it gives its own checks (`CoreTargets`').
        func nextCheckID() -> UInt64 { checkIDs.next() }

        /// Queues work for the thread and wakes it; false when the monitor has stopped.
        func submit(_ request: LoopRequest) -> Bool {
            let queued = inbox.withLock { inbox in
                guard inbox != nil else { return false }
                inbox!.append(request)
                return true
            }
            if queued { wakeup.signal() }
            return queued
        }

        func stop() {
            let first = shared.withLock { shared -> Bool in
                defer { shared.stopped = true }
                return !shared.stopped
            }
            if first { wakeup.signal() }
        }

        /// The core's follower, on the thread.
        func publish(_ update: CoreUpdate) {
            guard let change = update.change else { return }
            shared.withLock { shared in
                for (subscriber, since) in shared.subscribers.values where change.generation > since {
                    subscriber.yield(.change(change))
                }
            }
        }

        /// The monitor's thread: the core's loop until `stop()`, then every caller is answered.
        func run(_ core: ReachabilityCore, on loop: PollLoop) {
            while loop.runOnce(woken: {
                if shared.withLock({ $0.stopped }) { return false }
                for request in inbox.withLock({ inbox in defer { inbox = [] }; return inbox ?? [] }) {
                    switch request {
                    case let .check(check): core.checkHost(check)
                    case let .cancel(id): core.cancelHostCheck(id)
                    case let .run(body): body(core, loop)
                    }
                }
                return true
            }) {}
            for request in inbox.withLock({ inbox in defer { inbox = nil }; return inbox ?? [] }) {
                if case let .check(check) = request { check.completion(.failure(CheckCancelled())) }
            }
            core.cancelHostChecks()
            let (subscribers, stopHandlers) = shared.withLock { shared in
                defer {
                    shared.subscribers.removeAll()
                    shared.stopHandlers.removeAll()
                    shared.ended = true
                }
                return (shared.subscribers.values.map(\.0), shared.stopHandlers)
            }
            for body in stopHandlers { body() }
            for subscriber in subscribers { subscriber.finish() }
        }
    }
}
