import CNetlink
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Settings for an in-process monitor.
public struct MonitorConfiguration: Sendable {
    /// Where sysfs is mounted; tests point this at a fake tree.
    public var sysfsRoot: String = "/sys"
    /// Interface rules from configuration, in order.
    public var rules: [InterfaceRule] = []
    /// Priority overrides per kind.
    public var priorities: [InterfaceKind: Int] = [:]
    /// A network namespace to watch (e.g. `/run/netns/NAME`); nil for the caller's own.
    public var namespacePath: String? = nil
    /// The monitor socket's receive buffer. Tests make it tiny to force overruns.
    public var receiveBufferBytes: Int32 = 8 << 20
    /// An rtnetlink socket handed over by systemd (reachd.socket), used as the monitor socket
    /// instead of opening one; the monitor owns it from then on. Its buffer is left as set.
    public var monitorSocket: Int32? = nil
    /// The resolv.conf host checks read (again for every lookup); nil for the system's.
    public var resolvConfPath: String? = nil
    /// Host lookups running at once; more wait their turn (never past their deadline).
    public var maximumConcurrentLookups = 64
    /// How long host checks remember that a name does not exist.
    public var negativeCacheTime: Duration = HostCache.negativeTTL

    public init() {}

    var mirrorOptions: KernelMirror.Options {
        var options = KernelMirror.Options()
        options.namespacePath = namespacePath
        options.sysfs = SysfsReader(root: sysfsRoot)
        options.classifier = Classifier(rules: rules, priorities: priorities)
        options.receiveBufferBytes = receiveBufferBytes
        options.adoptedMonitorSocket = monitorSocket
        return options
    }
}

/// One delivery from a monitor: first the full picture, then each change.
public enum ReachabilityUpdate: Sendable {
    case snapshot(ReachabilitySnapshot)
    case change(ReachabilityChange)
}

/// Watches the kernel in-process and keeps a derived reachability picture in step with it.
///
/// ```swift
/// let monitor = try ReachabilityMonitor()
/// for await update in monitor.updates() { ... }
/// ```
/// The netlink sockets are read on a thread of the monitor's own, so awaiting updates never
/// ties up Swift's cooperative pool.
public final class ReachabilityMonitor: Sendable {
    private let core: Core

    /// Opens the netlink sockets and completes the first sync before returning, so the
    /// monitor is valid from its first value: there is no "unknown until the first update".
    public init(configuration: MonitorConfiguration = MonitorConfiguration()) throws {
        let observer = try NetworkObserver(configuration: configuration)
        let descriptor = observer.netlinkDescriptor
        let core = try Core(observer)
        self.core = core
        let wakeup = core.wakeup
        let resolverOptions = HostResolver.Options(
            maxConcurrent: configuration.maximumConcurrentLookups, resolvConfPath: configuration.resolvConfPath,
            negativeCacheTime: configuration.negativeCacheTime)
        // The thread enters the watched namespace, so the DNS sockets it opens live there too.
        var namespace: Int32?
        if let path = configuration.namespacePath {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw SystemError("open network namespace \(path)") }
            namespace = fd
        }
        let namespaceDescriptor = namespace
        do {
            try DedicatedThread.start {
                if let namespaceDescriptor {
                    let entered = cnetlink_setns(namespaceDescriptor, cnetlink_clone_newnet()) == 0
                    close(namespaceDescriptor)
                    guard entered else {
                        core.failHostChecks(because: "cannot enter the network namespace: \(SystemError("setns"))")
                        return core.run(descriptor: descriptor, wakeup: wakeup, resolver: nil)
                    }
                }
                core.run(descriptor: descriptor, wakeup: wakeup, resolver: resolverOptions)
            }
        } catch {
            if let namespace { close(namespace) }
            throw error
        }
    }

    deinit { stop() }

    /// The current picture.
    public var snapshot: ReachabilitySnapshot {
        core.shared.withLock { $0.observer.snapshot }
    }

    /// Reads the current state under the monitor's lock (address checks, tests).
    func withState<T>(_ body: (borrowing NetworkState) -> T) -> T {
        core.shared.withLock { body($0.observer.state) }
    }

    /// How many times the monitor re-dumped the kernel's state after an overrun (and at start).
    public var resyncCount: Int { core.shared.withLock { $0.observer.resyncCount } }

    /// Overruns and resyncs so far.
    public var counters: MirrorCounters { core.shared.withLock { $0.observer.counters } }

    /// The current snapshot, then every change, until `stop()` or the stream is dropped.
    public func updates() -> AsyncStream<ReachabilityUpdate> {
        subscribe(.unbounded, first: { .snapshot($0.observer.snapshot) }) { shared, body in body(&shared.subscribers) }
    }

    /// Checks one address against the kernel's routing truth and the link states held here.
    /// Never touches DNS and never waits: two system calls and a table lookup.
    /// `0.0.0.0` and `::` answer "is there general connectivity".
    public func check(address text: String) -> CheckResult {
        core.shared.withLock { $0.observer.check(address: text) }
    }

    /// Checks an address at once, or a host name within `timeout`.
    public func check(_ target: String, timeout: Duration = .seconds(5)) async throws -> CheckResult {
        if AddressTarget.looksLikeAddress(target) { return check(address: target) }
        return try await check(host: target, deadline: .now + timeout)
    }

    /// Resolves `host` (A and AAAA; /etc/hosts, then DNS) and checks its addresses. Answers by
    /// `deadline` whatever DNS does: `dnsTimeout` then. Answers at once, without a query, when
    /// no nameserver is routable. Cancelling the calling task ends the check (`CheckCancelled`).
    public func check(host: String, deadline: ContinuousClock.Instant) async throws -> CheckResult {
        if case let .failure(error) = HostName.validate(host) { return .invalid(host, error.description) }
        let id = core.nextCheckID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CheckResult, any Error>) in
                startHostCheck(id: id, host: host, deadline: deadline) { result in
                    continuation.resume(with: result.mapError { $0 as any Error })
                }
            }
        } onCancel: {
            _ = core.submit(.cancel(id))
            wake()
        }
    }

    /// `check(host:deadline:)` for callers that cannot await (SystemConfiguration's GetFlags, a
    /// watch re-checked after a change): `completion` runs once, on the monitor's thread, with
    /// the answer by `deadline`, or `CheckCancelled` when the monitor has stopped.
    public func check(
        host: String, deadline: ContinuousClock.Instant,
        completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void
    ) {
        if case let .failure(error) = HostName.validate(host) { return completion(.success(.invalid(host, error.description))) }
        startHostCheck(id: core.nextCheckID(), host: host, deadline: deadline, completion: completion)
    }

    private func startHostCheck(
        id: UInt64, host: String, deadline: ContinuousClock.Instant,
        completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void
    ) {
        let request = HostCheckRequest(id: id, name: host, deadline: deadline, completion: completion)
        if !core.submit(.check(request)) { return completion(.failure(CheckCancelled())) }
        wake()
    }

    /// The routing epoch each time it moves: a link, address, route or rule changed, whether or
    /// not the host's answer or any interface's did (`updates()` says nothing then). What a
    /// follower of single targets re-checks on, as reachd's watches do. Newest value only: a
    /// burst of changes while the consumer is busy is one element. Ends at `stop()`.
    public func routingChanges() -> AsyncStream<UInt64> {
        subscribe(.bufferingNewest(1)) { shared, body in body(&shared.routingSubscribers) }
    }

    /// A stream registered in the subscriber table `table` hands to its body (under the lock,
    /// after `first`, if given, is yielded) and removed from it when the stream ends. A stopped
    /// monitor gives a finished stream.
    private func subscribe<Element: Sendable>(
        _ bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
        first: ((borrowing Core.Shared) -> Element)? = nil,
        table: @escaping @Sendable (inout Core.Shared, (inout [UInt64: AsyncStream<Element>.Continuation]) -> Void) -> Void
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let id = core.shared.withLock { shared -> UInt64? in
            guard !shared.stopped else { return nil }
            if let first { continuation.yield(first(shared)) }
            shared.nextID += 1
            let id = shared.nextID
            table(&shared) { $0[id] = continuation }
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        let core = self.core
        continuation.onTermination = { _ in
            core.shared.withLock { shared in table(&shared) { _ = $0.removeValue(forKey: id) } }
        }
        return stream
    }

    private func wake() { core.wake() }

    /// Stops watching; every update stream finishes. Idempotent.
    public func stop() {
        let first = core.shared.withLock { shared -> Bool in
            defer { shared.stopped = true }
            return !shared.stopped
        }
        guard first else { return }
        wake()
    }

    final class Core: Sendable {
        struct Shared: ~Copyable {
            var observer: NetworkObserver
            var subscribers: [UInt64: AsyncStream<ReachabilityUpdate>.Continuation] = [:]
            var routingSubscribers: [UInt64: AsyncStream<UInt64>.Continuation] = [:]
            var nextID: UInt64 = 0
            var stopped = false
        }
        let shared: Mutex<Shared>
        /// Work for the monitor's thread from other threads; `nil` once the thread is gone.
        let inbox = Mutex<[LoopRequest]?>([])
        let checkIDs = Atomic<UInt64>(0)

        enum LoopRequest: Sendable {
            case check(HostCheckRequest)
            case cancel(UInt64)
        }

        func nextCheckID() -> UInt64 { checkIDs.add(1, ordering: .relaxed).newValue }

        /// Queues work for the thread; false when the monitor has stopped.
        func submit(_ request: LoopRequest) -> Bool {
            inbox.withLock { inbox in
                guard inbox != nil else { return false }
                inbox!.append(request)
                return true
            }
        }

        /// Wakes the thread for new work or to stop. Owned here, so it outlives both the thread
        /// and the monitor, whichever ends last.
        let wakeup: WakeUpPipe

        init(_ observer: consuming sending NetworkObserver) throws(SystemError) {
            wakeup = try WakeUpPipe()
            shared = Mutex(Shared(observer: observer))
        }

        func wake() { wakeup.signal() }

        /// The monitor thread: one poll(2) over netlink, the wake-up pipe and the resolver's
        /// sockets, with the earliest of the resync and resolver deadlines as its timeout.
        /// Set once when host checks cannot work at all on this thread.
        let hostCheckFailure = Mutex<String?>(nil)

        func failHostChecks(because reason: String) { hostCheckFailure.withLock { $0 = reason } }

        func run(descriptor: Int32, wakeup: WakeUpPipe, resolver options: HostResolver.Options?) {
            let hosts = HostChecks(options: options, failure: hostCheckFailure.withLock { $0 }) { [unowned self] addresses, target in
                self.shared.withLock { $0.observer.evaluate(addresses: addresses, target: target) }
            }
            var routingEpoch = shared.withLock { $0.observer.state.routingEpoch }
            while true {
                let resolverDescriptors = hosts.descriptors
                var fds = [
                    pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0),
                ]
                for watched in resolverDescriptors {
                    let events = (watched.readable ? Int16(POLLIN) : 0) | (watched.writable ? Int16(POLLOUT) : 0)
                    fds.append(pollfd(fd: watched.fd, events: events, revents: 0))
                }
                let resync = shared.withLock { $0.observer.resyncDeadline }
                let deadline = [resync, hosts.nextDeadline].compactMap { $0 }.min()
                let ready = poll(&fds, nfds_t(fds.count), Self.timeout(until: deadline))
                if ready < 0 && errno != EINTR { break }
                if fds[1].revents != 0 { wakeup.drain() }
                if shared.withLock({ $0.stopped }) { break }

                for request in inbox.withLock({ inbox in defer { inbox = [] }; return inbox ?? [] }) {
                    switch request {
                    case let .check(check): hosts.start(check)
                    case let .cancel(id): hosts.cancel(id)
                    }
                }
                let epoch = shared.withLock { shared in
                    let change = fds[0].revents != 0 ? shared.observer.readAvailable() : shared.observer.resyncIfDue()
                    _ = shared.observer.takeIncidents()
                    if let change {
                        for subscriber in shared.subscribers.values { subscriber.yield(.change(change)) }
                    }
                    return shared.observer.state.routingEpoch
                }
                if epoch != routingEpoch {
                    routingEpoch = epoch
                    hosts.networkChanged()
                    shared.withLock { shared in
                        for subscriber in shared.routingSubscribers.values { subscriber.yield(epoch) }
                    }
                }
                for (offset, watched) in resolverDescriptors.enumerated() {
                    let revents = fds[offset + 2].revents
                    guard revents != 0 else { continue }
                    let readable = revents & Int16(POLLIN | POLLERR | POLLHUP) != 0
                    hosts.process(fd: watched.fd, readable: readable, writable: revents & Int16(POLLOUT) != 0)
                }
                hosts.processTimeouts()
            }
            for request in inbox.withLock({ inbox in defer { inbox = nil }; return inbox ?? [] }) {
                if case let .check(check) = request { check.completion(.failure(CheckCancelled())) }
            }
            hosts.cancelAll()
            let (subscribers, routingSubscribers) = shared.withLock { shared in
                defer {
                    shared.subscribers.removeAll()
                    shared.routingSubscribers.removeAll()
                }
                return (Array(shared.subscribers.values), Array(shared.routingSubscribers.values))
            }
            for subscriber in subscribers { subscriber.finish() }
            for subscriber in routingSubscribers { subscriber.finish() }
        }

        /// poll(2)'s timeout in milliseconds, rounded up so a deadline is never woken for early.
        static func timeout(until deadline: ContinuousClock.Instant?) -> Int32 {
            guard let deadline else { return -1 }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return 0 }
            return Int32(clamping: remaining.millisecondsRoundedUp)
        }
    }
}
