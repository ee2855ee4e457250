import Dispatch
internal import Reachability
import Synchronization

/// Apple's reachability reference: one target (an address, an address pair or a host name),
/// optionally a callback and a dispatch queue. Made by the `SCNetworkReachabilityCreate...`
/// functions; ARC releases it (there is no `CFRelease`), and releasing it stops its callbacks.
///
/// While scheduled on a queue its target is followed (through one reachd `Watch` per target,
/// or in-process), and the callback runs on that queue once per change of the target's flags.
public final class SCNetworkReachability: Sendable {
    let target: SCTarget
    let service: SCReachabilityService
    private let state = Mutex(State())

    private struct State {
        var callback: SCNetworkReachabilityCallBack?
        var info: RetainedInfo?
        /// Moves with every `SetCallback`: a callback queued before it does not run after it.
        var registration: UInt64 = 0
        var queue: DispatchQueue?
        /// The follower's id while scheduled.
        var followID: UInt64?
        /// The flags the callback last saw (or the starting point it was scheduled at).
        var lastFlags: SCNetworkReachabilityFlags?
        /// The next answer is the state at scheduling time, not a change: an address's flags
        /// are known at once, and Apple announces only changes after scheduling.
        var startingPointPending = false
    }

    init(target: SCTarget, service: SCReachabilityService) {
        self.target = target
        self.service = service
    }

    deinit {
        if let id = state.withLock({ $0.followID }) { service.unfollow(id) }
    }

    // MARK: what the functions do

    func flags() -> SCNetworkReachabilityFlags? {
        // A scheduled name answers from its last lookup: GetFlags on it then never waits.
        if case .name = target, state.withLock({ $0.followID != nil }), let known = service.knownAnswer(for: target) {
            return SCNetworkReachabilityFlags(known)
        }
        return service.check(target).map(SCNetworkReachabilityFlags.init)
    }

    func setCallback(_ callback: SCNetworkReachabilityCallBack?, context: SCNetworkReachabilityContext?) {
        // retain runs here, outside the lock: it is the caller's code.
        let info = callback == nil ? nil : RetainedInfo(context ?? SCNetworkReachabilityContext())
        let replaced = state.withLock { state -> RetainedInfo? in
            let old = state.info
            state.callback = callback
            state.info = info
            state.registration += 1
            return old
        }
        // The old info is released here, outside the lock, unless a queued callback holds it.
        _ = replaced
    }

    func setQueue(_ queue: DispatchQueue?) -> Bool {
        guard let queue else {
            let id = state.withLock { state -> UInt64? in
                defer {
                    state.queue = nil
                    state.followID = nil
                    state.lastFlags = nil
                }
                return state.followID
            }
            if let id { service.unfollow(id) }
            return true
        }
        let id = service.nextID()
        let fresh = state.withLock { state -> Bool in
            state.queue = queue
            guard state.followID == nil else { return false }
            state.followID = id
            state.lastFlags = nil
            state.startingPointPending = target.isAddress
            return true
        }
        guard fresh else { return true }
        let follower = SCFollower(id: id, target: target) { [weak self] flags in self?.receive(flags, follower: id) }
        if service.follow(follower) { return true }
        state.withLock { state in
            guard state.followID == id else { return }
            state.followID = nil
            state.queue = nil
        }
        return false
    }

    /// An answer for this reference's target: a callback on its queue when the SC flags changed.
    private func receive(_ flags: ReachabilityFlags, follower id: UInt64) {
        let flags = SCNetworkReachabilityFlags(flags)
        let call = state.withLock { state -> (DispatchQueue, SCNetworkReachabilityCallBack, RetainedInfo?, UInt64)? in
            guard state.followID == id else { return nil }
            if state.startingPointPending {
                state.startingPointPending = false
                state.lastFlags = flags
                return nil
            }
            guard state.lastFlags != flags else { return nil }
            state.lastFlags = flags
            guard let queue = state.queue, let callback = state.callback else { return nil }
            return (queue, callback, state.info, state.registration)
        }
        guard let (queue, callback, info, registration) = call else { return }
        queue.async { [self] in
            // Stopped or re-registered since: stopping means no more callbacks of the old one.
            guard state.withLock({ $0.registration == registration && $0.followID == id }) else { return }
            callback(self, flags, info?.info)
        }
    }
}

extension SCNetworkReachability: CustomStringConvertible {
    /// As Apple's CFCopyDescription: the target, the last flags seen, and what the context's
    /// `copyDescription` says (asked outside every lock: it is the caller's code).
    public var description: String {
        let (flags, info) = state.withLock { ($0.lastFlags, $0.info) }
        var text = "<SCNetworkReachability> {\(target)"
        if let flags { text += ", flags = 0x" + String(flags.rawValue, radix: 16) }
        if let described = info?.text { text += ", context = \(described)" }
        return text + "}"
    }
}

extension SCNetworkReachability: Hashable {
    /// By identity, as CF objects compare in Swift.
    public static func == (a: SCNetworkReachability, b: SCNetworkReachability) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
