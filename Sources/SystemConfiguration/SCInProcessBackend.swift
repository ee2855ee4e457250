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

    /// The followers of each target, by target text and id.
    private final class Followers: Sendable {
        struct Table {
            var byTarget: [String: [UInt64: SCFollower]] = [:]
            var targetOf: [UInt64: String] = [:]
        }
        let table = Mutex(Table())
    }

    init(configuration: MonitorConfiguration, hostTimeout: Duration) throws {
        let monitor = try ReachabilityMonitor(configuration: configuration)
        self.monitor = monitor
        self.hostTimeout = hostTimeout
        let followers = self.followers
        targets = MonitorTargets(
            monitor: monitor,
            settings: TargetFollower.Settings(lookups: configuration.maximumConcurrentLookups, hostTimeout: hostTimeout)
        ) { target, result in
            for follower in followers.table.withLock({ Array(($0.byTarget[target] ?? [:]).values) }) {
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

    func follow(_ follower: SCFollower) -> Bool {
        let text = follower.target.text
        followers.table.withLock { table in
            table.byTarget[text, default: [:]][follower.id] = follower
            table.targetOf[follower.id] = text
        }
        targets.follow(text) { follower.deliver($0.flags) }
        return true
    }

    var followerCount: Int { followers.table.withLock { $0.targetOf.count } }

    func unfollow(_ id: UInt64) {
        let text = followers.table.withLock { table -> String? in
            guard let text = table.targetOf.removeValue(forKey: id) else { return nil }
            table.byTarget[text]?.removeValue(forKey: id)
            if table.byTarget[text]?.isEmpty == true { table.byTarget.removeValue(forKey: text) }
            return text
        }
        if let text { targets.unfollow(text) }
    }

    /// How much later than its deadline a host check may answer before GetFlags gives up on it.
    static let margin: Duration = .milliseconds(250)
}
