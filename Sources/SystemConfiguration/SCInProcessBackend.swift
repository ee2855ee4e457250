import Dispatch
internal import Reachability
import Synchronization

/// Answers from the library in this process: a `ReachabilityMonitor` of its own (netlink
/// sockets, a thread, the resolver), shared by every reference.
///
/// Followed targets are checked again whenever the kernel's routing facts move
/// (`routingChanges()`), as reachd re-checks its watches: an address at once, a host name
/// within the deadline, one lookup per name however many references follow it. Every check
/// and delivery runs on one serial queue, so answers reach a reference in the order they were
/// found and a newer one is never overtaken by an older one.
final class SCInProcessBackend: SCBackend {
    let monitor: ReachabilityMonitor
    /// The deadline of a host check (`DefaultTimeout=` of reachd.conf).
    let hostTimeout: Duration
    private let serial = DispatchQueue(label: "org.reachd.SystemConfiguration.in-process")
    private let followers = Mutex<[UInt64: SCFollower]>([:])
    /// Host checks of followed names. Changed on the serial queue only; locked because
    /// `knownAnswer` reads `last` from the callers' threads.
    private struct Lookups {
        /// Names with a check in flight.
        var running: Set<String> = []
        /// Names to check once more when their check ends: the network moved meanwhile.
        var again: Set<String> = []
        /// The last answer for each followed name.
        var last: [String: ReachabilityFlags] = [:]
    }
    private let lookups = Mutex(Lookups())
    private let changes: Task<Void, Never>

    init(configuration: MonitorConfiguration, hostTimeout: Duration) throws {
        let monitor = try ReachabilityMonitor(configuration: configuration)
        self.monitor = monitor
        self.hostTimeout = hostTimeout
        let stream = monitor.routingChanges()
        let box = WeakBox<SCInProcessBackend>()
        // Ends with the stream, which the monitor finishes when it stops (at the latest in deinit).
        // Before `box` is filled, or once the backend is gone, a change has nobody to recheck.
        changes = Task {
            for await _ in stream {
                guard let backend = box.value else { continue }
                backend.serial.async { backend.recheckAll() }
            }
        }
        box.value = self
    }

    deinit { shutdown() }

    func shutdown() {
        changes.cancel()
        monitor.stop()
    }

    func check(_ target: SCTarget, deadline: ContinuousClock.Instant) -> ReachabilityFlags? {
        switch target {
        case let .address(text):
            return monitor.check(address: text).flags
        case let .name(name):
            let answer = Mutex<ReachabilityFlags?>(nil)
            let done = DispatchSemaphore(value: 0)
            monitor.check(host: name, deadline: deadline) { result in
                if case let .success(check) = result { answer.withLock { $0 = check.flags } }
                done.signal()
            }
            // The monitor answers by the deadline; the margin only covers a thread switch.
            guard done.wait(timeout: .now() + Self.dispatchInterval(ContinuousClock.now.duration(to: deadline) + Self.margin))
                == .success
            else { return nil }
            return answer.withLock { $0 }
        }
    }

    func knownAnswer(for target: SCTarget) -> ReachabilityFlags? {
        guard case let .name(name) = target else { return nil }
        return lookups.withLock { $0.last[name] }
    }

    func follow(_ follower: SCFollower) -> Bool {
        serial.sync {
            followers.withLock { $0[follower.id] = follower }
            switch follower.target {
            case let .address(text): follower.deliver(monitor.check(address: text).flags)
            case let .name(name): startLookup(name)
            }
        }
        return true
    }

    var followerCount: Int { followers.withLock { $0.count } }

    func unfollow(_ id: UInt64) {
        followers.withLock { _ = $0.removeValue(forKey: id) }
    }

    /// The routing facts moved: every followed target is checked again. Serial queue only.
    private func recheckAll() {
        let current = followers.withLock { Array($0.values) }
        var addresses: [String: ReachabilityFlags] = [:]
        var names: Set<String> = []
        for follower in current {
            switch follower.target {
            case let .address(text):
                let flags = addresses[text] ?? monitor.check(address: text).flags
                addresses[text] = flags
                follower.deliver(flags)
            case let .name(name):
                names.insert(name)
            }
        }
        for name in names { startLookup(name) }
    }

    /// Starts a host check of `name`, unless one is running: then that one runs once more when
    /// it ends, so a burst of changes costs two lookups, not one per change. Serial queue only.
    private func startLookup(_ name: String) {
        let start = lookups.withLock { lookups -> Bool in
            guard !lookups.running.contains(name) else {
                lookups.again.insert(name)
                return false
            }
            lookups.running.insert(name)
            return true
        }
        guard start else { return }
        monitor.check(host: name, deadline: .now + hostTimeout) { [weak self] result in
            guard let self else { return }
            self.serial.async { self.finishLookup(name, result) }
        }
    }

    private func finishLookup(_ name: String, _ result: Result<CheckResult, CheckCancelled>) {
        let interested = followers.withLock { $0.values.filter { $0.target == .name(name) } }
        let flags = try? result.get().flags
        let again = lookups.withLock { lookups -> Bool in
            lookups.running.remove(name)
            let again = lookups.again.remove(name) != nil
            lookups.last[name] = interested.isEmpty ? nil : flags
            return again && !interested.isEmpty
        }
        if let flags { for follower in interested { follower.deliver(flags) } }
        if again { startLookup(name) }
    }

    /// How much later than its deadline a host check may answer before GetFlags gives up on it.
    static let margin: Duration = .milliseconds(250)

    static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        .microseconds(Int(max(0, duration.wholeMicroseconds)))
    }
}

/// A weak reference that can be captured by a `Sendable` closure before its object exists.
final class WeakBox<Object: AnyObject & Sendable>: @unchecked Sendable {
    private let lock = Mutex<Void>(())
    // Guarded by `lock`.
    private weak var object: Object?
    var value: Object? {
        get { lock.withLock { _ in object } }
        set { lock.withLock { _ in object = newValue } }
    }
}
