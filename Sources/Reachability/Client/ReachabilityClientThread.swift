import Synchronization

/// What lives on a `ReachabilityClientThread`: the client and whatever it feeds (subscribers,
/// followers). Used from that thread only.
package protocol ReachabilityClientOwner: AnyObject, SendableMetatype {
    var client: ReachabilityClient { get }
    /// reachd's signals and watch answers, in order. Unless the client `followsService`,
    /// `serviceLost` never reaches it (the thread ends instead) and throwing ends the thread as if
    /// reachd were gone; when it follows, `serviceLost` and `serviceReturned` come too, and a
    /// throw (a call that failed as reachd left) waits for reachd's next return.
    func handle(_ events: [ReachabilityClient.Event]) throws
    /// The thread ends: `lost` when reachd or the bus went away, false after `stop()`. Jobs still
    /// queued have been cancelled already.
    func ended(lost: Bool)
}

/// A connection to reachd owned by a thread of its own (a pthread, never Swift's cooperative
/// pool): sd-bus wants one thread per connection, and its waits block. Every use of the client
/// is a job run there; between jobs the thread dispatches bus events to its owner and waits on
/// the bus and a wake-up pipe. The one such thread of reachctl and of SystemConfiguration.
package final class ReachabilityClientThread<Owner: ReachabilityClientOwner>: Sendable {
    /// A job's fate when the thread has ended before running it.
    public struct Closed: Error, CustomStringConvertible {
        public var description: String { "the connection to reachd was closed" }
    }

    private struct Job: Sendable {
        let run: @Sendable (Owner) -> Void
        /// Called instead of `run` when the thread has ended.
        let cancel: @Sendable () -> Void
    }

    /// Pending jobs; nil once the thread has ended.
    private let jobs = Mutex<[Job]?>([])
    private let stopping = Atomic<Bool>(false)
    private let wakeup: WakeUpPipe

    /// Starts the thread, which becomes `owner`'s only user (the caller lets go of it and of its
    /// client). The thread holds this object until it ends: stop it when done.
    public init(_ owner: sending Owner) throws(SystemError) {
        wakeup = try WakeUpPipe()
        let handOver = UncheckedSendable(owner)
        try DedicatedThread.start { [self] in
            let owner = handOver.value
            let lost = run(owner)
            for job in jobs.withLock({ jobs in defer { jobs = nil }; return jobs ?? [] }) { job.cancel() }
            owner.ended(lost: lost)
        }
    }

    /// Whether the thread has ended: reachd left, or `stop()`.
    public var isClosed: Bool { jobs.withLock { $0 == nil } }

    /// Ends the thread; queued jobs are cancelled. Idempotent, never waits.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// Queues `run` for the thread; `cancel` instead when it has ended (or ends first).
    public func submit(_ run: @escaping @Sendable (Owner) -> Void, cancel: @escaping @Sendable () -> Void = {}) {
        let job = Job(run: run, cancel: cancel)
        let accepted = jobs.withLock { jobs -> Bool in
            guard jobs != nil else { return false }
            jobs!.append(job)
            return true
        }
        if accepted { wakeup.signal() } else { job.cancel() }
    }

    /// Runs `body` on the thread and returns what it returns (or throws what it throws, or `Closed`).
    public func perform<T: Sendable>(_ body: @escaping @Sendable (Owner) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            submit(
                { owner in continuation.resume(with: Result { try body(owner) }) },
                cancel: { continuation.resume(throwing: Closed()) })
        }
    }

    /// Jobs, then bus events, then a wait on the bus and the wake-up pipe, until `stop()` (false)
    /// or until reachd or the bus is gone (true).
    private func run(_ owner: Owner) -> Bool {
        while !stopping.load(ordering: .acquiring) {
            for job in jobs.withLock({ jobs in defer { jobs = [] }; return jobs ?? [] }) { job.run(owner) }
            do {
                // Handling events may call reachd, and signals arriving meanwhile are queued: drain.
                while true {
                    let events = try owner.client.dispatch()
                    if events.isEmpty { break }
                    if owner.client.followsService {
                        do {
                            try owner.handle(events)
                        } catch {
                            // reachd left in the middle (its NameOwnerChanged is on the way) or
                            // failed us: start over with a connection of our own.
                            if owner.client.disconnect() { try owner.handle([.serviceLost]) }
                        }
                        continue
                    }
                    let served = events.prefix { $0 != .serviceLost }
                    try owner.handle(Array(served))
                    if served.count < events.count { return true }
                }
                if try owner.client.wait(timeout: nil, orReadable: wakeup.fd) { wakeup.drain() }
            } catch {
                return true
            }
        }
        return false
    }
}
