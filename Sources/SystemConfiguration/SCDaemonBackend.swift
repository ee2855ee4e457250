import Dispatch
internal import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Answers from reachd over D-Bus: one connection for the process, owned by a thread of its
/// own (sd-bus wants one thread per connection, and its waits block), and one reachd `Watch`
/// per followed target, shared by every reference that follows it and released with the last.
/// Every call is a job run on that thread; between jobs it waits on the bus and a wake-up pipe.
final class SCDaemonBackend: SCBackend {
    /// Why reachd cannot serve this process.
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    private let bus: BusConnection.Address
    private let callTimeout: Duration
    private let hostTimeout: Duration
    private let jobs = Mutex<[Job]?>([])
    private let stopping = Atomic<Bool>(false)
    private let wakeup: WakeUpPipe
    /// The last answer of each watched target, for `knownAnswer` (written on the thread).
    private let answers = SCAnswers()

    /// Connects to `bus` and asks reachd for its status within `probeTimeout`; throws when no
    /// reachd answers. `lost` gets the followers when reachd leaves the bus later.
    init(
        bus: BusConnection.Address, probeTimeout: Duration, callTimeout: Duration, hostTimeout: Duration,
        lost: @escaping @Sendable ([SCFollower]) -> Void
    ) throws {
        self.bus = bus
        self.callTimeout = callTimeout
        self.hostTimeout = hostTimeout
        do {
            wakeup = try WakeUpPipe()
        } catch {
            throw Unavailable(description: error.description)
        }
        let probe = Mutex<Result<Void, Unavailable>?>(nil)
        let probed = DispatchSemaphore(value: 0)
        try DedicatedThread.start { [self] in
            let client: ReachabilityClient
            do {
                client = try ReachabilityClient(bus: bus, timeout: probeTimeout)
                _ = try client.status()
            } catch {
                probe.withLock { $0 = .failure(Unavailable(description: "\(error)")) }
                probed.signal()
                return
            }
            client.timeout = callTimeout
            probe.withLock { $0 = .success(()) }
            probed.signal()
            let thread = SCDaemonThread(client: client, answers: answers)
            let wasLost = run(thread)
            if wasLost { lost(thread.allFollowers) }
        }
        probed.wait()
        try probe.withLock { $0 }!.get()
    }

    /// Whether the thread has ended: reachd left, or `shutdown()`.
    var isClosed: Bool { jobs.withLock { $0 == nil } }

    func shutdown() {
        stopping.store(true, ordering: .releasing)
        wakeup.signal()
    }

    func check(_ target: SCTarget, deadline: ContinuousClock.Instant) -> ReachabilityFlags? {
        switch target {
        case let .address(text):
            return perform { try $0.client.checkAddress(text).flags }
        case let .name(name):
            // A connection of this call's own: a lookup waits up to the deadline, and must not
            // hold up every other reference's calls and answers on the shared thread meanwhile.
            let remaining = min(ContinuousClock.now.duration(to: deadline), hostTimeout)
            guard let client = try? ReachabilityClient(bus: bus, timeout: callTimeout) else { return nil }
            return try? client.checkHost(name, timeout: max(remaining, .milliseconds(1))).flags
        }
    }

    func knownAnswer(for target: SCTarget) -> ReachabilityFlags? {
        answers.table.withLock { $0[target] }
    }

    func follow(_ follower: SCFollower) -> Bool {
        perform { $0.follow(follower) } ?? false
    }

    func unfollow(_ id: UInt64) {
        submit(Job(run: { $0.unfollow(id) }, cancel: {}))
    }

    // MARK: the thread

    private struct Job: Sendable {
        let run: @Sendable (SCDaemonThread) -> Void
        /// Called instead of `run` when the thread has ended.
        let cancel: @Sendable () -> Void
    }

    /// Runs `body` on the thread and returns its value; nil when it threw, the thread has ended,
    /// or no answer came within the call timeout. Never call it from the thread itself.
    private func perform<T: Sendable>(_ body: @escaping @Sendable (SCDaemonThread) throws -> T) -> T? {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit(Job(
            run: { thread in
                let value = try? body(thread)
                result.withLock { $0 = value }
                done.signal()
            },
            cancel: { done.signal() }))
        let limit = SCInProcessBackend.dispatchInterval(callTimeout + .milliseconds(500))
        guard done.wait(timeout: .now() + limit) == .success else { return nil }
        return result.withLock { $0 }
    }

    private func submit(_ job: Job) {
        let accepted = jobs.withLock { jobs -> Bool in
            guard jobs != nil else { return false }
            jobs!.append(job)
            return true
        }
        if accepted { wakeup.signal() } else { job.cancel() }
    }

    /// The thread's loop: jobs, then bus events, then a wait on the bus and the wake-up pipe,
    /// until `shutdown()` (false) or until reachd or the bus is gone (true).
    private func run(_ thread: SCDaemonThread) -> Bool {
        defer {
            let left = jobs.withLock { jobs in
                defer { jobs = nil }
                return jobs ?? []
            }
            for job in left { job.cancel() }
        }
        while !stopping.load(ordering: .acquiring) {
            let batch = jobs.withLock { jobs in
                defer { jobs = [] }
                return jobs ?? []
            }
            for job in batch { job.run(thread) }
            do {
                // Handling events may call reachd, and signals arriving meanwhile are queued: drain.
                while true {
                    let events = try thread.client.dispatch()
                    if events.isEmpty { break }
                    guard thread.handle(events) else { return true }
                }
                if try thread.client.wait(timeout: nil, orReadable: wakeup.fd) { wakeup.drain() }
            } catch {
                return true
            }
        }
        return false
    }
}

/// What lives on the backend's thread: the client and the watches. Thread-confined.
final class SCDaemonThread {
    let client: ReachabilityClient
    private let answers: SCAnswers

    private struct Watch {
        var path: String
        var followers: [UInt64: SCFollower]
    }
    private var watches: [SCTarget: Watch] = [:]
    private var targetsByPath: [String: SCTarget] = [:]
    private var targetsByFollower: [UInt64: SCTarget] = [:]

    init(client: ReachabilityClient, answers: SCAnswers) {
        self.client = client
        self.answers = answers
    }

    var allFollowers: [SCFollower] { watches.values.flatMap { $0.followers.values } }

    /// Follows with the target's watch, made now if no other reference holds one; the known
    /// answer goes out at once. False when reachd refuses (a limit).
    func follow(_ follower: SCFollower) -> Bool {
        let target = follower.target
        if var watch = watches[target] {
            watch.followers[follower.id] = follower
            watches[target] = watch
        } else {
            guard let path = try? client.watch(target.text) else { return false }
            watches[target] = Watch(path: path, followers: [follower.id: follower])
            targetsByPath[path] = target
            if let answer = client.answer(ofWatch: path), !ReachabilityClient.isPending(answer) {
                answers.table.withLock { $0[target] = answer.flags }
            }
        }
        targetsByFollower[follower.id] = target
        if let flags = answers.table.withLock({ $0[target] }) { follower.deliver(flags) }
        return true
    }

    /// Stops following; the watch goes when its last follower does.
    func unfollow(_ id: UInt64) {
        guard let target = targetsByFollower.removeValue(forKey: id), var watch = watches[target] else { return }
        watch.followers.removeValue(forKey: id)
        guard watch.followers.isEmpty else {
            watches[target] = watch
            return
        }
        watches.removeValue(forKey: target)
        targetsByPath.removeValue(forKey: watch.path)
        answers.table.withLock { _ = $0.removeValue(forKey: target) }
        try? client.unwatch(watch.path)
    }

    /// Hands watch answers to their followers; false when reachd is gone.
    func handle(_ events: [ReachabilityClient.Event]) -> Bool {
        for event in events {
            switch event {
            case .serviceLost:
                return false
            case let .watch(path, result):
                guard let target = targetsByPath[path], let watch = watches[target],
                    !ReachabilityClient.isPending(result)
                else { continue }
                answers.table.withLock { $0[target] = result.flags }
                for follower in watch.followers.values { follower.deliver(result.flags) }
            case .changed, .interfacesChanged:
                continue
            }
        }
        return true
    }
}

/// The last answer of each watched target, shared by the thread (writer) and callers.
final class SCAnswers: Sendable {
    let table = Mutex<[SCTarget: ReachabilityFlags]>([:])
}
