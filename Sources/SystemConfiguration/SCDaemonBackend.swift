import Dispatch
internal import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Answers from reachd over D-Bus: one connection for the process, owned by the library's
/// `ReachabilityClientThread`, and one reachd `Watch` per followed target, shared by every
/// reference that follows it and released with the last.
final class SCDaemonBackend: SCBackend {
    private let bus: BusConnection.Address
    private let callTimeout: Duration
    private let hostTimeout: Duration
    private let thread: ReachabilityClientThread<SCDaemonThread>
    /// The last answer of each watched target, for `knownAnswer` (written on the thread).
    private let answers = SCAnswers()

    /// Serves through `client`, which answered the probe (`ReachdOrInProcess`); `bus` is for host
    /// checks' own connections. `lost` gets the followers when reachd leaves the bus later.
    init(
        client: sending ReachabilityClient, bus: BusConnection.Address, callTimeout: Duration, hostTimeout: Duration,
        lost: @escaping @Sendable ([SCFollower]) -> Void
    ) throws(SystemError) {
        self.bus = bus
        self.callTimeout = callTimeout
        self.hostTimeout = hostTimeout
        thread = try ReachabilityClientThread(SCDaemonThread(client: client, answers: answers, lost: lost))
    }

    /// Whether the thread has ended: reachd left, or `shutdown()`.
    var isClosed: Bool { thread.isClosed }

    func shutdown() { thread.stop() }

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
        thread.submit { $0.unfollow(id) }
    }

    /// Runs `body` on the thread and returns its value; nil when it threw, the thread has ended,
    /// or no answer came within the call timeout. Never call it from the thread itself.
    private func perform<T: Sendable>(_ body: @escaping @Sendable (SCDaemonThread) throws -> T) -> T? {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        thread.submit(
            { owner in
                let value = try? body(owner)
                result.withLock { $0 = value }
                done.signal()
            },
            cancel: { done.signal() })
        let limit = DispatchTimeInterval(callTimeout + .milliseconds(500))
        guard done.wait(timeout: .now() + limit) == .success else { return nil }
        return result.withLock { $0 }
    }
}

/// What lives on the backend's thread: the client and the watches. Thread-confined.
final class SCDaemonThread: ReachabilityClientOwner {
    let client: ReachabilityClient
    private let answers: SCAnswers
    private let lost: @Sendable ([SCFollower]) -> Void

    private var followers = SCFollowers()
    private var paths: [SCTarget: String] = [:]
    private var targets: [String: SCTarget] = [:]

    init(client: ReachabilityClient, answers: SCAnswers, lost: @escaping @Sendable ([SCFollower]) -> Void) {
        self.client = client
        self.answers = answers
        self.lost = lost
    }

    /// reachd left: its followers go on elsewhere (`lost`).
    func ended(lost: Bool) {
        if lost { self.lost(followers.all) }
    }

    /// Follows with the target's watch, made now if no other reference holds one; the known
    /// answer goes out at once. False when reachd refuses (a limit).
    func follow(_ follower: SCFollower) -> Bool {
        let target = follower.target
        if paths[target] == nil {
            guard let path = try? client.watch(target.text) else { return false }
            paths[target] = path
            targets[path] = target
            if let answer = client.answer(ofWatch: path), !ReachabilityClient.isPending(answer) {
                answers.table.withLock { $0[target] = answer.flags }
            }
        }
        _ = followers.add(follower)
        if let flags = answers.table.withLock({ $0[target] }) { follower.deliver(flags) }
        return true
    }

    /// Stops following; the watch goes when its last follower does.
    func unfollow(_ id: UInt64) {
        guard let (target, wasLast) = followers.remove(id), wasLast, let path = paths.removeValue(forKey: target) else { return }
        targets.removeValue(forKey: path)
        answers.table.withLock { _ = $0.removeValue(forKey: target) }
        try? client.unwatch(path)
    }

    /// Hands watch answers to their followers.
    func handle(_ events: [ReachabilityClient.Event]) {
        for event in events {
            switch event {
            case let .watch(path, result):
                guard let target = targets[path], !ReachabilityClient.isPending(result) else { continue }
                answers.table.withLock { $0[target] = result.flags }
                for follower in followers.byTarget[target, default: [:]].values { follower.deliver(result.flags) }
            case .changed, .interfacesChanged, .serviceLost, .serviceReturned:
                continue
            }
        }
    }
}

/// The last answer of each watched target, shared by the thread (writer) and callers.
final class SCAnswers: Sendable {
    let table = Mutex<[SCTarget: ReachabilityFlags]>([:])
}

extension DispatchTimeInterval {
    /// `duration` in whole microseconds; a negative one is zero.
    init(_ duration: Duration) {
        self = .microseconds(Int(max(0, duration.wholeMicroseconds)))
    }
}
