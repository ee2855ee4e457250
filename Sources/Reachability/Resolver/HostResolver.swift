import CAres
#if canImport(Glibc)
import Glibc
#endif

/// Resolves host names (A and AAAA, /etc/hosts then DNS) without ever blocking, and answers
/// every lookup by its deadline: DNS that does not answer in time gives `.timedOut` at the
/// deadline, not after c-ares' own 75 s of retries.
///
/// It owns no thread and no loop: it plugs into the caller's (`ResolverSources` registers its
/// sockets and deadline on an `EventLoopProtocol`), following `takeSocketChanges()` and
/// `nextDeadline`, and calling `process(fd:readable:writable:)` and `processTimeouts()`.
/// Completions run only from `process` and `processTimeouts`, after the resolver's own
/// bookkeeping, so a completion may call `resolve` or `cancel`. Not thread-safe: every call
/// comes from the loop's thread. Sockets are opened on that thread, in its network namespace.
///
/// Each lookup runs on a c-ares channel of its own (see `AresLookup`), at most
/// `Options.maxConcurrent` at a time, shared fairly between owners (see `slots`): the others
/// wait, each owner's in order of arrival, and a freed slot goes to the oldest lookup whose owner
/// is still under its share. Cancelling a lookup destroys its channel: its slot is free at once.
/// Deadlines and c-ares' retransmission timers sit in min-heaps, so `nextDeadline` is O(1) and
/// each expiry O(log n), however many lookups wait. A waiting lookup whose deadline is closer than
/// `minimumStartLead` when its turn comes is not started at all: it is answered `.timedOut` at
/// its deadline without a query being sent.
package final class HostResolver {
    /// Called with each c-ares socket just before it is closed, from inside `process`,
    /// `processTimeouts`, `cancel` or teardown: the moment for a loop that registered the number
    /// (sd-event, epoll) to drop its registration. Later, the number may name another socket, and
    /// dropping a registration by number would take that one out of the loop.
    package var socketWillClose: ((Int32) -> Void)?

    /// Rounds over the server list: with the first-try timeout a quarter of the time left, a
    /// second nameserver is still asked well before the deadline.
    package static let tries: Int32 = 3
    /// The shortest first-try timeout given to c-ares: below it, a loaded server on a slow link
    /// would be retried before it could possibly answer.
    package static let minimumTryTimeout: Duration = .milliseconds(100)
    /// A waiting lookup is started only with at least this much time left. A slot frees when
    /// a running lookup ends, and under load that is mostly when a crowd of deadlines falls due:
    /// starting the next waiting lookups then (a channel, resolv.conf read, a socket and two
    /// queries each, then a teardown moments later) spends the loop's time exactly when answers
    /// are due, for lookups that could hardly finish: 50 ms is half the shortest try c-ares
    /// is given, and several round trips to a server on a slow path. Such a lookup is answered
    /// `.timedOut` at its own deadline, with no query sent.
    package static let minimumStartLead: Duration = .milliseconds(50)

    private let options: Options
    /// How the slots are shared: lookups of the system (reachd's own work, root) may take every
    /// slot; the others together may not take the reserve (so the probe's name and root's checks
    /// always start at once), and no owner of them more than its share. So a user who leaves
    /// lookups behind on a server that never answers (every one running until its deadline, up
    /// to minutes) can neither blind the system nor another user.
    package var slots: Quota { ledger.quota }
    /// The running lookups, counted against `slots` per owner.
    private var ledger: QuotaLedger<LookupOwner>
    /// The system's lookups in a row that queried DNS and timed out (a lookup that never ran,
    /// parked past its deadline in line, does not count); any other outcome of the system's
    /// resets it. Stall evidence, as Android's consecutive DNS timeouts are. Only the system's:
    /// a user chooses the names and deadlines of its lookups (a name under a zone whose servers
    /// never answer, 100 ms to wait) and could time out as often as it likes, or answer quickly
    /// between the system's timeouts, so neither its timeouts nor its answers are evidence for
    /// everyone; nor are the shared lookups of watched targets, whose names users choose.
    package private(set) var consecutiveTimeouts = 0
    private var nextID: RequestID = 1
    /// Every request whose completion is still due (waiting, running, or finished and not yet
    /// delivered), by id: what `cancel` can reach.
    private var requests: [RequestID: Request] = [:]
    /// The running requests, by id; at most `maxConcurrent`.
    private var running: [RequestID: Request] = [:]
    /// Requests waiting for a slot, a line per owner.
    private var waiting: [LookupOwner: WaitingLine] = [:]
    private var waitingCount = 0
    /// Every pending request's deadline; stale entries (finished, cancelled) are skipped.
    private var deadlines = DeadlineHeap<Request>()
    /// Running requests' retransmission timers; an entry is current while it equals the
    /// request's `timerDue`.
    private var timers = DeadlineHeap<Request>()
    /// Which running request owns each socket c-ares reported.
    private var owners: [Int32: Request] = [:]
    /// Sockets whose watch changed since `takeSocketChanges`, with whether they closed meanwhile.
    private var changedSockets: [Int32: Bool] = [:]
    /// Finished requests whose completion has not run yet, in the order they finished.
    private var finished: [Request] = []

    /// Where the nameservers, the search list and /etc/hosts come from.
    package let files: ResolverFiles

    /// `files`: shared with whoever else reads resolv.conf (the core's nameserver fact), so that
    /// a fault is said once; by default the resolver reads `options.resolvConfPath` on its own.
    package convenience init(options: Options = Options()) throws {
        try self.init(options: options, files: ResolverFiles(resolvConfPath: options.resolvConfPath ?? Self.systemResolvConfPath))
    }

    package init(options: Options, files: ResolverFiles) throws {
        precondition(options.maxConcurrent > 0, "maxConcurrent must be at least 1")
        self.files = files
        let status = AresLookup.libraryStatus
        guard status == ARES_SUCCESS else {
            throw ResolverError(message: "ares_library_init: " + AresLookup.describe(status))
        }
        self.options = options
        ledger = QuotaLedger(Quota(total: options.maxConcurrent)) { $0 == .system }
    }

    deinit {
        // Pending completions are dropped, as after `cancel`.
        for request in running.values { request.lookup?.destroy() }
    }

    /// Starts a lookup of `name`'s A and AAAA records for `owner` (or queues it when `owner` has
    /// no free slot, see `slots`). `completion` runs exactly once, from a later `process` or `processTimeouts`,
    /// unless the request is cancelled: when DNS answers, or at `deadline` with `.timedOut`
    /// (a few milliseconds late at most, when the loop honours `nextDeadline`). A name ending in
    /// a dot skips resolv.conf's search list.
    @discardableResult
    package func resolve(
        _ name: String, owner: LookupOwner = .system, deadline: ContinuousClock.Instant,
        completion: @escaping (Outcome) -> Void
    ) -> RequestID {
        let request = Request(id: nextID, name: name, owner: owner, deadline: deadline, completion: completion)
        nextID += 1
        requests[request.id] = request
        deadlines.insert(deadline, request)
        if let address = IPAddress(name) {
            // c-ares 1.18 sends an address literal to DNS when its own shortcut does not apply
            // (then the answer depends on whether a nameserver refuses); an address needs no
            // lookup. Delivered by the loop like every other answer.
            finish(request, .resolved([address], ttl: 0))
        } else if case let local = files.hostsAddresses(name), !local.isEmpty {
            // /etc/hosts first, as glibc's default nsswitch.conf and c-ares' "fb" have it.
            finish(request, .resolved(local, ttl: 0))
        } else if hasSlot(for: owner), waiting[owner]?.count ?? 0 == 0 {
            // A free slot: start it, however short the deadline (the caller chose it, and a
            // local server answers in a millisecond).
            start(request, now: .now)
        } else {
            waiting[owner, default: WaitingLine()].append(request)
            waitingCount += 1
        }
        return request.id
    }

    /// Forgets a request: its completion will not run, and its sockets are closed now.
    /// Unknown or already completed ids are ignored.
    package func cancel(_ id: RequestID) {
        guard let request = requests.removeValue(forKey: id) else { return }
        switch request.phase {
        case .waiting:
            leaveLine(request)
        case .running:
            stopRunning(request)
            end(request)
            startWaiting(now: .now)
        case .parked, .finished, .over:
            break
        }
        request.phase = .over
    }

    /// The descriptors c-ares wants watched now, in ascending order: what tests poll by hand.
    /// Pass POLLERR/POLLHUP on as `readable`: c-ares learns of socket errors by reading.
    package var descriptors: [(fd: Int32, readable: Bool, writable: Bool)] {
        owners.keys.sorted().compactMap { fd in
            guard let interest = owners[fd]?.lookup?.sockets[fd] else { return nil }
            return (fd, interest.readable, interest.writable)
        }
    }

    /// The sockets whose watch changed since the last call (opened, closed, renewed, or
    /// wanting other events), each once; clears the list. Cost: the number of changes.
    package func takeSocketChanges() -> [SocketChange] {
        guard !changedSockets.isEmpty else { return [] }
        defer { changedSockets.removeAll(keepingCapacity: true) }
        return changedSockets.map { fd, renewed in
            let interest = owners[fd]?.lookup?.sockets[fd]
            return SocketChange(
                fd: fd, readable: interest?.readable ?? false, writable: interest?.writable ?? false, renewed: renewed)
        }
    }

    /// When the loop must call `processTimeouts` at the latest: the earliest request deadline or
    /// c-ares retransmission timer; now when completions are ready to run; nil when idle.
    package var nextDeadline: ContinuousClock.Instant? {
        if !finished.isEmpty { return .now }
        deadlines.prune { _, request in request.isPending }
        timers.prune { instant, request in request.timerDue == instant && request.lookup != nil }
        switch (deadlines.first?.instant, timers.first?.instant) {
        case let (deadline?, timer?): return min(deadline, timer)
        case let (deadline, timer): return deadline ?? timer
        }
    }

    /// Lets c-ares handle readiness of `fd` (one of `descriptors`), then runs the completions of
    /// whatever finished. Unknown descriptors (closed meanwhile) are ignored.
    package func process(fd: Int32, readable: Bool, writable: Bool) {
        if let request = owners[fd], let lookup = request.lookup {
            perform(on: request) { lookup.process(fd: fd, readable: readable, writable: writable) }
            startWaiting(now: .now)
        }
        deliver()
    }

    /// Times out overdue requests (running, waiting or parked), runs the c-ares retransmission
    /// timers that are due, starts waiting requests in freed slots, then runs the completions of
    /// what finished. Cost: O(log n) per deadline or timer that fell due.
    package func processTimeouts() {
        let now = ContinuousClock.now
        while let top = deadlines.first, top.instant <= now {
            deadlines.removeFirst()
            let request = top.key
            switch request.phase {
            case .running:
                stopRunning(request)
                end(request)
                if request.owner == .system { consecutiveTimeouts += 1 }
                finish(request, .timedOut)
            case .waiting:
                leaveLine(request)
                finish(request, .timedOut)
            case .parked:
                finish(request, .timedOut)
            case .finished, .over:
                break
            }
        }
        while let top = timers.first, top.instant <= now {
            timers.removeFirst()
            let request = top.key
            guard request.timerDue == top.instant, let lookup = request.lookup else { continue }
            request.timerDue = nil
            perform(on: request) { lookup.processTimers() }
        }
        startWaiting(now: now)
        deliver()
    }

    // MARK: - Bookkeeping

    /// Starts `request` on a channel of its own. An answer c-ares has at once (/etc/hosts, an IP
    /// literal, a bad name) is kept for the next `process`/`processTimeouts`.
    private func start(_ request: Request, now: ContinuousClock.Instant) {
        let settings: (servers: [IPAddress], configuration: ResolverConfiguration)
        switch lookupSettings() {
        case let .success(found): settings = found
        case let .failure(error): return finish(request, .failed(error.message))
        }
        let tryTimeout = max(Self.minimumTryTimeout, now.duration(to: request.deadline) / 4)
        // Weak: a lookup torn down with the resolver closes its sockets after the resolver is gone.
        let lookup = AresLookup(
            name: request.name, servers: settings.servers, configuration: settings.configuration, timeout: tryTimeout,
            tries: Self.tries, willClose: { [weak self] fd in self?.socketWillClose?(fd) })
        request.phase = .running(lookup)
        running[request.id] = request
        ledger.take(request.owner)
        // The channel opened its sockets while starting: all of them are new to the loop.
        perform(on: request, socketsBefore: [:]) {}
    }

    /// Runs one c-ares call for `request`, then brings `owners`, the socket changes and the
    /// request's timer in line with what the lookup reports, and finishes the request if c-ares
    /// gave its outcome or every server refused. Called only from the resolver's own methods,
    /// never from a c-ares callback, so destroying the channel is safe.
    private func perform(
        on request: Request, socketsBefore: [Int32: (readable: Bool, writable: Bool)]? = nil, _ call: () -> Void
    ) {
        guard let lookup = request.lookup else { return }
        let before = socketsBefore ?? lookup.sockets
        call()
        let after = lookup.sockets
        for fd in lookup.takeClosed() {
            changedSockets[fd] = true
            if owners[fd] === request, after[fd] == nil { owners[fd] = nil }
        }
        for fd in before.keys where after[fd] == nil && owners[fd] === request {
            owners[fd] = nil
            changedSockets[fd] = true
        }
        for (fd, interest) in after {
            owners[fd] = request
            if let old = before[fd], old == interest { continue }
            if changedSockets[fd] == nil { changedSockets[fd] = false }
        }
        if let outcome = Self.outcome(of: lookup) {
            if request.owner == .system { consecutiveTimeouts = outcome == .timedOut ? consecutiveTimeouts + 1 : 0 }
            stopRunning(request)
            end(request)
            finish(request, outcome)
            return
        }
        let due = lookup.timerDelay.map { ContinuousClock.now + $0 }
        if due != request.timerDue {
            request.timerDue = due
            if let due { timers.insert(due, request) }
        }
    }

    /// What ended the lookup, if anything did. Every server refusing decides it, also over what
    /// c-ares concluded from the refusals (ECONNREFUSED "Could not contact DNS servers", or a
    /// timeout after retrying a refused send): the refusal is what the caller needs to read.
    private static func outcome(of lookup: AresLookup) -> Outcome? {
        switch (lookup.outcome, lookup.refusal) {
        case (.resolved, _), (.notFound, _): lookup.outcome
        case let (_, refusal?): .failed(refusal)
        case (let outcome, nil): outcome
        }
    }

    /// Destroys the request's channel (closing its sockets) and forgets its sockets. c-ares calls
    /// back from inside `ares_destroy` with ARES_EDESTRUCTION: `AresLookup` ignores that.
    private func end(_ request: Request) {
        guard let lookup = request.lookup else { return }
        let sockets = Array(lookup.sockets.keys)
        request.phase = .over
        request.timerDue = nil
        lookup.destroy()
        for fd in sockets where owners[fd] === request {
            owners[fd] = nil
            changedSockets[fd] = true
        }
    }

    private func finish(_ request: Request, _ outcome: Outcome) {
        request.phase = .finished(outcome)
        finished.append(request)
    }

    /// Whether a lookup of `owner` may start now: a slot is free, and unless it is the system's,
    /// one outside the reserve and within the owner's share.
    private func hasSlot(for owner: LookupOwner) -> Bool {
        ledger.refusal(for: owner) == nil
    }

    /// A running request gives its slot back (it finished, timed out or was cancelled).
    private func stopRunning(_ request: Request) {
        guard running.removeValue(forKey: request.id) != nil else { return }
        ledger.release(request.owner)
    }

    /// A waiting request ends where it stands (cancelled, or its deadline passed).
    private func leaveLine(_ request: Request) {
        waitingCount -= 1
        waiting[request.owner]?.left()
        if waiting[request.owner]?.count == 0 { waiting[request.owner] = nil }
    }

    /// Fills free slots with waiting requests: each time the oldest one whose owner has a slot
    /// (a few owners wait at most, so the scan is short). One whose deadline is closer than
    /// `minimumStartLead` is parked instead, to be answered `.timedOut` at its deadline.
    private func startWaiting(now: ContinuousClock.Instant) {
        while waitingCount > 0, running.count < options.maxConcurrent {
            var next: Request?
            for owner in Array(waiting.keys) where hasSlot(for: owner) {
                guard let first = waiting[owner]?.first() else { continue }
                if next.map({ first.id < $0.id }) ?? true { next = first }
            }
            guard let request = next else { return }
            waiting[request.owner]?.removeFirst()
            if waiting[request.owner]?.count == 0 { waiting[request.owner] = nil }
            waitingCount -= 1
            if now.duration(to: request.deadline) < Self.minimumStartLead {
                request.phase = .parked
            } else {
                start(request, now: now)
            }
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
