import Reachability

#if canImport(Glibc)
import Glibc
#endif

/// One storm of concurrent CheckHost calls through D-Bus against the DNS black hole.
struct BusHostStorm: Sendable {
    var checks: Int
    var deadlineMilliseconds: Int
    /// Reply received minus (call sent + deadline), for the replies that came at or after it.
    var lateness: Summary
    /// Replies that came before the deadline (there should be none: nothing answers).
    var early = 0
    /// Reasons in the replies, e.g. "dnsTimeout": 1000.
    var reasons: [String: Int] = [:]
    /// Synchronous CheckAddress round trips from another connection while the storm lasted.
    var addressChecks: Summary?
    /// Distinct names that reached the black hole.
    var namesAsked = 0
    /// Times the bench's own threads waited for a CPU, and reachd's CPU time in the storm.
    var reachdCPU: UInt64 = 0
    var load = ""
    var pressure = ""
}

/// `--only bushosts`: reachd on a private bus with the black hole as its nameserver; for each
/// count of `--bus-host-checks`, that many CheckHost calls sent at once from one connection
/// (asynchronous sd_bus_call_async, each stamped as it is queued), while a second connection on a
/// thread of its own calls CheckAddress back to back. Issues #16 item 5 and #9 item 2.
enum BusHostBench {
    static func measure(_ network: ServiceNetwork, _ options: Options) throws -> [BusHostStorm] {
        try network.startBlackHole()
        let running = try BusBench.startReachd(network, options, resolvConf: network.blackHoleResolvConf)
        defer { running.stop() }
        var storms: [BusHostStorm] = []
        for count in options.busHostChecks {
            _ = network.drainBlackHole()
            sleepMilliseconds(300)
            note("reachbench: bushosts: \(count) concurrent CheckHost, \(options.busHostDeadline) ms deadline")
            var storm = try storm(count, deadline: options.busHostDeadline, running)
            storm.namesAsked = Set(network.drainBlackHole()).count
            storms.append(storm)
            note(describe(storm))
            guard running.daemon.isRunning else { throw running.failure("reachd ended during the storm") }
        }
        return storms
    }

    static func storm(_ count: Int, deadline: Int, _ running: BusBench.RunningReachd) throws -> BusHostStorm {
        let load = loadAverage()
        let pressure = cpuPressure()
        let cpuBefore = cpuTime(running.daemon.pid)
        let stop = StopFlag()
        let address = running.address
        let prober = try BackgroundThread { () -> [UInt64] in
            guard let client = try? BusConnection(.address(address), description: "reachbench-address") else { return [] }
            var samples: [UInt64] = []
            while !stop.isSet {
                let start = monotonicNanoseconds()
                guard (try? client.call(
                    destination: BusBench.busName, path: BusBench.objectPath, interface: BusBench.interface,
                    member: "CheckAddress", timeout: .seconds(5)
                ) { message throws(BusError) in try message.append(ServiceNetwork.answering) }) != nil else { break }
                samples.append(monotonicNanoseconds() - start)
                sleepMilliseconds(1)
            }
            return samples
        }
        let client = running.client
        var sent = [UInt64](repeating: 0, count: count)
        var answered = [UInt64](repeating: 0, count: count)
        var reasons: [String: Int] = [:]
        var slots: [BusSlot] = []
        var pending = count
        for i in 0..<count {
            sent[i] = monotonicNanoseconds()
            slots.append(try client.callAsync(
                destination: BusBench.busName, path: BusBench.objectPath, interface: BusBench.interface,
                member: "CheckHost", timeout: .seconds(30)
            ) { message throws(BusError) in
                try message.append("bh-\(count)-\(i).test")
                try message.append(UInt32(deadline))
            } reply: { result in
                answered[i] = monotonicNanoseconds()
                pending -= 1
                switch result {
                case let .success(message):
                    _ = try? message.readUInt32()
                    _ = try? message.readString()
                    _ = try? message.readStringArray()
                    let reason = (try? message.readString()) ?? "?"
                    reasons[reason.isEmpty ? "(none)" : reason, default: 0] += 1
                case let .failure(error):
                    reasons["error: \(error)", default: 0] += 1
                }
            })
            // Keep the socket moving while queueing, as a real client's loop would.
            while try client.process() {}
        }
        let limit = monotonicNanoseconds() + UInt64(deadline + 30_000) * 1_000_000
        while pending > 0, monotonicNanoseconds() < limit {
            if try client.process() { continue }
            try client.wait(timeout: .milliseconds(100))
        }
        stop.set()
        let addressSamples = prober.join()
        slots.removeAll()
        let due = UInt64(deadline) * 1_000_000
        var late: [UInt64] = []
        var early = 0
        for i in 0..<count where answered[i] != 0 {
            let took = answered[i] - sent[i]
            if took >= due { late.append(took - due) } else { early += 1 }
        }
        guard !late.isEmpty else { throw BenchError("no CheckHost reply came at or after its deadline: \(reasons)") }
        return BusHostStorm(
            checks: count, deadlineMilliseconds: deadline, lateness: Summary(late), early: early, reasons: reasons,
            addressChecks: addressSamples.isEmpty ? nil : Summary(addressSamples),
            reachdCPU: cpuTime(running.daemon.pid) - cpuBefore, load: load, pressure: pressure)
    }

    /// utime + stime of a process, in nanoseconds (/proc/PID/stat, clock ticks of 10 ms).
    static func cpuTime(_ pid: pid_t) -> UInt64 {
        guard let text = readSmallFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14, stime 15 (1-based), so 11 and 12 here.
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return 0 }
        return (user + system) * 10_000_000
    }

    static func describe(_ storm: BusHostStorm) -> String {
        let l = storm.lateness
        var text = "reachbench: bushosts: \(storm.checks) x CheckHost (\(storm.deadlineMilliseconds) ms): late "
            + "median \(Format.milliseconds(l.median)) / p99 \(Format.milliseconds(l.p99)) / max \(Format.milliseconds(l.max)) ms"
            + ", \(storm.early) early, reasons \(storm.reasons.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
            + ", \(storm.namesAsked) names at the black hole, reachd CPU \(Format.milliseconds(storm.reachdCPU)) ms"
        if let a = storm.addressChecks {
            text += "; CheckAddress meanwhile (n \(a.count)): median \(Format.milliseconds(a.median)) / p99 \(Format.milliseconds(a.p99)) / max \(Format.milliseconds(a.max)) ms"
        }
        return text + "; load \(storm.load), cpu pressure \(storm.pressure)"
    }
}
