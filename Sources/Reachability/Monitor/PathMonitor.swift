/// Apple's NWPathMonitor for Linux, as an AsyncSequence: the current `Path` first, then each
/// time the path, restricted to the interface kinds asked for, changes; never twice the same.
///
/// ```swift
/// let monitor = try PathMonitor(prohibitedInterfaceTypes: [.cellular])
/// for await path in monitor where path.status == .satisfied { ... }
/// ```
/// Through reachd when it answers on the bus (a `WatchPath` object per iteration), following its
/// name: while reachd is away the path is derived in-process, and when it returns reachd answers
/// again; either way the same derivation (`Path(snapshot:restriction:)`), so the same paths.
/// Without reachd, or given a `ReachabilityMonitor`, in-process only: built on the monitor's
/// `updates()`, no thread or queue of its own, each iteration a subscription of its own that ends
/// with it. Several path monitors can share one monitor.
public struct PathMonitor: AsyncSequence, Sendable {
    public typealias Element = Path
    public typealias Failure = Never

    /// The in-process monitor the paths come from; nil when they come through reachd.
    public let monitor: ReachabilityMonitor?
    /// Where reachd is asked, and the in-process settings while it is away; nil: in-process only.
    let reachd: PathThroughReachd?
    public let restriction: Path.Restriction
    public var requiredInterfaceType: InterfaceKind? { restriction.requiredInterfaceType }
    public var prohibitedInterfaceTypes: Set<InterfaceKind> { restriction.prohibitedInterfaceTypes }
    /// Whether the paths come through reachd (it answered when this monitor was made).
    public var isThroughReachd: Bool { reachd != nil }

    /// A path monitor over `monitor`, in-process, that counts only interfaces of
    /// `requiredInterfaceType` (when given) and none of `prohibitedInterfaceTypes`.
    public init(
        monitor: ReachabilityMonitor, requiredInterfaceType: InterfaceKind? = nil,
        prohibitedInterfaceTypes: Set<InterfaceKind> = []
    ) {
        self.monitor = monitor
        reachd = nil
        restriction = Path.Restriction(requiredInterfaceType: requiredInterfaceType, prohibitedInterfaceTypes: prohibitedInterfaceTypes)
    }

    /// The same, through reachd when it answers on `bus` within `probeTimeout` (nil: never
    /// asked), else with a monitor of its own (opens the netlink sockets and syncs before
    /// returning). `configuration` is the in-process one, also while reachd is away.
    public init(
        requiredInterfaceType: InterfaceKind? = nil, prohibitedInterfaceTypes: Set<InterfaceKind> = [],
        configuration: CoreConfiguration = CoreConfiguration(), bus: BusConnection.Address? = .system,
        probeTimeout: Duration = .milliseconds(500)
    ) throws {
        let restriction = Path.Restriction(requiredInterfaceType: requiredInterfaceType, prohibitedInterfaceTypes: prohibitedInterfaceTypes)
        if let bus, (try? ReachdOrInProcess.connect(bus, probeTimeout: probeTimeout, callTimeout: probeTimeout)) != nil {
            self.init(reachdOn: bus, restriction: restriction, configuration: configuration)
        } else {
            try self.init(
                monitor: ReachabilityMonitor(configuration: configuration),
                requiredInterfaceType: requiredInterfaceType, prohibitedInterfaceTypes: prohibitedInterfaceTypes)
        }
    }

    /// Through the reachd on `bus`, without asking first whether it answers (the caller did):
    /// when it does not, or while it is away, in-process with `configuration`. With nil, reachd
    /// only: an iteration ends when reachd goes away or does not answer.
    public init(reachdOn bus: BusConnection.Address, restriction: Path.Restriction, configuration: CoreConfiguration? = CoreConfiguration()) {
        monitor = nil
        reachd = PathThroughReachd(bus: bus, configuration: configuration)
        self.restriction = restriction
    }

    /// The path now (NWPathMonitor.currentPath): reachd's when it answers, else in-process.
    public var currentPath: Path {
        if let monitor { return Path(snapshot: monitor.snapshot, restriction: restriction) }
        return reachd?.currentPath(restriction) ?? Path(status: .unsatisfied)
    }

    public func makeAsyncIterator() -> Iterator {
        if let monitor { return Iterator(updates: monitor.updates().makeAsyncIterator(), restriction: restriction) }
        return Iterator(paths: reachd!.paths(restriction).makeAsyncIterator())
    }

    /// Follows the monitor's snapshot and changes (or reachd's answers), and yields the
    /// restricted path when it differs from the last one yielded. Ends when the monitor stops.
    public struct Iterator: AsyncIteratorProtocol {
        var updates: AsyncStream<ReachabilityUpdate>.Iterator?
        var paths: AsyncStream<Path>.Iterator?
        let restriction: Path.Restriction
        var host = HostStatus()
        var interfaces: [Int32: InterfaceStatus] = [:]
        var last: Path?

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
            case let .snapshot(snapshot):
                host = snapshot.host
                interfaces = Dictionary(snapshot.interfaces.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
            case let .change(change):
                host = change.host
                for removed in change.removedInterfaces { interfaces[removed.index] = nil }
                for changed in change.changedInterfaces { interfaces[changed.index] = changed }
            }
            return Path(host: host, interfaces: interfaces, restriction: restriction)
        }
    }
}
