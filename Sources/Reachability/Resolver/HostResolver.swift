import CAres
#if canImport(Glibc)
import Glibc
#endif

/// Resolves host names (A and AAAA, /etc/hosts then DNS) without ever blocking, and answers
/// every lookup by its deadline: DNS that does not answer in time gives `.timedOut` at the
/// deadline, not after c-ares' own 75 s of retries.
///
/// It owns no thread and no loop: it plugs into the caller's. After every call, the loop
/// watches `descriptors`, wakes at `nextDeadline`, and calls `process(fd:readable:writable:)`
/// for each ready descriptor and `processTimeouts()` when the deadline has come:
///
/// ```swift
/// let id = resolver.resolve("example.com", deadline: .now + .seconds(5)) { outcome in ... }
/// while waiting {
///     poll(resolver.descriptors, timeout: resolver.nextDeadline)   // sketch
///     for ready in readyDescriptors { resolver.process(fd: ready.fd, readable: ..., writable: ...) }
///     if let deadline = resolver.nextDeadline, deadline <= .now { resolver.processTimeouts() }
/// }
/// ```
/// Completions run only from `process` and `processTimeouts`, after the resolver's own
/// bookkeeping, so a completion may call `resolve` or `cancel`. Not thread-safe: every call
/// comes from the loop's thread. Sockets are opened on that thread, in its network namespace.
///
/// Each lookup runs on a c-ares channel of its own (see `AresLookup`), at most
/// `Options.maxConcurrent` at a time; the others wait in order of arrival and time out at their
/// own deadline if they are still waiting.
public final class HostResolver {
    public struct Options: Sendable, Equatable {
        /// Lookups running at once (one channel, one or two sockets each); more wait in line.
        public var maxConcurrent = 64
        /// The resolv.conf to read; nil for the system's. Read again for every lookup.
        public var resolvConfPath: String? = nil
        /// How long callers that cache answers keep negative ones (`HostChecks` does).
        public var negativeCacheTime: Duration = HostCache.negativeTTL

        public init(maxConcurrent: Int = 64, resolvConfPath: String? = nil, negativeCacheTime: Duration = HostCache.negativeTTL) {
            self.maxConcurrent = maxConcurrent
            self.resolvConfPath = resolvConfPath
            self.negativeCacheTime = negativeCacheTime
        }
    }

    public enum Outcome: Equatable, Sendable {
        /// A and AAAA answers together, IPv4 first; `ttl` is the smallest TTL in seconds (0 for
        /// /etc/hosts answers).
        case resolved([IPAddress], ttl: UInt32)
        /// NXDOMAIN, or the name exists without addresses.
        case notFound
        /// The deadline came first (or every server and retry timed out before it).
        case timedOut
        /// Anything else (refused, server failure, bad answer...): c-ares' message and status name.
        case failed(String)
    }

    public typealias RequestID = UInt64

    /// Rounds over the server list: with the first-try timeout a quarter of the time left, a
    /// second nameserver is still asked well before the deadline.
    static let tries: Int32 = 3
    /// The shortest first-try timeout given to c-ares: below it, a loaded server on a slow link
    /// would be retried before it could possibly answer.
    static let minimumTryTimeout: Duration = .milliseconds(100)
    /// A waiting lookup with less than this left is not started: no DNS server answers faster
    /// than a round trip plus a channel's set-up, and on a busy machine starting it only costs
    /// the loop time that others' deadlines need. It is answered `.timedOut` at its deadline,
    /// without a query, as if it had run.
    static let minimumTimeToStart: Duration = .milliseconds(50)

    private final class Request {
        enum Phase {
            case waiting
            /// Came up with too little time left to start; times out at its deadline.
            case expiring
            case running(AresLookup)
            case finished(Outcome)
            /// Completed or cancelled: nothing more happens to it.
            case over
        }

        let id: RequestID
        let name: String
        let deadline: ContinuousClock.Instant
        let completion: (Outcome) -> Void
        var phase = Phase.waiting

        init(id: RequestID, name: String, deadline: ContinuousClock.Instant, completion: @escaping (Outcome) -> Void) {
            self.id = id
            self.name = name
            self.deadline = deadline
            self.completion = completion
        }

        var lookup: AresLookup? {
            if case .running(let lookup) = phase { return lookup }
            return nil
        }

        var isWaiting: Bool {
            if case .waiting = phase { return true }
            return false
        }

        var isExpiring: Bool {
            if case .expiring = phase { return true }
            return false
        }
    }

    private let options: Options
    private var nextID: RequestID = 1
    /// Every request whose completion is still due (waiting, running, or finished and not yet
    /// delivered), by id: what `cancel` can reach.
    private var requests: [RequestID: Request] = [:]
    /// The running requests, by id; at most `maxConcurrent`.
    private var running: [RequestID: Request] = [:]
    /// Requests waiting for a slot, oldest first from `waitingHead`. A cancelled one stays in the
    /// array, marked over, and is skipped when its turn comes.
    private var waiting: [Request] = []
    private var waitingHead = 0
    private var waitingCount = 0
    /// No later than the earliest deadline among the waiting requests (it may be earlier, once
    /// that request left the queue: the wake-up it causes recomputes it). Keeps `nextDeadline`
    /// from walking a thousand waiting requests after every event.
    private var waitingDeadlineBound: ContinuousClock.Instant?
    /// Moves whenever the set of sockets, or what is wanted of them, may have changed: a loop
    /// that mirrors `descriptors` need not read them again while it stands still.
    public private(set) var descriptorGeneration: UInt64 = 0
    /// Which running request owns each socket c-ares reported.
    private var owners: [Int32: Request] = [:]
    /// Waiting requests that came up with too little time left to start (`minimumTimeToStart`):
    /// they wait for their deadline here, and time out then.
    private var expiring: [Request] = []
    /// Finished requests whose completion has not run yet, in the order they finished.
    private var finished: [Request] = []

    public init(options: Options = Options()) throws {
        precondition(options.maxConcurrent > 0, "maxConcurrent must be at least 1")
        let status = AresLookup.libraryStatus
        guard status == ARES_SUCCESS else {
            throw ResolverError(message: "ares_library_init: " + AresLookup.describe(status))
        }
        self.options = options
    }

    deinit {
        // Pending completions are dropped, as after `cancel`.
        for request in running.values { request.lookup?.destroy() }
    }

    /// Starts a lookup of `name`'s A and AAAA records (or queues it when `maxConcurrent` run
    /// already). `completion` runs exactly once, from a later `process` or `processTimeouts`,
    /// unless the request is cancelled: when DNS answers, or at `deadline` with `.timedOut`
    /// (a few milliseconds late at most, when the loop honours `nextDeadline`). A name ending in
    /// a dot skips resolv.conf's search list.
    @discardableResult
    public func resolve(
        _ name: String, deadline: ContinuousClock.Instant, completion: @escaping (Outcome) -> Void
    ) -> RequestID {
        let request = Request(id: nextID, name: name, deadline: deadline, completion: completion)
        nextID += 1
        requests[request.id] = request
        if running.count < options.maxConcurrent, waitingCount == 0 {
            start(request, now: .now)
        } else {
            waiting.append(request)
            waitingCount += 1
            waitingDeadlineBound = min(waitingDeadlineBound ?? deadline, deadline)
            if case let .some(cached) = cachedNextDeadline { cachedNextDeadline = .some(min(cached ?? deadline, deadline)) }
        }
        return request.id
    }

    /// Forgets a request: its completion will not run, and its sockets are closed now.
    /// Unknown or already completed ids are ignored.
    public func cancel(_ id: RequestID) {
        cachedNextDeadline = nil
        guard let request = requests.removeValue(forKey: id) else { return }
        switch request.phase {
        case .waiting:
            waitingCount -= 1
        case .running:
            running[id] = nil
            end(request)
            startWaiting(now: .now)
        case .expiring, .finished, .over:
            break
        }
        request.phase = .over
    }

    /// A socket c-ares wants watched: its descriptor, the events, and an identity that changes
    /// whenever the descriptor number comes to stand for another socket (so a loop that keeps
    /// its registrations knows to register that one afresh).
    public struct Descriptor: Hashable, Sendable {
        public var fd: Int32
        public var readable: Bool
        public var writable: Bool
        public var identity: Identity

        public struct Identity: Hashable, Sendable {
            var request: RequestID
            var serial: UInt64
        }
    }

    /// The descriptors c-ares wants watched now, in ascending order. Pass POLLERR/POLLHUP on as
    /// `readable`: c-ares learns of socket errors by reading.
    public var descriptors: [Descriptor] {
        owners.keys.sorted().compactMap { fd in
            guard let request = owners[fd], let lookup = request.lookup, let interest = lookup.sockets[fd] else { return nil }
            let identity = Descriptor.Identity(request: request.id, serial: lookup.socketSerials[fd] ?? 0)
            return Descriptor(fd: fd, readable: interest.readable, writable: interest.writable, identity: identity)
        }
    }

    /// When the loop must call `processTimeouts` at the latest: the earliest request deadline or
    /// c-ares retransmission timer; now when completions are ready to run; nil when idle.
    public var nextDeadline: ContinuousClock.Instant? {
        if !finished.isEmpty { return .now }
        if let cached = cachedNextDeadline { return cached }
        let computed = computeNextDeadline()
        cachedNextDeadline = .some(computed)
        return computed
    }

    /// `nextDeadline` as last computed; nil (not .some(nil)) once anything may have moved it. A
    /// burst of resolve calls that only queue does not: each just lowers it to its own deadline.
    private var cachedNextDeadline: ContinuousClock.Instant??

    private func computeNextDeadline() -> ContinuousClock.Instant? {
        let now = ContinuousClock.now
        var earliest: ContinuousClock.Instant?
        func consider(_ instant: ContinuousClock.Instant) {
            if earliest.map({ instant < $0 }) ?? true { earliest = instant }
        }
        for request in running.values {
            consider(request.deadline)
            if let delay = request.lookup?.timerDelay { consider(now + delay) }
        }
        if waitingCount > 0, let bound = waitingDeadlineBound { consider(bound) }
        for request in expiring where request.isExpiring { consider(request.deadline) }
        return earliest
    }

    /// Lets c-ares handle readiness of `fd` (one of `descriptors`), then runs the completions of
    /// whatever finished. Unknown descriptors (closed meanwhile) are ignored.
    public func process(fd: Int32, readable: Bool, writable: Bool) {
        cachedNextDeadline = nil
        if let request = owners[fd], let lookup = request.lookup {
            perform(on: request) { lookup.process(fd: fd, readable: readable, writable: writable) }
            startWaiting(now: .now)
        }
        deliver()
    }

    /// Times out overdue requests (running or waiting), runs c-ares' retransmission timers,
    /// starts waiting requests in freed slots, then runs the completions of what finished.
    public func processTimeouts() {
        cachedNextDeadline = nil
        let now = ContinuousClock.now
        for request in running.values.sorted(by: { $0.id < $1.id }) {
            if request.deadline <= now {
                running[request.id] = nil
                end(request)
                finish(request, .timedOut)
            } else if let lookup = request.lookup {
                perform(on: request) { lookup.processTimers() }
            }
        }
        if waitingCount > 0 {
            waitingDeadlineBound = nil
            for request in waiting[waitingHead...] where request.isWaiting {
                if request.deadline <= now {
                    waitingCount -= 1
                    finish(request, .timedOut)
                } else {
                    waitingDeadlineBound = min(waitingDeadlineBound ?? request.deadline, request.deadline)
                }
            }
        }
        if !expiring.isEmpty {
            for request in expiring where request.isExpiring && request.deadline <= now { finish(request, .timedOut) }
            expiring.removeAll { !$0.isExpiring }
        }
        startWaiting(now: now)
        deliver()
    }

    /// The resolv.conf lookups read: the configured one, or the system's.
    public var resolvConfPath: String { options.resolvConfPath ?? "/etc/resolv.conf" }

    /// The nameservers of the current resolv.conf, in order (what a lookup started now would
    /// ask), for the "can any nameserver be reached at all" pre-check. Reads the file each call.
    public func nameservers() -> [IPAddress] {
        AresLookup.nameservers(resolvConfPath: options.resolvConfPath)
    }

    /// What /etc/hosts says about `name`, without any query: for answering when no nameserver
    /// is reachable.
    public func hostsFileAddresses(_ name: String) -> [IPAddress] {
        AresLookup.hostsFileAddresses(name)
    }

    // MARK: - Bookkeeping

    /// Starts `request` on a channel of its own. An answer c-ares has at once (/etc/hosts, an IP
    /// literal, a bad name) is kept for the next `process`/`processTimeouts`.
    private func start(_ request: Request, now: ContinuousClock.Instant) {
        let tryTimeout = max(Self.minimumTryTimeout, now.duration(to: request.deadline) / 4)
        let lookup = AresLookup(
            name: request.name, timeout: tryTimeout, tries: Self.tries, resolvConfPath: options.resolvConfPath)
        request.phase = .running(lookup)
        running[request.id] = request
        descriptorGeneration &+= 1  // its sockets were opened while it started
        cachedNextDeadline = nil
        perform(on: request) {}
    }

    /// Runs one c-ares call for `request`, then brings `owners` in line with the sockets the
    /// lookup reports, and finishes the request if c-ares gave its outcome. Called only from the
    /// resolver's own methods, never from a c-ares callback, so destroying the channel is safe.
    private func perform(on request: Request, _ call: () -> Void) {
        guard let lookup = request.lookup else { return }
        let before = Array(lookup.sockets.keys)
        let serialsBefore = lookup.socketSerials
        let interestBefore = lookup.sockets.mapValues { [$0.readable, $0.writable] }
        call()
        if lookup.socketSerials != serialsBefore || lookup.sockets.mapValues({ [$0.readable, $0.writable] }) != interestBefore {
            descriptorGeneration &+= 1
        }
        for fd in before where lookup.sockets[fd] == nil && owners[fd] === request { owners[fd] = nil }
        for fd in lookup.sockets.keys { owners[fd] = request }
        if let outcome = lookup.outcome {
            running[request.id] = nil
            end(request)
            finish(request, outcome)
        }
    }

    /// Destroys the request's channel (closing its sockets) and forgets its sockets. c-ares calls
    /// back from inside `ares_destroy` with ARES_EDESTRUCTION: `AresLookup` ignores that.
    private func end(_ request: Request) {
        guard let lookup = request.lookup else { return }
        let sockets = Array(lookup.sockets.keys)
        request.phase = .over
        if !sockets.isEmpty { descriptorGeneration &+= 1 }
        lookup.destroy()
        for fd in sockets where owners[fd] === request { owners[fd] = nil }
    }

    private func finish(_ request: Request, _ outcome: Outcome) {
        request.phase = .finished(outcome)
        finished.append(request)
    }

    /// Fills free slots with waiting requests, oldest first; those already past their deadline
    /// time out without starting.
    private func startWaiting(now: ContinuousClock.Instant) {
        while running.count < options.maxConcurrent, waitingCount > 0, waitingHead < waiting.count {
            let request = waiting[waitingHead]
            waitingHead += 1
            guard request.isWaiting else { continue }
            waitingCount -= 1
            if request.deadline <= now {
                finish(request, .timedOut)
            } else if now.duration(to: request.deadline) < Self.minimumTimeToStart {
                request.phase = .expiring
                expiring.append(request)
            } else {
                start(request, now: now)
            }
        }
        // Drop the consumed prefix once it is all there is, or large enough to be worth a copy.
        if waitingCount == 0 || waitingHead >= 1024 {
            if waitingCount == 0 {
                waiting.removeAll(keepingCapacity: true)
            } else {
                waiting.removeFirst(waitingHead)
            }
            waitingHead = 0
        }
    }

    /// Runs the completions that are ready, in the order their requests finished. Requests that
    /// finish meanwhile (a completion may start a lookup that ends at once) wait for the next
    /// call: `nextDeadline` then says "now".
    private func deliver() {
        guard !finished.isEmpty else { return }
        let batch = finished
        finished = []
        for request in batch {
            // An earlier completion of this batch may have cancelled it.
            guard case .finished(let outcome) = request.phase, requests.removeValue(forKey: request.id) != nil else {
                continue
            }
            request.phase = .over
            request.completion(outcome)
        }
    }
}

/// The resolver could not be set up at all (c-ares failed to initialise).
public struct ResolverError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
