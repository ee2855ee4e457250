import Reachability
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Initial sync (dump of links, addresses, routes into the Engine) and the memory it costs.
struct SyncMeasurement: Sendable {
    /// veth pairs besides the uplink pair.
    var pairs: Int
    /// Links in the namespace: lo, the uplink pair, two per extra pair.
    var links: Int
    /// Whether the extra pairs have IPv6 (a link-local address and an fe80::/64 route each).
    var ipv6: Bool
    /// "" or "R rules, N routes" (the policy round).
    var policy: String
    /// Interfaces and addresses the monitor's first snapshot holds (a check that it saw them all).
    var interfaces: Int
    var addresses: Int
    /// Time of `ReachabilityMonitor(configuration:)`, one sample per repetition.
    var sync: Summary
    /// Before the first monitor (after malloc_trim), and with it alive.
    var before: MemoryUsage
    var alive: MemoryUsage
}

/// Kernel change -> notification latency for veth peer flaps.
struct FlapMeasurement: Sendable {
    enum Path: String, Sendable {
        /// A bare netlink socket in the same thread that made the change: the kernel's floor.
        case floor = "netlink floor"
        /// `ReachabilityMonitor.updates()` delivering the host change to an awaiting task.
        case monitor = "monitor updates()"
    }
    var pairs: Int
    var links: Int
    var ipv6: Bool
    /// "" or "R rules, N routes" (the policy round).
    var policy: String
    var path: Path
    /// Carrier loss (peer set down): host reachable -> connectionRequired.
    var down: Summary
    /// Carrier back (peer set up): host connectionRequired -> reachable.
    var up: Summary
    var all: Summary
    /// Changes the stream delivered per transition, x100 (monitor path only).
    var updatesPerTransitionTimes100: Int?
}

/// The kernel side of the bench: one namespace with an uplink veth pair (`up0`, address,
/// default route) that gets flapped, and a growing number of other veth pairs.
final class KernelBench {
    let namespace: BenchNamespace
    private let flapper: RawNetlink
    /// `up0`: carries the default route; loses carrier when its peer goes down.
    private let uplink: Int32
    /// `up0p`: the peer whose admin state the bench flips.
    private let peer: Int32
    private(set) var pairs = 0
    /// The extra pairs are created without IPv6; `enableIPv6OnPairs()` turns it on.
    private(set) var pairsHaveIPv6 = false

    var links: Int { 2 * pairs + 3 }
    /// What `installPolicy` added, for the report.
    private(set) var policyLabel = ""

    init(mountSysfs: Bool) throws(BenchError) {
        namespace = try BenchNamespace()
        if mountSysfs && !namespace.mountSysfs() {
            note("reachbench: could not mount a sysfs for the namespace; the monitor reads no sysfs facts")
        }
        try namespace.batch([
            "link add up0 type veth peer name up0p",
            "addr add 192.0.2.2/24 dev up0",
            "link set up0p up",
            "link set up0 up",
            "route add default via 192.0.2.1 dev up0",
        ])
        uplink = try namespace.index(of: "up0")
        peer = try namespace.index(of: "up0p")
        flapper = try RawNetlink(in: namespace, groups: 0)
        // The uplink keeps IPv6 (a link-local address); the extra pairs start without it.
        try namespace.writeSysctls(["/proc/sys/net/ipv6/conf/default/disable_ipv6": "1"])
    }

    var configuration: CoreConfiguration {
        var configuration = CoreConfiguration()
        configuration.namespacePath = namespace.path
        configuration.sysfsRoot = namespace.sysfsRoot ?? "/nonexistent-reachbench-sysfs"
        return configuration
    }

    /// Adds veth pairs `vb<i>a`/`vb<i>b` until there are `total`, each with one IPv4 address on
    /// its `a` end (a /30 of its own, so also a connected route) and both ends up (so each end
    /// also has an IPv6 link-local address and route). Waits until the namespace is quiet.
    func grow(to total: Int) throws(BenchError) {
        guard total > pairs else { return }
        precondition(!pairsHaveIPv6, "pairs are added before IPv6 is enabled on them")
        let range = pairs..<total
        let listener = try RawNetlink(in: namespace, groups: RawNetlink.groupsAll)
        var lines: [String] = []
        lines.reserveCapacity(range.count * 4)
        for i in range { lines.append("link add vb\(i)a group \(Self.group(ofPair: i)) type veth peer name vb\(i)b") }
        for i in range {
            lines.append("addr add 10.\(i >> 14 & 255).\(i >> 6 & 255).\((i & 63) * 4 + 1)/30 dev vb\(i)a")
        }
        for i in range {
            lines.append("link set vb\(i)b up")
            lines.append("link set vb\(i)a up")
        }
        let start = monotonicNanoseconds()
        try namespace.batch(lines)
        if !listener.waitForQuiet(quietMilliseconds: 300, limitMilliseconds: 20_000) {
            note("reachbench: the namespace did not go quiet within 20 s; measuring anyway")
        }
        pairs = total
        note("reachbench: \(pairs) veth pairs (\(links) links) ready in \(Format.milliseconds(monotonicNanoseconds() - start)) ms")
    }

    /// Enables IPv6 on every extra pair end: each gets a link-local address and an fe80::/64
    /// route. All those routes share one prefix, which the kernel keeps in one FIB node: a carrier
    /// change then walks them all (`fib6_ifdown`, `__find_rr_leaf`), so the kernel's own cost grows
    /// with the number of IPv6 links.
    func enableIPv6OnPairs() throws(BenchError) {
        guard !pairsHaveIPv6 else { return }
        let listener = try RawNetlink(in: namespace, groups: RawNetlink.groupsAll)
        let start = monotonicNanoseconds()
        var sysctls = ["/proc/sys/net/ipv6/conf/default/disable_ipv6": "0"]
        for i in 0..<pairs {
            sysctls["/proc/sys/net/ipv6/conf/vb\(i)a/disable_ipv6"] = "0"
            sysctls["/proc/sys/net/ipv6/conf/vb\(i)b/disable_ipv6"] = "0"
        }
        try namespace.writeSysctls(sysctls)
        if !listener.waitForQuiet(quietMilliseconds: 300, limitMilliseconds: 20_000) {
            note("reachbench: the namespace did not go quiet within 20 s; measuring anyway")
        }
        pairsHaveIPv6 = true
        note("reachbench: IPv6 on \(2 * pairs) pair ends in \(Format.milliseconds(monotonicNanoseconds() - start)) ms")
    }

    /// Adds `rules` policy rules ahead of the main table's (none matches the flapped path or the
    /// host's internet destination, so every route lookup walks them all) and `routes` /32 routes
    /// spread over 100 tables. The kernel answers reachd's path lookups through all of them.
    func installPolicy(rules: Int, routes: Int) throws(BenchError) {
        guard rules > 0 || routes > 0 else { return }
        let listener = try RawNetlink(in: namespace, groups: RawNetlink.groupsAll)
        let start = monotonicNanoseconds()
        var lines: [String] = []
        for i in 0..<rules { lines.append("rule add pref \(1000 + i) to 172.\(16 + i / 256 % 16).\(i % 256).0/24 table \(100 + i % 100)") }
        for i in 0..<routes { lines.append("route add 172.\(16 + i >> 16 & 15).\(i >> 8 & 255).\(i & 255)/32 via 192.0.2.1 dev up0 table \(100 + i % 100)") }
        try namespace.batch(lines)
        if !listener.waitForQuiet(quietMilliseconds: 300, limitMilliseconds: 20_000) {
            note("reachbench: the namespace did not go quiet within 20 s; measuring anyway")
        }
        policyLabel = "\(rules) rules, \(routes) routes"
        note("reachbench: \(policyLabel) added in \(Format.milliseconds(monotonicNanoseconds() - start)) ms")
    }

    /// Deletes the extra pairs a link group (100 pairs) at a time. Deleting the namespace with
    /// thousands of links in it makes the kernel hold the global RTNL lock for seconds in one go
    /// (every other netlink user on the machine stalls meanwhile); one link at a time takes tens
    /// of milliseconds per link. A group of 100 holds the lock for about 50 ms.
    func removePairs() throws(BenchError) {
        guard pairs > 0 else { return }
        let start = monotonicNanoseconds()
        let groups = Set((0..<pairs).map(Self.group(ofPair:))).sorted()
        try namespace.batch(groups.map { "link del group \($0)" })
        note("reachbench: \(pairs) pairs deleted in \(Format.milliseconds(monotonicNanoseconds() - start)) ms")
        pairs = 0
    }

    /// The link group (`ip link ... group N`) of pair `i`'s `a` end: 100 pairs a group, from 1000
    /// (group 0, where lo and the uplink are, is never deleted).
    private static func group(ofPair i: Int) -> Int { 1000 + i / 100 }

    // MARK: initial sync

    func measureSync(repetitions: Int) throws -> SyncMeasurement {
        trimHeap()
        let before = MemoryUsage.current()
        var alive = before
        var interfaces = 0
        var addresses = 0
        var samples: [UInt64] = []
        for repetition in 0..<max(1, repetitions) {
            let configuration = self.configuration
            let start = monotonicNanoseconds()
            let monitor = try ReachabilityMonitor(configuration: configuration)
            samples.append(monotonicNanoseconds() - start)
            if repetition == 0 {
                alive = MemoryUsage.current()
                let snapshot = monitor.snapshot
                interfaces = snapshot.interfaces.count
                addresses = snapshot.interfaces.reduce(0) { $0 + $1.addresses.count }
            }
            monitor.stop()
        }
        return SyncMeasurement(
            pairs: pairs, links: links, ipv6: pairsHaveIPv6, policy: policyLabel, interfaces: interfaces, addresses: addresses,
            sync: Summary(samples), before: before, alive: alive)
    }

    // MARK: flaps

    /// The floor: the same flap, observed by a bare netlink socket that waits for up0's
    /// RTM_NEWLINK with the new operational state. No library code, no thread hop.
    func measureFloor(flaps: Int, warmup: Int) throws(BenchError) -> FlapMeasurement {
        let listener = try RawNetlink(in: namespace, groups: RawNetlink.groupLink)
        var down: [UInt64] = []
        var up: [UInt64] = []
        for flap in 0..<(warmup + flaps) {
            for goingUp in [false, true] {
                listener.drain()
                let start = monotonicNanoseconds()
                try flapper.setAdminState(index: peer, up: goingUp)
                guard try listener.waitForOperState(index: uplink, up: goingUp, deadline: start + 3_000_000_000) else {
                    throw BenchError("netlink floor: no operstate change for up0 within 3 s")
                }
                let elapsed = monotonicNanoseconds() - start
                try flapper.readAck()
                if flap >= warmup {
                    if goingUp { up.append(elapsed) } else { down.append(elapsed) }
                }
            }
        }
        return FlapMeasurement(
            pairs: pairs, links: links, ipv6: pairsHaveIPv6, policy: policyLabel, path: .floor,
            down: Summary(down), up: Summary(up), all: Summary(down + up), updatesPerTransitionTimes100: nil)
    }

    /// From just before the RTM_NEWLINK that flips the peer to the moment an awaiting task gets
    /// the change whose host flags flipped (reachable <-> connectionRequired) from `updates()`.
    func measureMonitor(flaps: Int, warmup: Int) async throws -> FlapMeasurement {
        let monitor = try ReachabilityMonitor(configuration: configuration)
        defer { monitor.stop() }
        var updates = monitor.updates().makeAsyncIterator()
        guard case .snapshot(let first)? = await updates.next() else {
            throw BenchError("monitor: no initial snapshot")
        }
        guard first.host.flags.contains(.reachable), first.host.primaryInterface == "up0" else {
            throw BenchError("monitor: expected online via up0 at start, got \(first.host)")
        }

        // A stalled sample must not hang the run: after 3 s without progress the watchdog stops
        // the monitor, which ends the stream.
        let progress = Progress()
        progress.mark()
        let watchdog = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                if progress.stalled(afterNanoseconds: 3_000_000_000) {
                    monitor.stop()
                    return
                }
            }
        }
        defer { watchdog.cancel() }

        var down: [UInt64] = []
        var up: [UInt64] = []
        var changes = 0
        for flap in 0..<(warmup + flaps) {
            for goingUp in [false, true] {
                let expected: ReachabilityFlags = goingUp ? .reachable : .connectionRequired
                let start = monotonicNanoseconds()
                try flapper.setAdminState(index: peer, up: goingUp)
                var matched = false
                while !matched {
                    guard let update = await updates.next() else {
                        throw BenchError("monitor: no host change to \(expected) within 3 s (flap \(flap))")
                    }
                    guard case .change(let change) = update else { continue }
                    if flap >= warmup { changes += 1 }
                    matched = change.hostChanged && change.host.flags.contains(expected)
                }
                let elapsed = monotonicNanoseconds() - start
                progress.mark()
                try flapper.readAck()
                if flap >= warmup {
                    if goingUp { up.append(elapsed) } else { down.append(elapsed) }
                }
            }
        }
        return FlapMeasurement(
            pairs: pairs, links: links, ipv6: pairsHaveIPv6, policy: policyLabel, path: .monitor,
            down: Summary(down), up: Summary(up), all: Summary(down + up),
            updatesPerTransitionTimes100: changes * 100 / max(1, down.count + up.count))
    }

    /// The last time a sample completed, for the watchdog.
    private final class Progress: Sendable {
        private let last = Atomic<UInt64>(0)
        func mark() { last.store(monotonicNanoseconds(), ordering: .relaxed) }
        func stalled(afterNanoseconds limit: UInt64) -> Bool {
            monotonicNanoseconds() &- last.load(ordering: .relaxed) > limit
        }
    }
}
