import Synchronization

/// The kernel mirror behind a lock: the core changes it on its loop's thread, and any thread
/// reads the state and checks addresses (the in-process monitor's callers do; in reachd every
/// call comes from the loop, and the lock is never contended). Unchecked: the mirror, a class
/// the compiler cannot follow into the lock, is touched only inside `withLock`.
package final class SharedMirror: @unchecked Sendable {
    private let kernel: KernelMirror
    private let lock = Mutex(())

    init(_ kernel: KernelMirror) { self.kernel = kernel }

    func withLock<T>(_ body: (KernelMirror) -> T) -> T {
        lock.withLock { _ in body(kernel) }
    }

    package var state: NetworkState { withLock { $0.state } }
    package var snapshot: ReachabilitySnapshot { withLock { $0.state.snapshot } }

    /// Reads the state under the lock without copying it.
    package func withState<T>(_ body: (borrowing NetworkState) -> T) -> T {
        withLock { body($0.state) }
    }

    /// Route lookups made for address checks so far (see `KernelMirror.addressLookups`).
    var addressLookups: Int { withLock { $0.addressLookups } }

    /// The monitor socket's receive buffer as the kernel granted it, in bytes.
    package var netlinkReceiveBufferBytes: Int { withLock { $0.receiveBufferBytes } }

    /// Overruns and resyncs so far, announcements held and dropped.
    package var counters: MirrorCounters {
        withLock {
            MirrorCounters(
                overruns: UInt64($0.overrunCount), resyncs: UInt64($0.resyncCount),
                announcementsHeld: UInt64($0.state.announcementsHeld), announcementsDropped: $0.state.announcementsDropped)
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
        // One hold of the lock: the scope's name is looked up in the state the check evaluates.
        return withLock { mirror in
            var outputInterface: Int32?
            switch target.scope {
            case .none: break
            case let .index(index): outputInterface = index
            case let .name(name):
                guard let index = mirror.state.linkIndex(named: name) else {
                    return .invalid(text, "no interface named '\(name)' for the scope of '\(text)'")
                }
                outputInterface = index
            }
            return mirror.evaluate(target.address, outputInterface: outputInterface, uid: uid, target: text)
        }
    }

    /// Explains the answer (`Explanation`) for the host (`target` empty, or `0.0.0.0` / `::`)
    /// or an address, as `uid`'s traffic is routed (nil: the system's view). A host name is
    /// explained through its addresses: check it first, then `Explanation.resolving`.
    /// Never touches DNS and never waits; an invalid address is `.failure` naming it.
    public func explain(_ target: String, uid: UInt32? = nil) -> Result<Explanation, ExplanationRefusal> {
        if target.isEmpty { return .success(withLock { $0.explain(nil, uid: uid, target: "") }) }
        let parsed: AddressTarget
        switch AddressTarget.parse(target) {
        case let .failure(error): return .failure(ExplanationRefusal(description: error.description))
        case let .success(value): parsed = value
        }
        return withLock { mirror in
            if parsed.address.isUnspecified { return .success(mirror.explain(nil, uid: uid, target: "")) }
            var outputInterface: Int32?
            switch parsed.scope {
            case .none: break
            case let .index(index): outputInterface = index
            case let .name(name):
                guard let index = mirror.state.linkIndex(named: name) else {
                    return .failure(ExplanationRefusal(description: "no interface named '\(name)' for the scope of '\(target)'"))
                }
                outputInterface = index
            }
            return .success(mirror.explain(parsed.address, outputInterface: outputInterface, uid: uid, target: target))
        }
    }

    /// Checks each address of a host and combines the verdicts: reachable when any address is.
    /// `uid` as for `check(address:uid:)`.
    package func evaluate(addresses: [IPAddress], target: String, uid: UInt32? = nil) -> CheckResult {
        let results = withLock { mirror in addresses.map { mirror.evaluate($0, outputInterface: nil, uid: uid, target: target) } }
        return .combining(results, target: target, addresses: addresses)
    }
}
