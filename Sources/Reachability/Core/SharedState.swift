import Synchronization

/// The core's `NetworkState` behind a lock, for reading from any thread: the core changes it
/// on its loop's thread (`take`, its one way in), and anyone reads it and checks addresses
/// against it (the in-process monitor's callers do; in reachd every call comes from the loop, and
/// the lock is never contended). Address checks ask the kernel for the route on a socket of
/// their own, so a check never waits for the core's netlink reading, and outside the state's
/// lock, so the core's next input never waits for a check's round trip to the kernel.
/// Unchecked: the state and the snapshot made from it are touched only inside `lock`, the route
/// socket only inside `routeLock`.
package final class SharedState: @unchecked Sendable {
    private let lock = Mutex(())
    private let routeLock = Mutex(())
    private var current: NetworkState
    /// The snapshot of the current state, made on the first read after a change: at most once
    /// per input, however many readers ask.
    private var madeSnapshot: ReachabilitySnapshot?
    private let routes: RouteQuery
    private var lookups = 0
    private var sourceCounters = (overruns: 0, resyncs: 0)
    private var gatewayResolutionsAsked = 0

    package init(_ state: NetworkState, namespacePath: String?) throws(SystemError) {
        current = state
        routes = try RouteQuery(namespacePath: namespacePath)
    }

    /// Changes the state: for the core's `take` alone.
    package func change<T>(_ body: (inout NetworkState) -> T) -> T {
        lock.withLock { _ in
            let generation = current.generation
            let result = body(&current)
            // Stall evidence moves with every poll without a new generation.
            if current.generation != generation || current.hostStallEvidence != madeSnapshot?.stallEvidence { madeSnapshot = nil }
            return result
        }
    }

    /// The netlink source's counters, copied in by the core after each of its inputs.
    package func record(overruns: Int, resyncs: Int) {
        lock.withLock { _ in sourceCounters = (overruns, resyncs) }
    }

    /// The gateway rechecks' asks so far, copied in after each round of them.
    package func record(gatewayResolutionsAsked asked: Int) {
        lock.withLock { _ in gatewayResolutionsAsked = asked }
    }

    package var snapshot: ReachabilitySnapshot {
        lock.withLock { _ in
            if let madeSnapshot { return madeSnapshot }
            let made = current.snapshot
            madeSnapshot = made
            return made
        }
    }

    /// Reads the state under the lock without copying it.
    package func withState<T>(_ body: (borrowing NetworkState) -> T) -> T {
        lock.withLock { _ in body(current) }
    }

    /// Route lookups made for address checks so far: what a test counts to see that an answer
    /// is routed once per caller, not once per layer it passes.
    package var addressLookups: Int { routeLock.withLock { _ in lookups } }

    /// Overruns and resyncs so far, announcements held and dropped.
    package var counters: MirrorCounters {
        lock.withLock { _ in
            MirrorCounters(
                overruns: UInt64(sourceCounters.overruns), resyncs: UInt64(sourceCounters.resyncs),
                announcementsHeld: UInt64(current.announcementsHeld), announcementsDropped: current.announcementsDropped,
                gatewayResolutionsAsked: UInt64(gatewayResolutionsAsked))
        }
    }

    /// Checks one address: the kernel's route for it (RTM_GETROUTE) and the link states.
    /// Never touches DNS and never waits. `0.0.0.0` and `::` ask for general connectivity.
    /// `uid`: answer as that user's traffic would be routed (RTA_UID: `ip rule ... uidrange`);
    /// nil answers as this process's own traffic, which in-process is the caller's.
    package func check(address text: String, uid: UInt32? = nil) -> CheckResult {
        let target: AddressTarget
        switch AddressTarget.parse(text) {
        case let .failure(error): return .invalid(text, error.description)
        case let .success(parsed): target = parsed
        }
        switch lock.withLock({ _ in outputInterface(for: target.scope, of: text) }) {
        case let .failure(refusal): return .invalid(text, refusal.description)
        case let .success(index):
            let asked = paths(for: target.address, outputInterface: index, uid: uid)
            return lock.withLock { _ in evaluate(target.address, paths: asked, target: text) }
        }
    }

    /// Explains the answer (`Explanation`) for the host (`target` empty, or `0.0.0.0` / `::`)
    /// or an address, as `uid`'s traffic is routed (nil: the system's view). A host name is
    /// explained through its addresses: check it first, then `Explanation.resolving`.
    /// Never touches DNS and never waits; an invalid address is `.failure` naming it.
    public func explain(_ target: String, uid: UInt32? = nil) -> Result<Explanation, ExplanationRefusal> {
        if target.isEmpty { return .success(explain(nil, outputInterface: nil, uid: uid, target: "")) }
        let parsed: AddressTarget
        switch AddressTarget.parse(target) {
        case let .failure(error): return .failure(ExplanationRefusal(description: error.description))
        case let .success(value): parsed = value
        }
        if parsed.address.isUnspecified { return .success(explain(nil, outputInterface: nil, uid: uid, target: "")) }
        return lock.withLock { _ in outputInterface(for: parsed.scope, of: target) }.map {
            explain(parsed.address, outputInterface: $0, uid: uid, target: target)
        }
    }

    /// Explains the host's answer as if the link named `name` were its only way out: the
    /// internet destinations looked up bound to that link (`ip route get ... oif NAME`), for the
    /// history of each uplink. nil when no link has that name. Never waits, as `explain`.
    /// Bound to a link, the kernel finds an on-link path even where no route is left: below
    /// the route layer the answer is exact, and a route that went is told by the host's
    /// available interfaces.
    package func explainUplink(_ name: String) -> Explanation? {
        lock.withLock { _ in current.linkIndex(named: name) }.map { explain(nil, outputInterface: $0, uid: nil, target: "") }
    }

    /// Checks each address of a host and combines the verdicts: reachable when any address is.
    /// `uid` as for `check(address:uid:)`.
    package func evaluate(addresses: [IPAddress], target: String, uid: UInt32? = nil) -> CheckResult {
        let asked = addresses.map { paths(for: $0, outputInterface: nil, uid: uid) }
        let results = lock.withLock { _ in zip(addresses, asked).map { evaluate($0, paths: $1, target: target) } }
        return .combining(results, target: target, addresses: addresses)
    }

    /// The kernel's routes one address is judged by, asked outside the state's lock: the route to
    /// it as `uid`'s traffic goes; for `0.0.0.0` or `::` as a user's other than root, that user's
    /// routes to the internet destinations; none for the system's general connectivity, which
    /// the state holds.
    private func paths(for address: IPAddress, outputInterface: Int32?, uid: UInt32?) -> [AddressFamily: RouteLookup] {
        guard address.isUnspecified else { return [address.family: lookup(address, outputInterface: outputInterface, uid: uid)] }
        guard let uid, uid != 0 else { return [:] }
        var paths: [AddressFamily: RouteLookup] = [:]
        for (family, destination) in KernelSource.internetDestinations {
            paths[family] = lookup(destination, outputInterface: nil, uid: uid)
        }
        return paths
    }

    /// `address nil`: the host's answer, through the internet destinations; `uid` nil: the
    /// system's view (uid 0), as the host's answer is. Routes asked first, then judged under the lock.
    private func explain(_ address: IPAddress?, outputInterface: Int32?, uid: UInt32?, target: String) -> Explanation {
        let destinations = address.map { [$0] } ?? KernelSource.internetDestinations.map(\.address)
        let lookups = destinations.map { ($0, lookup($0, outputInterface: outputInterface, uid: uid ?? 0)) }
        return lock.withLock { _ in current.explain(target: target, lookups: lookups, uid: uid) }
    }

    private func lookup(_ address: IPAddress, outputInterface: Int32?, uid: UInt32?) -> RouteLookup {
        routeLock.withLock { _ in
            lookups += 1
            do throws(SystemError) {
                return try routes.lookup(address, outputInterface: outputInterface, uid: uid)
            } catch {
                return .failed(errno: error.errno)
            }
        }
    }

    // MARK: under the lock

    /// The interface a scoped address (`fe80::1%eth0`) is asked through; nil for none.
    private func outputInterface(for scope: AddressTarget.Scope?, of target: String) -> Result<Int32?, ExplanationRefusal> {
        switch scope {
        case .none: .success(nil)
        case let .index(index): .success(index)
        case let .name(name):
            current.linkIndex(named: name).map { .success($0) }
                ?? .failure(ExplanationRefusal(description: "no interface named '\(name)' for the scope of '\(target)'"))
        }
    }

    /// One address judged by the routes asked for it (`paths(for:outputInterface:uid:)`).
    private func evaluate(_ address: IPAddress, paths: [AddressFamily: RouteLookup], target: String) -> CheckResult {
        if address.isUnspecified {
            guard !paths.isEmpty else { return current.evaluate(lookup: .failed(errno: 0), for: address, target: target) }
            return current.generalConnectivity(target: target, family: address.family, userPaths: paths)
        }
        return current.evaluate(lookup: paths[address.family] ?? .failed(errno: 0), for: address, target: target)
    }
}
