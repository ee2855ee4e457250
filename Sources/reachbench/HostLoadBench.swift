import Reachability

#if canImport(Glibc)
import Glibc
#endif

/// Many concurrent D-Bus CheckHost calls against a DNS black hole, as issue 16 measured them:
/// how late past its deadline each answer reaches the caller, and how long a CheckAddress takes
/// meanwhile.
struct HostLoadMeasurement: Sendable {
    var concurrent: Int
    var deadlineMilliseconds: Int
    /// Answer arrival minus (send time + deadline), per call; negative values count as 0.
    var lateness: Summary
    /// reachd's own part: its `ElapsedUSec` detail (call taken to reply sent) minus the deadline.
    /// The difference to `lateness` is the time calls and replies spent queued in the client,
    /// dbus-daemon and the sockets.
    var reachdLateness: Summary
    /// Round trips of CheckAddress calls made every 5 ms while the checks were pending.
    var checkAddress: Summary
    /// Answers whose reason was dnsTimeout (all of them should be).
    var timedOut: Int
    /// reachd's CPU time (user + system) during the batch, in milliseconds.
    var cpuMilliseconds: Int
    /// Busy loops that held the CPUs meanwhile (`--cpu-hog`).
    var hogs: Int = 0
}

enum HostLoadBench {
    static func measure(_ network: ServiceNetwork, _ options: Options) throws -> [HostLoadMeasurement] {
        try network.startBlackHole()
        let service = try BusBench.startService(network, options, resolvConf: network.blackHoleResolvConf, tag: "hostload")
        defer { service.stop() }
        // Issue 9: deadlines must hold while other work saturates every core. The hogs are
        // plain shell busy loops at the default nice level, as a build or a batch job would be.
        var hogs: [ChildProcess] = []
        defer { for hog in hogs { _ = hog.stop(signal: SIGKILL) } }
        for _ in 0..<options.cpuHogs { hogs.append(try ChildProcess("/bin/sh", ["-c", "while :; do :; done"])) }
        if !hogs.isEmpty { sleepMilliseconds(1000) }
        var results: [HostLoadMeasurement] = []
        for (round, count) in options.hostLoadCounts.enumerated() {
            note("reachbench: host load: \(count) concurrent CheckHost, \(options.hostLoadDeadlineMilliseconds) ms deadline, black hole, \(hogs.count) CPU hogs")
            var result = try batch(service, count: count, deadline: options.hostLoadDeadlineMilliseconds, round: round)
            result.hogs = hogs.count
            results.append(result)
            guard service.daemon.isRunning else { throw service.failure("reachd ended during the host load") }
            sleepMilliseconds(500)
        }
        return results
    }

    /// Sends `count` CheckHost calls at once (distinct names, so no cache helps), then serves the
    /// replies as they come while a CheckAddress goes out every 5 ms.
    static func batch(_ service: BusBench.Service, count: Int, deadline: Int, round: Int) throws -> HostLoadMeasurement {
        let client = service.client
        final class Tally {
            var lateness: [UInt64] = []
            var reachdLateness: [UInt64] = []
            var timedOut = 0
            var pendingAddress: UInt64?
            var addressTimes: [UInt64] = []
        }
        let tally = Tally()
        let cpuBefore = cpuTime(service.daemon.pid)
        var slots: [BusSlot] = []
        slots.reserveCapacity(count)
        let deadlineNanoseconds = UInt64(deadline) * 1_000_000
        for i in 0..<count {
            let sent = monotonicNanoseconds()
            slots.append(try client.callAsync(
                destination: BusBench.busName, path: BusBench.objectPath, interface: BusBench.interface, member: "CheckHost",
                { message throws(BusError) in
                    try message.append("load\(round)-\(i).test")
                    try message.append(UInt32(deadline))
                }
            ) { result in
                let arrived = monotonicNanoseconds()
                tally.lateness.append(arrived > sent + deadlineNanoseconds ? arrived - sent - deadlineNanoseconds : 0)
                if case let .success(reply) = result {
                    _ = try? reply.readUInt32()
                    _ = try? reply.readString()
                    _ = try? reply.readStringArray()
                    if (try? reply.readString()) == "dnsTimeout" { tally.timedOut += 1 }
                    if let elapsed = try? elapsedNanoseconds(reply) {
                        tally.reachdLateness.append(elapsed > deadlineNanoseconds ? elapsed - deadlineNanoseconds : 0)
                    }
                }
            })
        }
        var addressSlot: BusSlot?
        var nextAddress = monotonicNanoseconds()
        let giveUp = monotonicNanoseconds() + deadlineNanoseconds + 30_000_000_000
        while tally.lateness.count < count {
            guard monotonicNanoseconds() < giveUp else { throw BenchError("host load: \(tally.lateness.count) of \(count) answered within 30 s past the deadline") }
            let now = monotonicNanoseconds()
            if tally.pendingAddress == nil, now >= nextAddress {
                tally.pendingAddress = now
                nextAddress = now + 5_000_000
                addressSlot = try client.callAsync(
                    destination: BusBench.busName, path: BusBench.objectPath, interface: BusBench.interface, member: "CheckAddress",
                    { message throws(BusError) in try message.append(ServiceNetwork.answering) }
                ) { _ in
                    if let start = tally.pendingAddress { tally.addressTimes.append(monotonicNanoseconds() - start) }
                    tally.pendingAddress = nil
                }
            }
            while try client.process() {}
            try client.wait(timeout: .milliseconds(2))
        }
        withExtendedLifetime((slots, addressSlot)) {}
        return HostLoadMeasurement(
            concurrent: count, deadlineMilliseconds: deadline, lateness: Summary(tally.lateness),
            reachdLateness: Summary(tally.reachdLateness.isEmpty ? [0] : tally.reachdLateness),
            checkAddress: Summary(tally.addressTimes.isEmpty ? [0] : tally.addressTimes), timedOut: tally.timedOut,
            cpuMilliseconds: Int((cpuTime(service.daemon.pid) - cpuBefore) / 1_000_000))
    }

    /// The `ElapsedUSec` detail of a CheckHost reply (read up to its details), in nanoseconds.
    static func elapsedNanoseconds(_ reply: BusMessage) throws(BusError) -> UInt64? {
        guard try reply.enter("a", "{sv}") else { return nil }
        var found: UInt64?
        while try reply.enter("e", "sv") {
            if try reply.readString() == "ElapsedUSec", try reply.enter("v", "t") {
                found = try reply.readUInt64() * 1000
                try reply.exit()
            } else {
                try reply.skip("v")
            }
            try reply.exit()
        }
        try reply.exit()
        return found
    }

    /// utime + stime of `pid` in nanoseconds (/proc/PID/stat, clock ticks).
    static func cpuTime(_ pid: pid_t) -> UInt64 {
        guard let stat = readSmallFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based) -> 11 and 12 here.
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return 0 }
        let ticks = UInt64(sysconf(Int32(_SC_CLK_TCK)))
        return (user + system) * 1_000_000_000 / max(1, ticks)
    }
}
