import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Why reachd cannot answer, in words for the fallback notice or the `--daemon` error.
struct DaemonUnavailable: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
}

/// reachd over D-Bus, through `ReachabilityClient`.
///
/// sd-bus wants one thread per connection, and its waits block, so the connection lives on a
/// thread of its own (a pthread, never Swift's cooperative pool): every call is a job run there,
/// and between jobs the thread waits on the bus fd and a wake-up pipe. `Changed` signals and
/// watch answers are turned into updates on that thread.
final class DaemonSource: ReachabilitySource {
    /// How long calls may take once the probe found reachd (it answers from memory, at once).
    static let callTimeout: Duration = .seconds(2)

    private let worker: DaemonWorker
    private let ids = Atomic<UInt64>(0)

    private init(worker: DaemonWorker) { self.worker = worker }

    deinit { worker.stop() }

    /// Connects to `bus` and asks reachd for its status within `probeTimeout`. Throws with the
    /// reason when no reachd answers: no bus, nobody owns the name, no reply in time, or an
    /// answer this reachctl cannot read.
    static func open(_ bus: BusConnection.Address, probeTimeout: Duration) throws(DaemonUnavailable) -> DaemonSource {
        let client: ReachabilityClient
        do {
            client = try ReachabilityClient(bus: bus, timeout: probeTimeout)
        } catch {
            throw DaemonUnavailable(reason: "cannot connect to \(describe(bus)): \(Self.systemText(error))")
        }
        do {
            _ = try client.status()
        } catch {
            throw DaemonUnavailable(reason: Self.reason(for: error, bus: bus, timeout: probeTimeout))
        }
        client.timeout = max(probeTimeout, callTimeout)
        do {
            return DaemonSource(worker: try DaemonWorker(client: client))
        } catch {
            throw DaemonUnavailable(reason: "\(error)")
        }
    }

    static func describe(_ bus: BusConnection.Address) -> String {
        switch bus {
        case .system: "the system bus"
        case .user: "the user bus"
        case let .address(address): "the bus at \(address)"
        }
    }

    /// The probe's failure in a user's words.
    static func reason(for error: BusError, bus: BusConnection.Address, timeout: Duration) -> String {
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            return "\(ReachdContract.busName) is not on \(describe(bus))"
        case "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.NoReply", "System.Error.\(ETIMEDOUT)":
            return "no answer on \(describe(bus)) within \(DurationText.format(timeout))"
        case "org.freedesktop.DBus.Error.AccessDenied":
            return "access denied on \(describe(bus)): \(error.message)"
        default:
            return systemText(error)
        }
    }

    /// `No such file or directory` for an errno-based error, the full description otherwise.
    private static func systemText(_ error: BusError) -> String {
        let prefix = "System.Error."
        if error.name.hasPrefix(prefix), let code = Int32(error.name.dropFirst(prefix.count)) {
            return String(cString: strerror(code))
        }
        return error.description
    }

    func snapshot() async throws -> ReachabilitySnapshot {
        try await worker.perform { try $0.client.snapshot() }
    }

    func counters() async throws -> MirrorCounters? {
        try await worker.perform { try $0.client.fullStatus().counters }
    }

    func metrics() async throws -> String {
        try await worker.perform { try $0.client.metrics() }
    }

    func check(_ target: String, timeout: Duration?) async throws -> CheckResult {
        try await worker.perform { try $0.client.check(target, timeout: timeout) }
    }

    /// reachd's connectivity probe, asked now (`reachctl check --validate`).
    func validate() async throws -> ConnectivityStatus {
        try await worker.perform { try $0.client.validate() }
    }

    func updates() async throws -> AsyncStream<ReachabilityUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReachabilityUpdate.self, bufferingPolicy: .unbounded)
        let id = ids.add(1, ordering: .relaxed).newValue
        try await worker.perform { try $0.addUpdates(id, continuation) }
        let worker = self.worker
        continuation.onTermination = { _ in worker.submit { $0.removeUpdates(id) } }
        return stream
    }

    func answers(for targets: [String]) async throws -> AsyncStream<TargetAnswer> {
        let (stream, continuation) = AsyncStream.makeStream(of: TargetAnswer.self, bufferingPolicy: .unbounded)
        let id = ids.add(1, ordering: .relaxed).newValue
        try await worker.perform { try $0.addTargets(id, targets, continuation) }
        let worker = self.worker
        continuation.onTermination = { _ in worker.submit { $0.removeTargets(id) } }
        return stream
    }

    func stop() { worker.stop() }
}

/// The thread that owns the bus connection, and its inbox of jobs.
final class DaemonWorker: Sendable {
    struct Job: Sendable {
        let run: @Sendable (DaemonContext) -> Void
        /// Called instead of `run` when the thread has ended.
        let cancel: @Sendable () -> Void
    }

    /// Pending jobs; nil once the thread is gone (stopped, or reachd lost).
    private let jobs = Mutex<[Job]?>([])
    private let stopping = Atomic<Bool>(false)
    let wakeup: WakeUpPipe

    init(client: ReachabilityClient) throws {
        do {
            wakeup = try WakeUpPipe()
        } catch {
            throw ReachctlError(error.description)
        }
        let handOver = UncheckedSendable(client)
        try DedicatedThread.start { [self] in
            let context = DaemonContext(client: handOver.take(), worker: self)
            context.run()
        }
    }

    /// Runs `body` on the thread and returns what it returns (or throws what it throws).
    func perform<T: Sendable>(_ body: @escaping @Sendable (DaemonContext) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            submit(Job(
                run: { context in continuation.resume(with: Result { try body(context) }) },
                cancel: { continuation.resume(throwing: ReachctlError("the connection to reachd was closed")) }))
        }
    }

    /// Queues a job whose outcome nobody waits for.
    func submit(_ body: @escaping @Sendable (DaemonContext) -> Void) {
        submit(Job(run: body, cancel: {}))
    }

    private func submit(_ job: Job) {
        let accepted = jobs.withLock { jobs -> Bool in
            guard jobs != nil else { return false }
            jobs!.append(job)
            return true
        }
        if accepted { wakeup.signal() } else { job.cancel() }
    }

    /// The jobs queued so far; nil when the thread should end.
    func takeJobs() -> [Job]? {
        if stopping.load(ordering: .acquiring) { return nil }
        return jobs.withLock { jobs in
            defer { if jobs != nil { jobs = [] } }
            return jobs
        }
    }

    /// Closes the inbox for good and hands back what was still queued.
    func close() -> [Job] {
        jobs.withLock { jobs in
            defer { jobs = nil }
            return jobs ?? []
        }
    }

    /// Ends the thread; every stream finishes. Idempotent.
    func stop() {
        stopping.store(true, ordering: .releasing)
        wakeup.signal()
    }
}

/// What lives on the worker thread: the client and the subscribers it feeds.
final class DaemonContext {
    let client: ReachabilityClient
    private unowned let worker: DaemonWorker
    /// `updates()` streams, each with the last snapshot it was given (changes are diffs against it).
    private var updateSubscribers: [UInt64: (continuation: AsyncStream<ReachabilityUpdate>.Continuation, last: ReachabilitySnapshot)] = [:]
    /// `answers(for:)` streams and the watch paths each holds.
    private var targetSubscribers: [UInt64: (continuation: AsyncStream<TargetAnswer>.Continuation, paths: [String])] = [:]
    private var watchOwners: [String: UInt64] = [:]
    /// The newest generation seen (Changed signals, snapshots).
    private var generation: UInt64?

    init(client: ReachabilityClient, worker: DaemonWorker) {
        self.client = client
        self.worker = worker
    }

    /// Jobs, then bus events, then a wait on the bus fd and the wake-up pipe; until stopped
    /// or reachd is gone.
    func run() {
        defer { shutdown() }
        while let jobs = worker.takeJobs() {
            for job in jobs { job.run(self) }
            do {
                // Handling events makes calls, and signals arriving meanwhile are queued: drain.
                while true {
                    let events = try client.dispatch()
                    if events.isEmpty { break }
                    guard try handle(events) else { return }
                }
                if try client.wait(timeout: nil, orReadable: worker.wakeup.fd) { worker.wakeup.drain() }
            } catch {
                return
            }
        }
    }

    private func shutdown() {
        for job in worker.close() { job.cancel() }
        for subscriber in updateSubscribers.values { subscriber.continuation.finish() }
        for subscriber in targetSubscribers.values { subscriber.continuation.finish() }
        updateSubscribers.removeAll()
        targetSubscribers.removeAll()
    }

    /// Turns events into updates and answers; false when reachd is gone.
    private func handle(_ events: [ReachabilityClient.Event]) throws -> Bool {
        var fresh: ReachabilitySnapshot?
        for event in events {
            switch event {
            case .serviceLost:
                return false
            case let .changed(_, _, signalled), let .interfacesChanged(signalled):
                generation = max(generation ?? 0, signalled)
                for (id, subscriber) in updateSubscribers where subscriber.last.generation < signalled {
                    // One read serves every subscriber, and every signal it already covers.
                    if fresh.map({ $0.generation < signalled }) ?? true { fresh = try client.snapshot() }
                    guard let now = fresh, now.generation > subscriber.last.generation else { continue }
                    generation = max(generation ?? 0, now.generation)
                    subscriber.continuation.yield(.change(Self.change(from: subscriber.last, to: now)))
                    updateSubscribers[id]?.last = now
                }
            case let .watch(path, result):
                guard let id = watchOwners[path], let subscriber = targetSubscribers[id],
                    !ReachabilityClient.isPending(result)
                else { continue }
                subscriber.continuation.yield(TargetAnswer(result: result, generation: generation))
            }
        }
        return true
    }

    /// What changed between two snapshots, as the in-process monitor reports it. The generation
    /// is that of the state read, which is the signal's unless more changes came meanwhile.
    static func change(from old: ReachabilitySnapshot, to new: ReachabilitySnapshot) -> ReachabilityChange {
        let before = Dictionary(old.interfaces.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Set(new.interfaces.map(\.index))
        return ReachabilityChange(
            generation: new.generation, host: new.host, hostChanged: old.host != new.host,
            changedInterfaces: new.interfaces.filter { before[$0.index] != $0 },
            removedInterfaces: old.interfaces.filter { !after.contains($0.index) })
    }

    func addUpdates(_ id: UInt64, _ continuation: AsyncStream<ReachabilityUpdate>.Continuation) throws {
        try client.subscribe()
        let snapshot = try client.snapshot()
        generation = max(generation ?? 0, snapshot.generation)
        continuation.yield(.snapshot(snapshot))
        updateSubscribers[id] = (continuation, snapshot)
    }

    func removeUpdates(_ id: UInt64) {
        updateSubscribers.removeValue(forKey: id)
    }

    /// Watches each target; yields the answers already known (a host's comes when resolved).
    func addTargets(_ id: UInt64, _ targets: [String], _ continuation: AsyncStream<TargetAnswer>.Continuation) throws {
        try client.subscribe()
        if generation == nil { generation = try client.status().generation }
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
        for answer in answers { continuation.yield(answer) }
        targetSubscribers[id] = (continuation, paths)
    }

    func removeTargets(_ id: UInt64) {
        guard let subscriber = targetSubscribers.removeValue(forKey: id) else { return }
        for path in subscriber.paths {
            watchOwners.removeValue(forKey: path)
            try? client.unwatch(path)
        }
    }
}

/// Moves a value that is not `Sendable` to another thread that becomes its only user.
final class UncheckedSendable<Value>: @unchecked Sendable {
    private var value: Value?
    init(_ value: Value) { self.value = value }
    /// Takes the value out; called once, by the new owner.
    func take() -> Value {
        defer { value = nil }
        return value!
    }
}
