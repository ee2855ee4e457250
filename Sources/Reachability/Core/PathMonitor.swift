/// Apple's NWPathMonitor for Linux, as an AsyncSequence: the current `Path` first, then each
/// time the path, restricted to the interface kinds asked for, changes; never twice the same.
///
/// ```swift
/// let monitor = try PathMonitor(prohibitedInterfaceTypes: [.cellular])
/// for await path in monitor where path.status == .satisfied { ... }
/// ```
/// Built on a `ReachabilityMonitor`'s `updates()`: no thread or queue of its own, each iteration
/// a subscription of its own that ends with it. Several path monitors can share one monitor.
public struct PathMonitor: AsyncSequence, Sendable {
    public typealias Element = Path
    public typealias Failure = Never

    public let monitor: ReachabilityMonitor
    public let restriction: Path.Restriction
    public var requiredInterfaceType: InterfaceKind? { restriction.requiredInterfaceType }
    public var prohibitedInterfaceTypes: Set<InterfaceKind> { restriction.prohibitedInterfaceTypes }

    /// A path monitor over `monitor` that counts only interfaces of `requiredInterfaceType` (when
    /// given) and none of `prohibitedInterfaceTypes`.
    public init(
        monitor: ReachabilityMonitor, requiredInterfaceType: InterfaceKind? = nil,
        prohibitedInterfaceTypes: Set<InterfaceKind> = []
    ) {
        self.monitor = monitor
        restriction = Path.Restriction(requiredInterfaceType: requiredInterfaceType, prohibitedInterfaceTypes: prohibitedInterfaceTypes)
    }

    /// The same with a monitor of its own (opens the netlink sockets and syncs before returning).
    public init(
        requiredInterfaceType: InterfaceKind? = nil, prohibitedInterfaceTypes: Set<InterfaceKind> = [],
        configuration: CoreConfiguration = CoreConfiguration()
    ) throws {
        try self.init(
            monitor: ReachabilityMonitor(configuration: configuration),
            requiredInterfaceType: requiredInterfaceType, prohibitedInterfaceTypes: prohibitedInterfaceTypes)
    }

    /// The path now (NWPathMonitor.currentPath).
    public var currentPath: Path {
        let snapshot = monitor.snapshot
        return Path(host: snapshot.host, interfaces: Self.byIndex(snapshot.interfaces), restriction: restriction)
    }

    public func makeAsyncIterator() -> Iterator { Iterator(updates: monitor.updates().makeAsyncIterator(), restriction: restriction) }

    static func byIndex(_ interfaces: [InterfaceStatus]) -> [Int32: InterfaceStatus] {
        Dictionary(interfaces.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Follows the monitor's snapshot and changes, and yields the restricted path when it differs
    /// from the last one yielded. Ends when the monitor stops.
    public struct Iterator: AsyncIteratorProtocol {
        var updates: AsyncStream<ReachabilityUpdate>.Iterator
        let restriction: Path.Restriction
        var host = HostStatus()
        var interfaces: [Int32: InterfaceStatus] = [:]
        var last: Path?

        init(updates: AsyncStream<ReachabilityUpdate>.Iterator, restriction: Path.Restriction) {
            self.updates = updates
            self.restriction = restriction
        }

        public mutating func next() async -> Path? {
            while let update = await updates.next() {
                switch update {
                case let .snapshot(snapshot):
                    host = snapshot.host
                    interfaces = PathMonitor.byIndex(snapshot.interfaces)
                case let .change(change):
                    host = change.host
                    for removed in change.removedInterfaces { interfaces[removed.index] = nil }
                    for changed in change.changedInterfaces { interfaces[changed.index] = changed }
                }
                let path = Path(host: host, interfaces: interfaces, restriction: restriction)
                if path != last {
                    last = path
                    return path
                }
            }
            return nil
        }
    }
}
