/// Apple's NWPathMonitor for Linux: the current `Path` first, then each time the path, restricted
/// to the interface kinds asked for, changes; never twice the same. Used as Apple's, with a
/// handler and a queue (`PathMonitor+Handler.swift`), or as an AsyncSequence (Apple's too, since
/// iOS 17):
///
/// ```swift
/// let monitor = PathMonitor(prohibitedInterfaceTypes: [.cellular])
/// monitor.pathUpdateHandler = { path in print(path.status) }
/// monitor.start(queue: DispatchQueue(label: "paths"))
/// // or: for await path in monitor where path.status == .satisfied { ... }
/// ```
/// Making one never waits: it only keeps what it was given. Whether reachd answers is found out
/// after `start(queue:)` (or as an iteration starts) on a thread of the monitor's own: through
/// reachd when it answers on the bus (a `WatchPath` object), following its name, derived
/// in-process while reachd is away or does not answer, and through reachd again when it returns;
/// either way the same derivation (`Path(snapshot:restriction:)`), so the same paths. Without a
/// bus, or given a `ReachabilityMonitor`, in-process only. Each iteration (and `start(queue:)`)
/// is a subscription of its own that ends with it; several path monitors can share one monitor.
public final class PathMonitor: AsyncSequence, Sendable {
    public typealias Element = Path
    public typealias Failure = Never

    /// Where an iteration's paths come from.
    enum Source: Sendable {
        /// A monitor the caller made and shares (and stops).
        case monitor(ReachabilityMonitor)
        /// reachd, and in-process while it is away when its settings are given.
        case reachd(PathThroughReachd)
        /// A monitor of the iteration's own, made as it starts and stopped as it ends.
        case inProcess(CoreConfiguration)
    }

    let source: Source
    public let restriction: Path.Restriction
    /// The handler, its queue and the paths delivered to it.
    let delivery = PathDelivery()

    public var requiredInterfaceType: InterfaceKind? { restriction.requiredInterfaceType }
    public var prohibitedInterfaceTypes: Set<InterfaceKind> { restriction.prohibitedInterfaceTypes }
    /// The in-process monitor given to `init(monitor:...)`; nil otherwise.
    public var monitor: ReachabilityMonitor? {
        if case let .monitor(monitor) = source { return monitor }
        return nil
    }
    /// Whether reachd is asked first (a bus was given): then the paths are reachd's while it
    /// answers, and in-process only while it does not.
    public var isThroughReachd: Bool {
        if case .reachd = source { return true }
        return false
    }

    /// A path monitor over `monitor`, in-process, that counts only interfaces of
    /// `requiredInterfaceType` (when given) and none of `prohibitedInterfaceTypes`.
    public init(
        monitor: ReachabilityMonitor, requiredInterfaceType: InterfaceKind? = nil,
        prohibitedInterfaceTypes: Set<InterfaceKind> = []
    ) {
        source = .monitor(monitor)
        restriction = Path.Restriction(requiredInterfaceType: requiredInterfaceType, prohibitedInterfaceTypes: prohibitedInterfaceTypes)
    }

    /// NWPathMonitor's initializers (`PathMonitor()`, `PathMonitor(requiredInterfaceType: .wifi)`,
    /// `PathMonitor(prohibitedInterfaceTypes: [.cellular])`): through the reachd on `bus` while it
    /// answers, in-process with `configuration` while it does not; with a nil `bus`, in-process
    /// only. Returns at once: nothing is asked, opened or read before `start(queue:)`, an
    /// iteration or `currentPath`.
    public convenience init(
        requiredInterfaceType: InterfaceKind? = nil, prohibitedInterfaceTypes: Set<InterfaceKind> = [], bus: BusAddress? = .system
    ) {
        self.init(
            requiredInterfaceType: requiredInterfaceType, prohibitedInterfaceTypes: prohibitedInterfaceTypes,
            configuration: CoreConfiguration(), bus: bus)
    }

    /// `init(requiredInterfaceType:prohibitedInterfaceTypes:bus:)` with reachd's settings for the
    /// in-process path.
    package init(
        requiredInterfaceType: InterfaceKind? = nil, prohibitedInterfaceTypes: Set<InterfaceKind> = [],
        configuration: CoreConfiguration, bus: BusAddress?
    ) {
        restriction = Path.Restriction(requiredInterfaceType: requiredInterfaceType, prohibitedInterfaceTypes: prohibitedInterfaceTypes)
        source = bus.map { .reachd(PathThroughReachd(bus: $0, configuration: configuration)) } ?? .inProcess(configuration)
    }

    /// Through the reachd on `bus`: when it does not answer, or while it is away, in-process with
    /// `configuration`. With nil, reachd only: an iteration ends when reachd goes away or does
    /// not answer.
    package init(reachdOn bus: BusAddress, restriction: Path.Restriction, configuration: CoreConfiguration? = CoreConfiguration()) {
        source = .reachd(PathThroughReachd(bus: bus, configuration: configuration))
        self.restriction = restriction
    }

    /// Dropping the monitor cancels it, as Apple's: keep it while its handler should be called.
    deinit { delivery.cancel() }

    /// The path asked for now, for `currentPath` before `start(queue:)`: the given monitor's at
    /// once; reachd's answer (a call, bounded by `PathThroughReachd.callTimeout`), else derived
    /// in-process from a monitor made and stopped for it.
    func pathNow() -> Path {
        switch source {
        case let .monitor(monitor): Path(snapshot: monitor.snapshot, restriction: restriction)
        case let .reachd(reachd): reachd.currentPath(restriction)
        case let .inProcess(configuration): PathThroughReachd.inProcessPath(restriction, configuration: configuration)
        }
    }

    /// The paths as a value of their own, so that a task delivering them to the handler holds
    /// neither the monitor (whose release cancels it) nor a connection before it runs.
    var paths: Paths { Paths(source: source, restriction: restriction) }

    public func makeAsyncIterator() -> Iterator { paths.makeAsyncIterator() }

    struct Paths: AsyncSequence, Sendable {
        let source: Source
        let restriction: Path.Restriction
        /// Told of each host change along the way (`hostChangeHandler`); nil: nobody asked.
        var hostChanges: (@Sendable (HostChange) -> Void)? = nil

        func makeAsyncIterator() -> Iterator {
            switch source {
            case let .monitor(monitor):
                var iterator = Iterator(updates: monitor.updates().makeAsyncIterator(), restriction: restriction)
                iterator.hostChanges = hostChanges
                return iterator
            case let .reachd(reachd):
                return Iterator(paths: reachd.paths(restriction, hostChanges: hostChanges).makeAsyncIterator())
            case let .inProcess(configuration):
                // No kernel to watch (netlink refused): the paths end at once, as the monitor's would.
                guard let monitor = try? ReachabilityMonitor(configuration: configuration) else {
                    return Iterator(paths: AsyncStream { $0.finish() }.makeAsyncIterator())
                }
                var iterator = Iterator(updates: monitor.updates().makeAsyncIterator(), restriction: restriction)
                iterator.owned = monitor
                iterator.hostChanges = hostChanges
                return iterator
            }
        }
    }

    /// Follows the monitor's snapshot and changes (or reachd's answers), and yields the
    /// restricted path when it differs from the last one yielded. Ends when the monitor stops.
    public struct Iterator: AsyncIteratorProtocol {
        var updates: AsyncStream<ReachabilityUpdate>.Iterator?
        var paths: AsyncStream<Path>.Iterator?
        /// A monitor of this iteration's own (`.inProcess`): released, so stopped, with it.
        var owned: ReachabilityMonitor?
        let restriction: Path.Restriction
        /// The picture the paths are derived from, kept current by applying each change.
        var snapshot = ReachabilitySnapshot(generation: 0, host: HostStatus(), interfaces: [])
        var last: Path?
        var hostChanges: (@Sendable (HostChange) -> Void)?

        init(updates: AsyncStream<ReachabilityUpdate>.Iterator, restriction: Path.Restriction) {
            self.updates = updates
            self.restriction = restriction
        }

        init(paths: AsyncStream<Path>.Iterator) {
            self.paths = paths
            restriction = Path.Restriction()
        }

        public mutating func next() async -> Path? {
            while let path = await nextPath() {
                if path != last {
                    last = path
                    return path
                }
            }
            return nil
        }

        private mutating func nextPath() async -> Path? {
            if paths != nil { return await paths!.next() }
            guard let update = await updates?.next() else { return nil }
            switch update {
            case let .snapshot(first):
                snapshot = first
            case let .change(change):
                if let description = change.hostChange { hostChanges?(description) }
                snapshot = snapshot.applying(change)
            }
            return Path(snapshot: snapshot, restriction: restriction)
        }
    }
}
