import Dispatch
internal import Reachability
import Synchronization

/// Answers from the library in this process: a `ReachabilityMonitor` of its own (netlink
/// sockets, a thread, the resolver), shared by every reference.
///
/// Followed targets go through the library's one follower (`MonitorTargets`), as reachd's
/// watches do: checked again whenever the kernel's routing facts move, one lookup per name
/// however many references follow it, answers in the order they were found.
final class SCInProcessBackend: SCBackend {
    let monitor: ReachabilityMonitor
    /// The deadline of a host check (`DefaultTimeout=` of reachd.conf).
    let hostTimeout: Duration
    private let targets: MonitorTargets
    private let followers = Followers()

    private final class Followers: Sendable {
        let table = Mutex(SCFollowers())
    }

    init(configuration: CoreConfiguration, hostTimeout: Duration) throws {
        let monitor = try ReachabilityMonitor(configuration: configuration)
        self.monitor = monitor
        self.hostTimeout = hostTimeout
        let followers = self.followers
        targets = MonitorTargets(
            monitor: monitor,
            settings: TargetFollower.Settings(lookups: configuration.maximumConcurrentLookups, hostTimeout: hostTimeout)
        ) { text, result in
            let target = AddressTarget.looksLikeAddress(text) ? SCTarget.address(text) : .name(text)
            for follower in followers.table.withLock({ Array($0.byTarget[target, default: [:]].values) }) {
                follower.deliver(result.flags)
            }
        }
    }

    deinit { shutdown() }

    func shutdown() {
        targets.stop()
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
            guard done.wait(timeout: .now() + DispatchTimeInterval(ContinuousClock.now.duration(to: deadline) + Self.margin))
                == .success
            else { return nil }
            return answer.withLock { $0 }
        }
    }

    func knownAnswer(for target: SCTarget) -> ReachabilityFlags? {
        guard case let .name(name) = target else { return nil }
        return targets.answer(for: name)?.flags
    }

    /// Follows; a follower already followed here stays as it is (reachd's interim hands its
    /// followers over again each time it goes away).
    func follow(_ follower: SCFollower) -> Bool {
        let fresh = followers.table.withLock { table -> Bool in
            guard !table.contains(follower.id) else { return false }
            table.add(follower)
            return true
        }
        if fresh { targets.follow(follower.target.text) { follower.deliver($0.flags) } }
        return true
    }

    var followerCount: Int { followers.table.withLock { $0.count } }

    func unfollow(_ id: UInt64) {
        if let (target, _) = followers.table.withLock({ $0.remove(id) }) { targets.unfollow(target.text) }
    }

    /// How much later than its deadline a host check may answer before GetFlags gives up on it.
    static let margin: Duration = .milliseconds(250)
}
