/// The loop-agnostic core of reachability: a kernel mirror, route lookups and address checks,
/// for whoever owns the event loop. `ReachabilityMonitor` drives it from a thread of its own;
/// reachd drives it from sd-event. Single-threaded: every call from the owner's thread.
public final class NetworkObserver {
    private let mirror: KernelMirror
    private var routes: RouteQuery { mirror.routes }

    /// Opens the netlink sockets and completes the first sync.
    public init(configuration: MonitorConfiguration) throws(SystemError) {
        mirror = try KernelMirror(options: configuration.mirrorOptions)
        try mirror.synchronize()
        _ = mirror.takeIncidents()
    }

    public var state: NetworkState { mirror.state }
    public var snapshot: ReachabilitySnapshot { mirror.state.snapshot }

    /// The monitor socket, for the loop to watch for input.
    public var netlinkDescriptor: Int32 { mirror.monitorDescriptor }

    /// Applies what the kernel queued (one batch, at most one change). Never blocks.
    public func readAvailable() -> ReachabilityChange? { mirror.readAvailable() }

    /// When a resync after an overrun may run; the loop arms a timer for it.
    public var resyncDeadline: ContinuousClock.Instant? { mirror.resyncDeadline }

    public func resyncIfDue() -> ReachabilityChange? { mirror.resyncIfDue() }

    public var resyncCount: Int { mirror.resyncCount }
    /// The monitor socket's receive buffer as the kernel granted it, in bytes.
    public var netlinkReceiveBufferBytes: Int { mirror.receiveBufferBytes }

    /// Receive-buffer overruns (ENOBUFS) seen since start.
    public var overrunCount: Int { mirror.overrunCount }

    public var counters: MirrorCounters { MirrorCounters(overruns: UInt64(overrunCount), resyncs: UInt64(resyncCount)) }

    /// What went wrong with netlink input since the last call, as log lines.
    public func takeIncidents() -> [String] {
        mirror.takeIncidents().map { incident in
            switch incident {
            case .overrun: "netlink receive buffer overrun (ENOBUFS): state may be stale, resyncing"
            case .truncatedDatagram: "netlink datagram truncated: resyncing"
            case let .malformed(error): "ignoring malformed netlink message: \(error); resyncing"
            case .foreignSender: "ignoring a netlink message not sent by the kernel"
            case .resynced: "resynced from a fresh dump"
            case let .resyncFailed(error): "resync failed: \(error); will retry"
            }
        }
    }

    /// The connectivity probe's verdict joins the host's answer: a change when it differs.
    public func record(connectivity: ConnectivityStatus) -> ReachabilityChange? {
        mirror.record(connectivity: connectivity)
    }

    /// The probe's verdict on one uplink other than the primary (`ValidatedInterfaces`).
    public func record(uplink index: Int32, connectivity: Connectivity) -> ReachabilityChange? {
        mirror.record(uplink: index, connectivity: connectivity)
    }

    /// New interface rules and priorities (a configuration reload).
    public func reclassify(with classifier: Classifier) -> ReachabilityChange? {
        mirror.reclassify(with: classifier)
    }

    /// Checks one address: the kernel's route for it (RTM_GETROUTE) and the link states.
    /// Never touches DNS and never waits. `0.0.0.0` and `::` ask for general connectivity.
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
            guard let index = state.linkIndex(named: name) else {
                return .invalid(text, "no interface named '\(name)' for the scope of '\(text)'")
            }
            outputInterface = index
        }
        return evaluate(target.address, outputInterface: outputInterface, target: text)
    }

    /// Checks each address of a host and combines the verdicts: reachable when any address is.
    public func evaluate(addresses: [IPAddress], target: String) -> CheckResult {
        let results = addresses.map { evaluate($0, outputInterface: nil, target: target) }
        return .combining(results, target: target, addresses: addresses)
    }

    private func evaluate(_ address: IPAddress, outputInterface: Int32?, target: String) -> CheckResult {
        if address.isUnspecified {
            return state.evaluate(lookup: .failed(errno: 0), for: address, target: target)
        }
        let lookup: RouteLookup
        do {
            lookup = try routes.lookup(address, outputInterface: outputInterface)
        } catch {
            lookup = .failed(errno: error.errno)
        }
        return state.evaluate(lookup: lookup, for: address, target: target)
    }
}
