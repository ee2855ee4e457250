/// One turn of the core as every follower hears of it: an immutable value, made once after the
/// turn's inputs were applied, with the state they left. Followers read what they need from it
/// (and ask the state's questions through `SharedState`, which holds the same state while they
/// are told), never the core.
package struct CoreUpdate: Sendable {
    /// The state the turn's inputs left, with its generation.
    package let snapshot: ReachabilitySnapshot
    /// What the host or an interface shows that changed over the turn, as one change; nil when
    /// nothing shown did (the routing moved, or only the stall figures did).
    package let change: ReachabilityChange?
    /// A link, address, route or rule moved, whether or not anything shown did: the path of a
    /// single target may have, so followers of targets check them again.
    package let routingMoved: Bool
    package let routingEpoch: UInt64

    package var generation: UInt64 { snapshot.generation }
    package var host: HostStatus { snapshot.host }
}

/// What a part of a front end hands the core: its verdicts and what it heard, each applied as one
/// input. Submitted while followers are being told of an update, an input waits for that update
/// to reach every follower, and comes in the next.
package protocol CoreInputs: AnyObject {
    /// The connectivity probe's verdict on the host's path.
    func record(connectivity: ConnectivityStatus)
    /// The probe's verdict on one uplink other than the primary (`ValidatedInterfaces`).
    func record(uplink index: Int32, connectivity: ConnectivityVerdict)
    /// NetworkManager's word on its devices' cost, by interface name (`unknown`: forget).
    func record(networkManagerMetered said: [(interface: String, metered: NetworkManagerMetered)])
    /// What the captive-portal API `api` of link `index` answered (nil: forget the last answer).
    func record(portal index: Int32, api: String, _ answer: PortalAnswer?)
}

/// Host checks through the core's resolver, for a front end's parts: started and cancelled on
/// the loop, answered on it.
package protocol HostCheckStarting: AnyObject {
    /// Starts a host check under an id of the core's own; `completion` may run before this returns.
    @discardableResult
    func checkHost(
        _ name: String, timeout: Duration, owner: LookupOwner, routing: HostRouting,
        completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void
    ) -> UInt64
    func cancelHostCheck(_ id: UInt64)
}

extension HostCheckStarting {
    /// A check as the system's, routed as this process is (the probe's).
    @discardableResult
    package func checkHost(
        _ name: String, timeout: Duration, completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void
    ) -> UInt64 {
        checkHost(name, timeout: timeout, owner: .system, routing: .asThisProcess, completion: completion)
    }
}

/// The core's updates on their way out: what the inputs of one loop turn did is gathered, and
/// told as one `CoreUpdate` to every follower, in the order they joined, from a deferred source
/// once the turn's inputs are in. An input that arrives while followers are being told waits,
/// unapplied (`hold`), until the update reached every follower: so each follower sees the state
/// its update describes, whichever follower handed an input in, and updates never nest.
package final class CoreUpdates {
    private var followers: [(CoreUpdate) -> Void] = []
    /// What the turn's inputs did so far; nil when nothing waits to be told.
    private var gathered: (change: ReachabilityChange?, routingMoved: Bool, routingEpoch: UInt64)?
    private var held: [() -> Void] = []
    private var deferred: (any DeferredSource)?
    private let snapshot: () -> ReachabilitySnapshot
    package private(set) var isDelivering = false
    /// The update last told to the followers (at first, the state the core started from).
    package private(set) var last: CoreUpdate

    package init(
        loop: any EventLoopProtocol, first: ReachabilitySnapshot, routingEpoch: UInt64, snapshot: @escaping () -> ReachabilitySnapshot
    ) throws(SystemError) {
        self.snapshot = snapshot
        last = CoreUpdate(snapshot: first, change: nil, routingMoved: false, routingEpoch: routingEpoch)
        deferred = try loop.addDeferred { [unowned self] in self.deliver() }
    }

    package func follow(_ body: @escaping (CoreUpdate) -> Void) { followers.append(body) }

    /// Keeps `input` until the update being told reached every follower.
    package func hold(_ input: @escaping () -> Void) { held.append(input) }

    /// One input's outcome joins the turn's update (a nil change: only the routing or the stall
    /// figures moved).
    package func gather(_ change: ReachabilityChange?, routingMoved: Bool, routingEpoch: UInt64) {
        let earlier = gathered
        let joined = earlier?.change.map { before in change.map { before.followed(by: $0) } ?? before } ?? change
        gathered = (joined, routingMoved || (earlier?.routingMoved ?? false), routingEpoch)
        deferred?.trigger()
    }

    private func deliver() {
        guard let (change, routingMoved, epoch) = gathered else { return }
        gathered = nil
        let update = CoreUpdate(snapshot: snapshot(), change: change, routingMoved: routingMoved, routingEpoch: epoch)
        last = update
        isDelivering = true
        for follower in followers { follower(update) }
        isDelivering = false
        let waiting = held
        held = []
        for input in waiting { input() }
    }

    package func cancel() {
        deferred?.cancel()
        deferred = nil
    }
}
