/// Asks the kernel again about every gateway whose resolution FAILED
/// (`NetworkState.gatewaysToResolve`), on the core's loop, so that one forged or stale answer
/// never takes the host offline and a router that answers again brings it back with no
/// application sending. The first ask comes at once, the next after a back-off that doubles
/// with every failure in a row, up to a minute, for as long as the gateway stays FAILED. The
/// Engine counts the failures and decides; this part only sends (`GatewayResolution`) and times.
///
/// Bounded whatever the link sends: a FAILED comes only from the kernel's own resolution
/// (seconds of solicitations), the state keeps at most 64 gateways, and there is one timer.
package final class GatewayRechecks {
    /// One gateway's next ask, for the failure count it was planned for.
    private struct Plan {
        var failures: Int
        var due: ContinuousClock.Instant
    }

    /// A gateway by link and address (the Engine's `LinkRouter` is its own business).
    private struct Gateway: Hashable {
        var interfaceIndex: Int32
        var address: IPAddress
    }

    /// The longest wait between two asks of a gateway that stays FAILED.
    package static let longestBackoff: Duration = .seconds(60)
    /// How long one resolution may take before its FAILED is overdue (the kernel's defaults
    /// take 3 s): past it, the ask is taken as lost and made again.
    package static let resolutionAllowance: Duration = .seconds(10)

    private var plans: [Gateway: Plan] = [:]
    private var timer: (any LoopSource)?
    private let send: (IPAddress, Int32) -> SystemError?
    private let warn: (String) -> Void
    /// A refused send is said once until one is taken again: a gone link must not flood the log.
    private var refusalSaid = false
    /// Asks made so far (metrics, tests).
    package private(set) var asked = 0
    /// Told the count after each round of asks (the core copies it into the metrics).
    package var counted: ((Int) -> Void)?

    package init(
        loop: any EventLoopProtocol, warn: @escaping (String) -> Void,
        send: @escaping (IPAddress, Int32) -> SystemError? = GatewayResolution.ask
    ) throws(SystemError) {
        self.warn = warn
        self.send = send
        timer = try loop.addTimer(urgent: false) { [unowned self] in self.askDue(now: .now) }
    }

    deinit { timer?.cancel() }

    /// The wait before asking about a gateway that failed `failures` times in a row: none after
    /// the first (a forged claim is undone before anything shows), then 1 s, 2 s, 4 s, ...
    package static func backoff(afterFailures failures: Int) -> Duration {
        guard failures > 1 else { return .zero }
        let seconds = Int64(1) << min(failures - 2, 6)
        return min(.seconds(seconds), longestBackoff)
    }

    /// Follows the state after an input: a gateway newly failed (or failed once more) is planned
    /// from its count, one that answers or went is dropped.
    package func follow(_ gateways: [GatewayToResolve], now: ContinuousClock.Instant) {
        var kept: [Gateway: Plan] = [:]
        for gateway in gateways {
            let key = Gateway(interfaceIndex: gateway.interfaceIndex, address: gateway.address)
            if let plan = plans[key], plan.failures == gateway.failures {
                kept[key] = plan
            } else {
                kept[key] = Plan(failures: gateway.failures, due: now + Self.backoff(afterFailures: gateway.failures))
            }
        }
        plans = kept
        timer?.schedule(orDisableAt: plans.values.map(\.due).min())
    }

    /// Asks about every gateway due; each is planned again in case its answer never comes.
    /// (Internal for tests, which bring the time in by hand.)
    package func askDue(now: ContinuousClock.Instant) {
        for (gateway, plan) in plans where plan.due <= now {
            asked += 1
            if let refused = send(gateway.address, gateway.interfaceIndex) {
                if !refusalSaid { warn("gateway \(gateway.address): cannot have the kernel resolve it afresh: \(refused)") }
                refusalSaid = true
            } else {
                refusalSaid = false
            }
            plans[gateway]?.due = now + Self.backoff(afterFailures: plan.failures + 1) + Self.resolutionAllowance
        }
        counted?(asked)
        timer?.schedule(orDisableAt: plans.values.map(\.due).min())
    }
}
