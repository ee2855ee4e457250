import Reachability

/// The pure Engine in-process: `NetworkState` filled with synthetic links, then one link event
/// at a time, as the monitor applies them. No kernel, no threads, no I/O.
struct EngineMeasurement: Sendable {
    /// Links in the state: lo, the uplink `eth0` (default route), and `links - 2` others.
    var links: Int
    /// One `apply` of the whole synthetic dump: the Engine's share of an initial sync.
    var fill: UInt64
    /// RssAnon growth while filling (KiB): what the state costs in memory.
    var stateKiB: Int
    /// Carrier on/off of the default-route link: every event changes the host status.
    var uplink: Summary
    /// Carrier on/off of a link without a default route: only that interface changes.
    var leaf: Summary
    /// One scrape's work on reachd's loop: the snapshot, then the Prometheus exposition rendered
    /// from it (`MetricsExposition.render`), as /metrics, GetMetrics and the textfile do.
    var metrics: Summary
}

enum EngineBench {
    private static let flagsReady: LinkFlags = [.up, .running, .lowerUp]
    private static let uplinkIndex: Int32 = 2

    /// The events of a dump of `links` links (at least 3), like a host with many interfaces:
    /// every link has an IPv4 address with its connected route and an IPv6 link-local address
    /// with its route; `eth0` also has the default route.
    static func dump(links: Int) -> [NetworkEvent] {
        var events: [NetworkEvent] = []
        events.reserveCapacity(links * 5 + 8)
        events.append(.link(
            Link(index: 1, name: "lo", flags: flagsReady.union(.loopback), hardwareType: Link.hardwareLoopback),
            device: DeviceFacts()))
        events.append(.address(Address(
            interfaceIndex: 1, prefix: IPPrefix(.v4(0x7F00_0001), length: 8), scope: Address.scopeHost)))
        for index in Int32(2)...Int32(max(3, links)) {
            let name = index == uplinkIndex ? "eth0" : "en\(index)"
            events.append(.link(Link(index: index, name: name, flags: flagsReady, operState: .up), device: DeviceFacts()))
            // 192.0.2.2/24 on eth0; 10.x.y.z/30 on the others.
            let (address, length): (UInt32, UInt8) =
                index == uplinkIndex ? (0xC000_0202, 24) : (0x0A00_0000 | UInt32(index) << 2 | 1, 30)
            let network = address & ~(UInt32.max >> UInt32(length))
            events.append(.address(Address(interfaceIndex: index, prefix: IPPrefix(.v4(address), length: length))))
            events.append(.route(
                Route(destination: IPPrefix(.v4(network), length: length), nextHops: [NextHop(interfaceIndex: index)]),
                replace: false))
            events.append(.address(Address(
                interfaceIndex: index, prefix: IPPrefix(.v6(0xFE80_0000_0000_0000, UInt64(index)), length: 64),
                scope: Address.scopeLink)))
            events.append(.route(
                Route(destination: IPPrefix(.v6(0xFE80_0000_0000_0000, 0), length: 64), metric: 256,
                    nextHops: [NextHop(interfaceIndex: index)]),
                replace: false))
        }
        events.append(.route(
            Route(destination: IPPrefix(.anyV4, length: 0), metric: 100,
                nextHops: [NextHop(gateway: .v4(0xC000_0201), interfaceIndex: uplinkIndex)]),
            replace: false))
        return events
    }

    /// The RTM_NEWLINK a carrier change produces: flags and operstate, sysfs facts already known.
    static func carrier(_ index: Int32, on: Bool) -> [NetworkEvent] {
        let name = index == uplinkIndex ? "eth0" : "en\(index)"
        let link = on
            ? Link(index: index, name: name, flags: flagsReady, operState: .up)
            : Link(index: index, name: name, flags: .up, operState: .lowerLayerDown)
        return [.link(link, device: nil)]
    }

    static func measure(links: Int, iterations: Int) throws(BenchError) -> EngineMeasurement {
        let events = dump(links: links)
        trimHeap()
        let before = MemoryUsage.current()
        var state = NetworkState()
        let start = monotonicNanoseconds()
        _ = state.apply(events)
        let fill = monotonicNanoseconds() - start
        let after = MemoryUsage.current()
        guard state.linkCount == max(3, links), state.host.flags.contains(.reachable), state.host.primaryInterface == "eth0" else {
            throw BenchError("engine: synthetic state is not online via eth0 (\(state.host))")
        }
        let uplink = try flap(&state, index: uplinkIndex, iterations: iterations, hostChanges: true)
        let leaf = try flap(&state, index: Int32(max(3, links) / 2 + 1), iterations: iterations, hostChanges: false)
        return EngineMeasurement(
            links: max(3, links), fill: fill, stateKiB: after.anonymousKiB - before.anonymousKiB,
            uplink: uplink, leaf: leaf, metrics: try render(state, samples: max(20, iterations / 20)))
    }

    /// `samples` exposition renders of `state` (a tenth as many again to warm up).
    private static func render(_ state: NetworkState, samples count: Int) throws(BenchError) -> Summary {
        var samples = [UInt64](repeating: 0, count: count)
        var bytes = 0
        for i in 0..<(count / 10 + count) {
            let start = monotonicNanoseconds()
            let text = MetricsExposition.render(MetricsSample(snapshot: state.snapshot, mirror: MirrorCounters(), startTime: 0))
            let elapsed = monotonicNanoseconds() - start
            bytes = text.utf8.count
            if i >= count / 10 { samples[i - count / 10] = elapsed }
        }
        guard bytes > 1000 else { throw BenchError("engine: the exposition is only \(bytes) bytes") }
        return Summary(samples)
    }

    /// Alternates carrier off/on for `index`; one sample per `apply`.
    private static func flap(
        _ state: inout NetworkState, index: Int32, iterations: Int, hostChanges: Bool
    ) throws(BenchError) -> Summary {
        let off = carrier(index, on: false)
        let on = carrier(index, on: true)
        let warmup = max(100, iterations / 10)
        var samples = [UInt64](repeating: 0, count: max(2, iterations))
        var unexpected = 0
        for i in 0..<(warmup + samples.count) {
            let batch = i & 1 == 0 ? off : on
            let start = monotonicNanoseconds()
            let change = state.apply(batch)
            let elapsed = monotonicNanoseconds() - start
            // Every event is a real change; the host changes with the uplink only.
            if change?.hostChanged != hostChanges { unexpected += 1 }
            if i >= warmup { samples[i - warmup] = elapsed }
        }
        guard unexpected == 0 else {
            throw BenchError("engine: \(unexpected) carrier events on link \(index) did not give the expected change")
        }
        return Summary(samples)
    }

    /// What one clock read costs (median of back-to-back reads): included in every engine sample.
    static func clockOverhead() -> UInt64 {
        var samples = [UInt64](repeating: 0, count: 10_001)
        for i in samples.indices {
            let a = monotonicNanoseconds()
            samples[i] = monotonicNanoseconds() - a
        }
        return Summary(samples).median
    }
}
