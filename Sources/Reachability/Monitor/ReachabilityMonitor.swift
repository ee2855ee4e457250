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

    public init() {}

    var mirrorOptions: KernelMirror.Options {
        var options = KernelMirror.Options()
        options.namespacePath = namespacePath
        options.sysfs = SysfsReader(root: sysfsRoot)
        options.classifier = Classifier(rules: rules, priorities: priorities)
        options.receiveBufferBytes = receiveBufferBytes
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
    private let wakeup: Int32

    /// Opens the netlink sockets and completes the first sync before returning, so the
    /// monitor is valid from its first value: there is no "unknown until the first update".
    public init(configuration: MonitorConfiguration = MonitorConfiguration()) throws {
        let mirror = try KernelMirror(options: configuration.mirrorOptions)
        let routes = try RouteQuery(namespacePath: configuration.namespacePath)
        try mirror.synchronize()
        _ = mirror.takeIncidents()
        let descriptor = mirror.monitorDescriptor
        let wakeup = eventfd(0, Int32(EFD_CLOEXEC))
        guard wakeup >= 0 else { throw SystemError("eventfd") }
        let core = Core(mirror, routes: routes)
        self.core = core
        self.wakeup = wakeup
        do {
            try DedicatedThread.start { core.run(descriptor: descriptor, wakeup: wakeup) }
        } catch {
            close(wakeup)
            throw error
        }
    }

    deinit { stop() }

    /// The current picture.
    public var snapshot: ReachabilitySnapshot {
        core.shared.withLock { $0.mirror.state.snapshot }
    }

    /// Reads the current state under the monitor's lock (address checks, tests).
    func withState<T>(_ body: (borrowing NetworkState) -> T) -> T {
        core.shared.withLock { body($0.mirror.state) }
    }

    /// How many times the monitor re-dumped the kernel's state after an overrun (and at start).
    public var resyncCount: Int { core.shared.withLock { $0.mirror.resyncCount } }

    /// The current snapshot, then every change, until `stop()` or the stream is dropped.
    public func updates() -> AsyncStream<ReachabilityUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReachabilityUpdate.self, bufferingPolicy: .unbounded)
        let id = core.shared.withLock { shared -> UInt64? in
            guard !shared.stopped else { return nil }
            continuation.yield(.snapshot(shared.mirror.state.snapshot))
            shared.nextID += 1
            shared.subscribers[shared.nextID] = continuation
            return shared.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        let core = self.core
        continuation.onTermination = { _ in
            core.shared.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Checks one address against the kernel's routing truth and the link states held here.
    /// Never touches DNS and never waits: two system calls and a table lookup.
    /// `0.0.0.0` and `::` answer "is there general connectivity".
    public func check(address text: String) -> CheckResult {
        let target: AddressTarget
        switch AddressTarget.parse(text) {
        case let .failure(error): return .invalid(text, error.description)
        case let .success(parsed): target = parsed
        }
        var outputInterface: Int32?
        switch target.scope {
        case .none: break
        case let .index(index): outputInterface = index
        case let .name(name):
            guard let index = withState({ $0.linkIndex(named: name) }) else {
                return .invalid(text, "no interface named '\(name)' for the scope of '\(text)'")
            }
            outputInterface = index
        }
        if target.address.isUnspecified {
            return withState { $0.evaluate(lookup: .failed(errno: 0), for: target.address, target: text) }
        }
        let lookup = core.routes.withLock { routes -> RouteLookup in
            do throws(SystemError) {
                return try routes.lookup(target.address, outputInterface: outputInterface)
            } catch {
                return .failed(errno: error.errno)
            }
        }
        return withState { $0.evaluate(lookup: lookup, for: target.address, target: text) }
    }

    /// Checks an address at once, or a host name within `timeout`.
    /// (Host names: asynchronous DNS, being integrated; until then they answer dnsFailure.)
    public func check(_ target: String, timeout: Duration = .seconds(5)) async throws -> CheckResult {
        if AddressTarget.looksLikeAddress(target) { return check(address: target) }
        return CheckResult(target: target, reason: .dnsFailure, message: "host name checks are not available yet")
    }

    /// Stops watching; every update stream finishes. Idempotent.
    public func stop() {
        let first = core.shared.withLock { shared -> Bool in
            defer { shared.stopped = true }
            return !shared.stopped
        }
        guard first else { return }
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
    }

    final class Core: Sendable {
        struct Shared: ~Copyable {
            var mirror: KernelMirror
            var subscribers: [UInt64: AsyncStream<ReachabilityUpdate>.Continuation] = [:]
            var nextID: UInt64 = 0
            var stopped = false
        }
        let shared: Mutex<Shared>
        /// Route lookups have a socket of their own, so they never wait behind a dump.
        let routes: Mutex<RouteQuery>

        init(_ mirror: consuming sending KernelMirror, routes: consuming sending RouteQuery) {
            shared = Mutex(Shared(mirror: mirror))
            self.routes = Mutex(routes)
        }

        /// The monitor thread: waits for netlink or the resync timer, applies, publishes.
        func run(descriptor: Int32, wakeup: Int32) {
            var fds = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                let timeout = shared.withLock { shared -> Int32 in
                    guard let deadline = shared.mirror.resyncDeadline else { return -1 }
                    let remaining = ContinuousClock.now.duration(to: deadline)
                    return remaining <= .zero ? 0 : Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
                }
                let ready = poll(&fds, 2, timeout)
                if ready < 0 && errno != EINTR { break }
                if fds[1].revents != 0 { break }
                shared.withLock { shared in
                    let change = fds[0].revents != 0 ? shared.mirror.readAvailable() : shared.mirror.resyncIfDue()
                    _ = shared.mirror.takeIncidents()
                    if let change {
                        for subscriber in shared.subscribers.values { subscriber.yield(.change(change)) }
                    }
                }
            }
            let subscribers = shared.withLock { shared in
                defer { shared.subscribers.removeAll() }
                return Array(shared.subscribers.values)
            }
            for subscriber in subscribers { subscriber.finish() }
            close(wakeup)
        }
    }
}
