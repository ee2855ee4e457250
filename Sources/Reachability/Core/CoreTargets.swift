/// A `TargetFollower` on a core's loop, used on the loop's thread only: the loop's timer, the
/// core's checks, each answer to `answered`. reachd's watches follow targets through it on
/// sd-event, `MonitorTargets` on an in-process monitor's thread.
package final class CoreTargets: TargetFollowerDriver {
    package typealias Answered = (_ target: String, _ result: CheckResult, _ previous: CheckResult) -> Void

    private let checks: any HostCheckStarting
    private let state: SharedState
    private let loop: any EventLoopProtocol
    private let onAnswer: Answered
    /// Whose lookups these are (reachd's watched targets are `.shared`).
    private let owner: LookupOwner
    /// How answers are routed (reachd's watches route them per user themselves: `.none`).
    private let routing: HostRouting
    /// Set once, right after init (the follower needs its driver).
    package private(set) var follower: TargetFollower!
    private var timer: (any LoopSource)?

    package init(
        checks: any HostCheckStarting, state: SharedState, loop: any EventLoopProtocol, settings: TargetFollower.Settings,
        owner: LookupOwner = .system, routing: HostRouting = .asThisProcess, answered: @escaping Answered
    ) {
        self.checks = checks
        self.state = state
        self.owner = owner
        self.routing = routing
        self.loop = loop
        onAnswer = answered
        follower = TargetFollower(settings: settings, driver: self)
    }

    package var now: ContinuousClock.Instant { .now }

    package func check(address: String) -> CheckResult { state.check(address: address) }

    package func startHostCheck(_ name: String, timeout: Duration, done: @escaping (CheckResult?) -> Void) -> UInt64 {
        if case let .failure(error) = HostName.validate(name) {
            done(.invalid(name, error.description))
            return 0
        }
        // The core answers on this loop's thread: `done` never crosses (the box checks it).
        let done = LoopBound(done)
        return checks.checkHost(name, timeout: timeout, owner: owner, routing: routing) { outcome in done.value(try? outcome.get()) }
    }

    package func cancelHostCheck(_ id: UInt64) { checks.cancelHostCheck(id) }

    package func scheduleTimer(at instant: ContinuousClock.Instant?) {
        if timer == nil, instant != nil {
            timer = try? loop.addTimer(urgent: false) { [unowned self] in follower.timerFired() }
        }
        timer?.schedule(orDisableAt: instant)
    }

    package func answered(_ target: String, _ result: CheckResult, previous: CheckResult) { onAnswer(target, result, previous) }
}
