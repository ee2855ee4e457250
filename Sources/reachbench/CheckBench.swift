import Reachability

#if canImport(Glibc)
import Glibc
#endif

/// `monitor.check(address:)` in-process, one destination kind at a time.
struct AddressCheckMeasurement: Sendable {
    /// Where: "10 pairs (23 links)", "checks namespace (2 links)".
    var setting: String
    /// "via gateway", "on-link", "own address".
    var path: String
    var target: String
    /// The flags of the answer (the same for every sample).
    var flags: String
    var summary: Summary
}

/// Many host checks at once against the black hole.
struct BlackHoleBatch: Sendable {
    /// Lateness of each answer: when the awaiting task got it, minus its deadline.
    var lateness: Summary
    /// Answers with the reason dnsTimeout, out of `lateness.count`.
    var timeouts: Int
    /// Answers that came before their deadline (counted as lateness 0).
    var early: Int
    /// From the first call to the last answer.
    var wall: UInt64
    /// Datagrams that reached the black hole during the batch (A and AAAA, with c-ares'
    /// retries), and how many distinct names they asked: the lookups that were started at all.
    var queries: Int
    var namesAsked: Int
    /// Address checks made back to back on a thread of their own while the batch ran.
    var addressChecksDuring: Summary?
    /// Context switches of the thread making those checks: voluntary ones mean it waited
    /// (for the monitor's lock, or in a system call), involuntary ones that it was preempted.
    var addressThreadSwitches = ThreadSwitches()
    /// Time the bench's threads spent runnable but without a CPU during the batch: summed,
    /// and the most any one thread waited (the monitor's thread, the pool's, the address checks').
    var runQueueWait: UInt64 = 0
    var runQueueWaitLargest: UInt64 = 0
}

/// The calling thread's context switches (getrusage RUSAGE_THREAD).
struct ThreadSwitches: Sendable {
    var voluntary = 0
    var involuntary = 0

    static func current() -> ThreadSwitches {
        var usage = rusage()
        _ = getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD
        return ThreadSwitches(voluntary: usage.ru_nvcsw, involuntary: usage.ru_nivcsw)
    }

    static func - (lhs: ThreadSwitches, rhs: ThreadSwitches) -> ThreadSwitches {
        ThreadSwitches(voluntary: lhs.voluntary - rhs.voluntary, involuntary: lhs.involuntary - rhs.involuntary)
    }
}

/// One repetition of the black-hole measurements.
struct BlackHoleRun: Sendable {
    /// One check alone: how long after its deadline the answer reached the awaiting task.
    var single: UInt64
    var singleReason: String
    /// The batch with nothing else running, then again with address checks alongside.
    var alone: BlackHoleBatch
    var withAddressChecks: BlackHoleBatch
}

struct GetentRun: Sendable {
    var wall: UInt64
    var status: String
    /// What getent printed (stdout and stderr), trimmed.
    var output: String
}

/// Everything the host-check group measured.
struct HostCheckResults: Sendable {
    var deadline: UInt64 = 500_000_000
    var concurrent = 0
    var sharedDeadline = false
    var maximumConcurrentLookups = 0
    var blackHole: [BlackHoleRun] = []
    /// First check of `up.test` (dnsmasq answers; nothing cached yet), and its verdict.
    var cold: UInt64 = 0
    var coldResult = ""
    /// Later checks of `up.test`, answered from the cache.
    var cached: Summary?
    /// Queries for up.test that reached dnsmasq during all of it (the cold check sends A + AAAA).
    var upQueries = 0
    /// Checks of names never asked before while the uplink has no carrier.
    var noLink: Summary?
    var noLinkResult = ""
    /// Queries for those names that reached dnsmasq (must be 0).
    var noLinkQueries = 0
    var getent: [GetentRun] = []
}

enum CheckBench {
    /// Times `check(address:)` for each target: `warmup` rounds over all targets, then
    /// `samples` checks of each target in turn.
    static func measureAddresses(
        _ monitor: ReachabilityMonitor, setting: String, targets: [(path: String, target: String)], samples: Int, warmup: Int
    ) -> [AddressCheckMeasurement] {
        for _ in 0..<warmup {
            for target in targets { _ = monitor.check(address: target.target) }
        }
        return targets.map { target in
            let flags = monitor.check(address: target.target).flags
            var times = [UInt64](repeating: 0, count: samples)
            for index in 0..<samples {
                let start = monotonicNanoseconds()
                _ = monitor.check(address: target.target)
                times[index] = monotonicNanoseconds() - start
            }
            return AddressCheckMeasurement(
                setting: setting, path: target.path, target: target.target, flags: flags.description, summary: Summary(times))
        }
    }

    static let serviceTargets: [(path: String, target: String)] = [
        ("via gateway", ServiceNetwork.answering),
        ("on-link", ServiceNetwork.gateway),
        ("own address", ServiceNetwork.clientAddress),
    ]

    /// Address checks, the black hole, the cache, the no-link short cut, and getent.
    static func measure(
        _ network: ServiceNetwork, _ options: Options, into results: inout Results
    ) async throws {
        var host = HostCheckResults()
        host.deadline = UInt64(options.deadlineMilliseconds) * 1_000_000
        host.concurrent = options.concurrentChecks
        host.sharedDeadline = options.sharedDeadline

        // 1. Address checks, and the black hole with the same monitor.
        try network.startBlackHole()
        let configuration = network.configuration(resolvConf: network.blackHoleResolvConf)
        host.maximumConcurrentLookups = configuration.maximumConcurrentLookups
        let monitor = try ReachabilityMonitor(configuration: configuration)
        defer { monitor.stop() }
        note("reachbench: checks: address checks, \(options.checkSamples) per target")
        results.addressChecks += measureAddresses(
            monitor, setting: "checks namespace (lo, up0)", targets: serviceTargets,
            samples: options.checkSamples, warmup: options.checkWarmup)

        let deadline = Duration.milliseconds(options.deadlineMilliseconds)
        for repetition in 0..<options.blackHoleRepetitions {
            note("reachbench: checks: black hole, repetition \(repetition + 1) of \(options.blackHoleRepetitions)")
            host.blackHole.append(try await blackHoleRun(
                network, monitor, repetition: repetition, deadline: deadline, concurrent: options.concurrentChecks,
                sharedDeadline: options.sharedDeadline))
        }
        monitor.stop()

        // 2. dnsmasq: cold, then cached; then names never seen while the uplink has no carrier.
        try network.startDNSMasq()
        let answering = try ReachabilityMonitor(configuration: network.configuration(resolvConf: network.answeringResolvConf))
        defer { answering.stop() }
        note("reachbench: checks: cached host checks, \(options.checkSamples)")
        var start = monotonicNanoseconds()
        let cold = try await answering.check(host: "up.test", deadline: .now + .seconds(2))
        host.cold = monotonicNanoseconds() - start
        host.coldResult = describe(cold)
        guard cold.isReachable else { throw BenchError("up.test via dnsmasq: expected reachable, got \(describe(cold))") }
        var times = [UInt64](repeating: 0, count: options.checkSamples)
        for index in 0..<(options.checkWarmup + options.checkSamples) {
            start = monotonicNanoseconds()
            let result = try await answering.check(host: "up.test", deadline: .now + .seconds(2))
            let elapsed = monotonicNanoseconds() - start
            guard result.isReachable else { throw BenchError("cached up.test: expected reachable, got \(describe(result))") }
            if index >= options.checkWarmup { times[index - options.checkWarmup] = elapsed }
        }
        host.cached = Summary(times)

        let noLinkSamples = max(1, options.checkSamples / 10)
        note("reachbench: checks: host checks with the uplink down, \(noLinkSamples)")
        try network.setPeer(up: false)
        guard waitFor(answering, ServiceNetwork.answering, reachable: false) else {
            throw BenchError("the nameserver stayed reachable 3 s after the uplink lost carrier")
        }
        times = [UInt64](repeating: 0, count: noLinkSamples)
        var noLinkResult: CheckResult?
        for index in 0..<noLinkSamples {
            start = monotonicNanoseconds()
            let result = try await answering.check(host: "nolink-\(index).test", deadline: .now + .seconds(2))
            times[index] = monotonicNanoseconds() - start
            if noLinkResult == nil { noLinkResult = result }
        }
        try network.setPeer(up: true)
        guard waitFor(answering, ServiceNetwork.answering, reachable: true) else {
            throw BenchError("the nameserver did not come back 3 s after the uplink regained carrier")
        }
        host.noLink = Summary(times)
        host.noLinkResult = noLinkResult.map(describe) ?? ""
        sleepMilliseconds(100)  // dnsmasq writes its log asynchronously
        host.upQueries = network.dnsmasqQueries(for: "up.test")
        host.noLinkQueries = (0..<noLinkSamples).reduce(0) { $0 + network.dnsmasqQueries(for: "nolink-\($1).test") }

        // 3. glibc against the same black hole.
        for run in 0..<options.getentRuns {
            note("reachbench: checks: getent ahosts against the black hole, run \(run + 1) of \(options.getentRuns) (about 10 s)")
            host.getent.append(try getent(network))
        }
        results.hostChecks = host
    }

    /// One check alone, then `concurrent` at once, then `concurrent` more while a thread keeps
    /// making address checks. Each check has its own deadline, `deadline` after its call, unless
    /// `sharedDeadline`: then all of a batch share the one `deadline` after the batch starts.
    static func blackHoleRun(
        _ network: ServiceNetwork, _ monitor: ReachabilityMonitor, repetition: Int, deadline: Duration, concurrent: Int,
        sharedDeadline: Bool
    ) async throws -> BlackHoleRun {
        let single = try await lateCheck(monitor, "bh-single-\(repetition).test", .now + deadline)
        let alone = try await blackHoleBatch(
            network, monitor, prefix: "bh-\(repetition)-a", deadline: deadline, concurrent: concurrent,
            sharedDeadline: sharedDeadline, addressChecks: false)
        let loaded = try await blackHoleBatch(
            network, monitor, prefix: "bh-\(repetition)-b", deadline: deadline, concurrent: concurrent,
            sharedDeadline: sharedDeadline, addressChecks: true)
        return BlackHoleRun(
            single: UInt64(max(0, single.lateness)), singleReason: single.reason?.rawValue ?? "reachable",
            alone: alone, withAddressChecks: loaded)
    }

    static func blackHoleBatch(
        _ network: ServiceNetwork, _ monitor: ReachabilityMonitor, prefix: String, deadline: Duration, concurrent: Int,
        sharedDeadline: Bool, addressChecks: Bool
    ) async throws -> BlackHoleBatch {
        _ = network.drainBlackHole()
        let stop = StopFlag()
        let targets = serviceTargets.map(\.target)
        let checker = try BackgroundThread { () -> (samples: [UInt64], switches: ThreadSwitches) in
            var samples: [UInt64] = []
            guard addressChecks else { return (samples, ThreadSwitches()) }
            samples.reserveCapacity(1 << 20)
            let before = ThreadSwitches.current()
            var index = 0
            while !stop.isSet {
                let start = monotonicNanoseconds()
                _ = monitor.check(address: targets[index % targets.count])
                samples.append(monotonicNanoseconds() - start)
                index += 1
            }
            return (samples, ThreadSwitches.current() - before)
        }
        let timesBefore = ThreadTimes.current()
        let batchStart = monotonicNanoseconds()
        let shared: ContinuousClock.Instant? = sharedDeadline ? .now + deadline : nil
        let answers = try await withThrowingTaskGroup(of: (lateness: Int64, reason: Reason?).self) { group in
            for index in 0..<concurrent {
                group.addTask { try await lateCheck(monitor, "\(prefix)-\(index).test", shared ?? .now + deadline) }
            }
            var answers: [(lateness: Int64, reason: Reason?)] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        let wall = monotonicNanoseconds() - batchStart
        // Before the address-check thread ends: a thread that is gone has no schedstat to read.
        let waited = ThreadTimes.current().waiting(since: timesBefore)
        stop.set()
        let during = checker.join()
        let asked = network.drainBlackHole()
        return BlackHoleBatch(
            lateness: Summary(answers.map { UInt64(max(0, $0.lateness)) }),
            timeouts: answers.filter { $0.reason == .dnsTimeout }.count,
            early: answers.filter { $0.lateness < 0 }.count,
            wall: wall, queries: asked.count, namesAsked: Set(asked).count,
            addressChecksDuring: during.samples.isEmpty ? nil : Summary(during.samples), addressThreadSwitches: during.switches,
            runQueueWait: waited.total, runQueueWaitLargest: waited.largest)
    }

    /// A host check with the deadline `due`: how late (negative: early) it answered.
    static func lateCheck(
        _ monitor: ReachabilityMonitor, _ name: String, _ due: ContinuousClock.Instant
    ) async throws -> (lateness: Int64, reason: Reason?) {
        let result = try await monitor.check(host: name, deadline: due)
        return (nanoseconds(due.duration(to: .now)), result.reason)
    }

    /// Polls address checks of `target` until its reachability is `reachable` (at most 3 s).
    static func waitFor(_ monitor: ReachabilityMonitor, _ target: String, reachable: Bool) -> Bool {
        let deadline = monotonicNanoseconds() + 3_000_000_000
        while monotonicNanoseconds() < deadline {
            if monitor.check(address: target).isReachable == reachable { return true }
            sleepMilliseconds(1)
        }
        return false
    }

    /// `ip netns exec CLIENT getent ahosts slow.test` with /etc/netns/CLIENT/resolv.conf naming
    /// the black hole (ip netns exec bind-mounts it over /etc/resolv.conf). Killed after 90 s.
    static func getent(_ network: ServiceNetwork) throws -> GetentRun {
        guard let getent = findExecutable(["/usr/bin/getent", "/bin/getent"]) else { throw BenchError("getent not found") }
        var slots: [Int] = []
        defer { for slot in slots.reversed() { Cleanup.perform(slot) } }
        if access("/etc/netns", F_OK) != 0 {
            guard mkdir("/etc/netns", 0o755) == 0 || errno == EEXIST else { throw BenchError.system("mkdir /etc/netns") }
            slots.append(Cleanup.register(.directory, path: "/etc/netns"))
        }
        let directory = "/etc/netns/" + network.client.name
        guard mkdir(directory, 0o755) == 0 else { throw BenchError.system("mkdir \(directory)") }
        slots.append(Cleanup.register(.directory, path: directory))
        slots.append(Cleanup.register(.file, path: directory + "/resolv.conf"))
        try writeFile(directory + "/resolv.conf", "nameserver \(ServiceNetwork.blackHoleAddress)\n")
        let output = network.directory + "/getent.out"
        slots.append(Cleanup.register(.file, path: output))
        let start = monotonicNanoseconds()
        let process = try ChildProcess(
            network.client.ipTool, ["netns", "exec", network.client.name, getent, "ahosts", "slow.test"], logFile: output)
        var status = process.wait(milliseconds: 90_000)
        let wall = monotonicNanoseconds() - start
        var description = ChildProcess.describe(status)
        if status == nil {
            status = process.stop(signal: SIGKILL)
            description = "killed after 90 s"
        }
        let printed = (readSmallFile(output) ?? "").split(separator: "\n").joined(separator: " / ")
        return GetentRun(wall: wall, status: description, output: printed)
    }

    static func describe(_ result: CheckResult) -> String {
        var text = result.flags.description
        if !result.interface.isEmpty { text += " via \(result.interface)" }
        if let reason = result.reason { text += ", \(reason.rawValue)" }
        return text
    }
}

/// A duration in whole nanoseconds.
func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}

extension KernelBench {
    /// Address checks at the namespace's current size: via the default route, on the uplink's
    /// subnet, and the uplink's own address.
    func measureAddressChecks(samples: Int, warmup: Int) throws -> [AddressCheckMeasurement] {
        let monitor = try ReachabilityMonitor(configuration: configuration)
        defer { monitor.stop() }
        return CheckBench.measureAddresses(
            monitor, setting: "\(pairs) pairs (\(links) links\(pairsHaveIPv6 ? ", IPv6" : ""))",
            targets: [("via gateway", "198.51.100.1"), ("on-link", "192.0.2.1"), ("own address", "192.0.2.2")],
            samples: samples, warmup: warmup)
    }
}
