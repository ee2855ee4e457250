import Dispatch
internal import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Answers from reachd over D-Bus: one connection for the process, owned by the library's
/// `ReachabilityClientThread`, and one reachd `Watch` per followed target, shared by every
/// reference that follows it and released with the last.
///
/// The client follows reachd's bus name (`ReachabilityClient.followsService`), as `reachctl
/// monitor` does: when reachd goes away (a restart, an upgrade, a crash) the followers are handed
/// to `away` for the interim (the service answers them in-process), and when reachd owns its name
/// again their watches are made anew, the followers are taken back (`back`) and reachd's answers
/// go out; a reference's callback fires only where they differ from what it last saw.
final class SCDaemonBackend: SCBackend {
    private let bus: BusAddress
    private let callTimeout: Duration
    private let hostTimeout: Duration
    private let thread: ReachabilityClientThread<SCDaemonThread>
    /// What the thread writes and callers read: answers, and whether reachd is away.
    private let shared = SCDaemonShared()

    /// Serves through `client`, which answered the probe (`ReachdOrInProcess`); `bus` is for host
    /// checks' own connections. `away` gets the followers whenever reachd leaves the bus (or one
    /// is made while it is away); `back` gets the ids of those reachd serves again once it returned.
    init(
        client: sending ReachabilityClient, bus: BusAddress, callTimeout: Duration, hostTimeout: Duration,
        away: @escaping @Sendable ([SCFollower]) -> Void, back: @escaping @Sendable ([UInt64]) -> Void
    ) throws(SystemError) {
        self.bus = bus
        self.callTimeout = callTimeout
        self.hostTimeout = hostTimeout
        client.followsService = true
        thread = try ReachabilityClientThread(SCDaemonThread(client: client, shared: shared, away: away, back: back))
    }

    /// Whether the thread has ended: `shutdown()`, or a failure it could not start over from.
    var isClosed: Bool { thread.isClosed }

    /// Whether reachd is off the bus now (its followers are served in the interim by `away`).
    var isAway: Bool { shared.away.load(ordering: .acquiring) }

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
        shared.answers.withLock { $0[target] }
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
    private let shared: SCDaemonShared
    private let away: @Sendable ([SCFollower]) -> Void
    private let back: @Sendable ([UInt64]) -> Void

    /// Every follower, reachd present or away: those whose watches are made anew when it returns.
    private var followers = SCFollowers()
    private var paths: [SCTarget: String] = [:]
    private var targets: [String: SCTarget] = [:]

    init(
        client: ReachabilityClient, shared: SCDaemonShared,
        away: @escaping @Sendable ([SCFollower]) -> Void, back: @escaping @Sendable ([UInt64]) -> Void
    ) {
        self.client = client
        self.shared = shared
        self.away = away
        self.back = back
    }

    /// The thread ended: when for a failure, its followers go on in the interim for good.
    func ended(lost: Bool) {
        guard lost else { return }
        leave()
    }

    /// Follows with the target's watch, made now if no other reference holds one; the known
    /// answer goes out at once. While reachd is away the follower waits for it in the interim.
    /// False when reachd refuses (a limit).
    func follow(_ follower: SCFollower) -> Bool {
        let target = follower.target
        guard !shared.away.load(ordering: .acquiring) else {
            followers.add(follower)
            away([follower])
            return true
        }
        if paths[target] == nil {
            guard let path = try? client.watch(target.text) else { return false }
            remember(path, of: target)
        }
        followers.add(follower)
        if let flags = shared.answers.withLock({ $0[target] }) { follower.deliver(flags) }
        return true
    }

    /// Stops following; the watch goes when its last follower does.
    func unfollow(_ id: UInt64) {
        guard let (target, wasLast) = followers.remove(id), wasLast, let path = paths.removeValue(forKey: target) else { return }
        targets.removeValue(forKey: path)
        shared.answers.withLock { _ = $0.removeValue(forKey: target) }
        try? client.unwatch(path)
    }

    /// Hands watch answers to their followers; follows reachd leaving and returning.
    func handle(_ events: [ReachabilityClient.Event]) throws {
        for event in events {
            switch event {
            case let .watch(path, result):
                guard let target = targets[path], !ReachabilityClient.isPending(result) else { continue }
                shared.answers.withLock { $0[target] = result.flags }
                for follower in followers.byTarget[target, default: [:]].values { follower.deliver(result.flags) }
            case .serviceLost:
                leave()
            case .serviceReturned:
                try rejoin()
            case .changed, .interfacesChanged, .hostChangeDescribed, .path, .change:
                continue
            }
        }
    }

    /// reachd left: its watches died with it, and what it answered is no longer news. The
    /// followers go on in the interim.
    private func leave() {
        paths = [:]
        targets = [:]
        shared.answers.withLock { $0 = [:] }
        shared.away.store(true, ordering: .releasing)
        away(followers.all)
    }

    /// reachd is back: each followed target is watched anew, its followers are taken back from
    /// the interim, and reachd's answers go out (a reference calls back only when its flags
    /// differ). A target reachd refuses now (a limit) stays in the interim. Throws when reachd
    /// fails us meanwhile: then the thread starts over and the followers stay where they are.
    private func rejoin() throws {
        var served: [UInt64] = []
        for target in followers.byTarget.keys {
            guard let path = try watchUnlessRefused(target) else { continue }
            remember(path, of: target)
            served += followers.byTarget[target, default: [:]].keys
        }
        shared.away.store(false, ordering: .releasing)
        back(served)
        for (target, _) in paths {
            guard let flags = shared.answers.withLock({ $0[target] }) else { continue }
            for follower in followers.byTarget[target, default: [:]].values { follower.deliver(flags) }
        }
    }

    /// A new watch of `target`; nil when reachd refuses it (a limit), throws when the call fails.
    private func watchUnlessRefused(_ target: SCTarget) throws(BusError) -> String? {
        do {
            return try client.watch(target.text)
        } catch {
            let refusals = [ReachdContract.ErrorName.limitExceeded, ReachdContract.ErrorName.invalidTarget]
            guard refusals.contains(error.name) else { throw error }
            return nil
        }
    }

    /// A watch made for `target`, and its answer when reachd knows it already.
    private func remember(_ path: String, of target: SCTarget) {
        paths[target] = path
        targets[path] = target
        if let answer = client.answer(ofWatch: path), !ReachabilityClient.isPending(answer) {
            shared.answers.withLock { $0[target] = answer.flags }
        }
    }
}

/// Shared by the thread (writer) and callers: the last answer of each watched target, and
/// whether reachd is away.
final class SCDaemonShared: Sendable {
    let answers = Mutex<[SCTarget: ReachabilityFlags]>([:])
    let away = Atomic<Bool>(false)
}

extension DispatchTimeInterval {
    /// `duration` in whole microseconds; a negative one is zero.
    init(_ duration: Duration) {
        self = .microseconds(Int(max(0, duration.wholeMicroseconds)))
    }
}
