import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// reachd over D-Bus, through `ReachabilityClient` on the library's `ReachabilityClientThread`:
/// `Changed` signals and watch answers are turned into updates on that thread. Unless told to
/// fail fast (`--daemon`), updates and answers outlive reachd: when it goes away they pause, and
/// when it returns they go on from what was last given.
final class DaemonSource: ReachabilitySource {
    /// How long calls may take once the probe found reachd (it answers from memory, at once).
    static let callTimeout: Duration = .seconds(2)

    private let thread: ReachabilityClientThread<DaemonContext>
    private let ids = Atomic<UInt64>(0)

    private init(thread: ReachabilityClientThread<DaemonContext>) { self.thread = thread }

    deinit { thread.stop() }

    /// reachd's answers through `client`, which answered the probe (`ReachdOrInProcess`).
    /// `follows`: updates and answers wait for reachd across its restarts (and the bus's);
    /// without, they end when it goes away.
    convenience init(client: sending ReachabilityClient, follows: Bool) throws(SystemError) {
        client.followsService = follows
        self.init(thread: try ReachabilityClientThread(DaemonContext(client: client)))
    }

    /// reachd on `bus` for one question, or the reason it does not answer within `probeTimeout`.
    static func open(_ bus: BusAddress, probeTimeout: Duration) throws -> DaemonSource {
        try DaemonSource(
            client: ReachdOrInProcess.connect(bus, probeTimeout: probeTimeout, callTimeout: max(probeTimeout, callTimeout)),
            follows: false)
    }

    func snapshot() async throws -> ReachabilitySnapshot {
        try await thread.perform { try $0.client.snapshot() }
    }

    func counters() async throws -> MirrorCounters? {
        try await thread.perform { try $0.client.fullStatus(interfaces: false).counters }
    }

    func metrics() async throws -> String {
        try await thread.perform { try $0.client.metrics() }
    }

    func check(_ target: String, timeout: Duration?, asUser uid: UInt32?) async throws -> CheckResult {
        try await thread.perform { try $0.client.check(target, timeout: timeout, asUser: uid) }
    }

    func explain(_ target: String) async throws -> Explanation {
        do {
            return try await thread.perform { try $0.client.explain(target) }
        } catch let error as BusError where error.name == ReachdContract.ErrorName.invalidTarget {
            throw ReachctlError("invalid target: \(error.message)")
        }
    }

    /// CheckUnit: `target` (an address, "" for the internet) as the service `unit`'s traffic.
    func checkUnit(_ unit: String, _ target: String) async throws -> (result: CheckResult, explanation: Explanation) {
        do {
            return try await thread.perform { try $0.client.checkUnit(unit, target) }
        } catch let error as BusError {
            throw ReachctlError(error.message)
        }
    }

    /// reachd's connectivity probe, asked now (`reachctl check --validate`).
    func validate() async throws -> ConnectivityStatus {
        try await thread.perform { try $0.client.validate() }
    }

    func updates() async throws -> AsyncStream<ReachabilityUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReachabilityUpdate.self, bufferingPolicy: .unbounded)
        try await addUpdates(delivered: { continuation.yield($0) }, until: continuation)
        return stream
    }

    /// Each update handed to `body` on the client thread as the signals are applied: a monitor
    /// line is written by the thread that read the signals, with no wake-up of a task between.
    func updates(handledBy body: @escaping @Sendable (ReachabilityUpdate) -> Void) async throws -> AsyncStream<Never> {
        let (stream, continuation) = AsyncStream.makeStream(of: Never.self)
        try await addUpdates(delivered: body, until: continuation)
        return stream
    }

    /// A subscriber whose updates go to `deliver`, and which ends with `end` (either way).
    private func addUpdates<Element>(
        delivered deliver: @escaping @Sendable (ReachabilityUpdate) -> Void, until end: AsyncStream<Element>.Continuation
    ) async throws {
        let id = ids.add(1, ordering: .relaxed).newValue
        try await thread.perform { try $0.addUpdates(id, DaemonContext.Subscriber(deliver: deliver, finish: { end.finish() })) }
        let thread = self.thread
        end.onTermination = { _ in thread.submit { $0.removeUpdates(id) } }
    }

    func answers(for targets: [String]) async throws -> AsyncStream<TargetAnswer> {
        let (stream, continuation) = AsyncStream.makeStream(of: TargetAnswer.self, bufferingPolicy: .unbounded)
        let id = ids.add(1, ordering: .relaxed).newValue
        try await thread.perform { try $0.addTargets(id, targets, continuation) }
        let thread = self.thread
        continuation.onTermination = { _ in thread.submit { $0.removeTargets(id) } }
        return stream
    }

    func stop() { thread.stop() }

    /// One Peer.Ping: whether reachd's loop still answers within `callTimeout` (`ReachdHeartbeat`).
    func ping() async throws { try await thread.perform { try $0.client.ping() } }
}

/// What lives on the client thread: the client and the subscribers it feeds. The client keeps
/// reachd's snapshot from its signals (`followSnapshot()`): each subscriber gets it once, then
/// every change the client applied, with no call per change.
final class DaemonContext: ReachabilityClientOwner {
    let client: ReachabilityClient
    /// Where an `updates()` subscriber's updates go, and how it is ended.
    struct Subscriber {
        let deliver: @Sendable (ReachabilityUpdate) -> Void
        let finish: @Sendable () -> Void
    }
    private var updateSubscribers: [UInt64: Subscriber] = [:]
    /// `answers(for:)` streams, their targets and the watch paths each holds.
    private var targetSubscribers: [UInt64: (continuation: AsyncStream<TargetAnswer>.Continuation, targets: [String], paths: [String])] = [:]
    private var watchOwners: [String: UInt64] = [:]
    /// The newest generation seen (changes, snapshots) of the reachd we talk to.
    private var generation: UInt64?
    /// reachd went away and was said to (once), and has not returned yet.
    private var away = false

    init(client: ReachabilityClient) { self.client = client }

    func ended(lost: Bool) {
        for subscriber in updateSubscribers.values { subscriber.finish() }
        for subscriber in targetSubscribers.values { subscriber.continuation.finish() }
        updateSubscribers.removeAll()
        targetSubscribers.removeAll()
    }

    /// Turns events into updates and answers.
    func handle(_ events: [ReachabilityClient.Event]) throws {
        for event in events {
            switch event {
            case .serviceLost:
                lost()
            case .serviceReturned:
                try resume()
            case let .change(change):
                generation = change.generation
                for subscriber in updateSubscribers.values { subscriber.deliver(.change(change)) }
            case let .watch(path, result):
                guard let id = watchOwners[path], let subscriber = targetSubscribers[id],
                    !ReachabilityClient.isPending(result)
                else { continue }
                subscriber.continuation.yield(TargetAnswer(result: result, generation: generation))
            case .changed, .hostChangeDescribed, .interfacesChanged, .path:
                // The client applies these to its snapshot and says so with `.change`.
                continue
            }
        }
    }

    func addUpdates(_ id: UInt64, _ subscriber: Subscriber) throws {
        let snapshot = try client.followSnapshot()
        generation = max(generation ?? 0, snapshot.generation)
        subscriber.deliver(.snapshot(snapshot))
        updateSubscribers[id] = subscriber
    }

    func removeUpdates(_ id: UInt64) {
        updateSubscribers.removeValue(forKey: id)
    }

    /// Watches each target; yields the answers already known (a host's comes when resolved).
    func addTargets(_ id: UInt64, _ targets: [String], _ continuation: AsyncStream<TargetAnswer>.Continuation) throws {
        try client.subscribe()
        if generation == nil { generation = try client.status().generation }
        let (paths, answers) = try watch(targets, for: id)
        for answer in answers { continuation.yield(answer) }
        targetSubscribers[id] = (continuation, targets, paths)
    }

    /// Makes a watch of each target for subscriber `id`: the paths, and the answers known at once
    /// (an invalid target's refusal among them). All or none: on a failure the watches made go.
    private func watch(_ targets: [String], for id: UInt64) throws -> (paths: [String], answers: [TargetAnswer]) {
        var paths: [String] = []
        var answers: [TargetAnswer] = []
        do {
            for target in targets {
                let path: String
                do {
                    path = try client.watch(target)
                } catch where error.name == ReachdContract.ErrorName.invalidTarget {
                    answers.append(TargetAnswer(
                        result: CheckResult(target: target, reason: .invalidTarget, message: error.message), generation: nil))
                    continue
                }
                paths.append(path)
                watchOwners[path] = id
                if let answer = client.answer(ofWatch: path), !ReachabilityClient.isPending(answer) {
                    answers.append(TargetAnswer(result: answer, generation: generation))
                }
            }
        } catch {
            for path in paths {
                watchOwners.removeValue(forKey: path)
                try? client.unwatch(path)
            }
            throw error
        }
        return (paths, answers)
    }

    /// reachd went away: its watches went with it. Said once, when someone is following.
    private func lost() {
        watchOwners.removeAll()
        for id in targetSubscribers.keys { targetSubscribers[id]?.paths = [] }
        guard !away, !(updateSubscribers.isEmpty && targetSubscribers.isEmpty) else { return }
        away = true
        Terminal.write("reachctl: reachd went away; waiting for it to return\n", to: STDERR_FILENO)
    }

    /// reachd is back (the client subscribed to it, and read its snapshot anew when one is
    /// followed: what differs comes as a change), and the targets are watched anew. Its
    /// generation counts from its start.
    private func resume() throws {
        generation = client.followed?.generation
        if !targetSubscribers.isEmpty {
            if generation == nil { generation = try client.status().generation }
            for (id, subscriber) in targetSubscribers {
                let (paths, answers) = try watch(subscriber.targets, for: id)
                targetSubscribers[id]?.paths = paths
                for answer in answers { subscriber.continuation.yield(answer) }
            }
        }
        if away {
            away = false
            Terminal.write("reachctl: reachd is back\n", to: STDERR_FILENO)
        }
    }

    func removeTargets(_ id: UInt64) {
        guard let subscriber = targetSubscribers.removeValue(forKey: id) else { return }
        for path in subscriber.paths {
            watchOwners.removeValue(forKey: path)
            try? client.unwatch(path)
        }
    }
}

extension DaemonSource {
    /// reachd's recorded changes of answers since `since` (`reachctl history`).
    func history(since: UInt64) async throws -> (oldest: UInt64, records: [HistoryRecord]) {
        try await thread.perform { try $0.client.history(since: since) }
    }
}
