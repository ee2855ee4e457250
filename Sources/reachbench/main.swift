// reachbench: measures the Reachability library against the real kernel. A program, not a timed
// test: run it as root on a quiet machine and read BENCHMARKS.md for what the numbers mean.
#if canImport(Glibc)
import Glibc
#endif

/// Runs every measurement. Off the main actor: the flap loop awaits the monitor's stream on the
/// cooperative pool, as any consumer of `updates()` would.
@concurrent
func runBenchmarks(_ options: Options) async throws -> Results {
    let started = monotonicNanoseconds()
    var results = Results(machine: .current(), options: options, sysfs: "none")
    results.loadBefore = loadAverage()
    results.clockOverhead = EngineBench.clockOverhead()

    var bench: KernelBench?
    defer {
        // Also on error: see removePairs() for why the links go before the namespace.
        if let bench {
            do { try bench.removePairs() } catch { note("reachbench: \(error)") }
            bench.namespace.destroy()
        }
    }
    if options.kernel {
        let load = loadAverage()
        let pressure = cpuPressure()
        note("reachbench: setting up namespace reachbench-\(getpid())")
        let kernel = try KernelBench(mountSysfs: options.sysfs)
        bench = kernel
        results.sysfs = kernel.namespace.sysfsRoot == nil ? "none" : "namespace's own (mounted read-only)"
        for pairs in options.pairSizes {
            try kernel.grow(to: pairs)
            try await measureRound(kernel, options, into: &results)
        }
        if options.policyRules > 0 || options.policyRoutes > 0 {
            try kernel.installPolicy(rules: options.policyRules, routes: options.policyRoutes)
            try await measureRound(kernel, options, into: &results)
        }
        if options.ipv6Round, kernel.pairs > 0 {
            try kernel.enableIPv6OnPairs()
            try await measureRound(kernel, options, into: &results)
        }
        results.loads.append(GroupLoad(group: "rounds", start: load, pressure: pressure))
    }
    if options.checks || options.bus || options.hostLoad {
        try await measureServices(options, into: &results)
    }
    if options.stall {
        let load = loadAverage()
        let pressure = cpuPressure()
        results.stall = try StallBench.measure(sizes: options.stallSizes, polls: options.stallPolls)
        results.loads.append(GroupLoad(group: "stall", start: load, pressure: pressure))
    }
    for links in options.engine ? options.engineSizes : [] {
        note("reachbench: engine, \(links) links, \(options.engineIterations) events x 2")
        results.engine.append(try EngineBench.measure(links: links, iterations: options.engineIterations))
    }
    results.elapsed = monotonicNanoseconds() - started
    results.loadAfter = loadAverage()
    return results
}

/// The groups that need the client and DNS servers' namespaces: the checks, the bus, the host's
/// load. They run while the rounds' namespace still exists: deleting thousands of veths keeps the
/// kernel busy in the background for a while, which would disturb the samples.
func measureServices(_ options: Options, into results: inout Results) async throws {
    note("reachbench: setting up namespaces reachbench-\(getpid())-c and -s (client, DNS servers)")
    let network = try ServiceNetwork(mountSysfs: options.sysfs)
    defer { network.close() }
    if options.checks {
        let load = loadAverage()
        let pressure = cpuPressure()
        try await CheckBench.measure(network, options, into: &results)
        results.loads.append(GroupLoad(group: "checks", start: load, pressure: pressure))
    }
    if options.bus {
        let load = loadAverage()
        let pressure = cpuPressure()
        do {
            results.bus = try BusBench.measure(network, options)
        } catch {
            // The other groups' figures are still worth printing.
            note("reachbench: bus: \(error)")
            results.busError = "\(error)"
        }
        results.loads.append(GroupLoad(group: "bus", start: load, pressure: pressure))
    }
    if options.hostLoad {
        let load = loadAverage()
        let pressure = cpuPressure()
        results.hostLoad = try HostLoadBench.measure(network, options)
        results.loads.append(GroupLoad(group: "hostload", start: load, pressure: pressure))
    }
}

/// Initial sync, then the flap latency on both paths, at the namespace's current size.
func measureRound(_ kernel: KernelBench, _ options: Options, into results: inout Results) async throws {
    let size = "\(kernel.pairs) pairs\(kernel.pairsHaveIPv6 ? " with IPv6" : "")"
    note("reachbench: \(size): initial sync x\(options.syncRepetitions)")
    results.syncs.append(try kernel.measureSync(repetitions: options.syncRepetitions))
    note("reachbench: \(size): \(options.flaps) flaps, netlink floor")
    results.flaps.append(try kernel.measureFloor(flaps: options.flaps, warmup: options.warmup))
    note("reachbench: \(size): \(options.flaps) flaps, monitor")
    results.flaps.append(try await kernel.measureMonitor(flaps: options.flaps, warmup: options.warmup))
    if options.checks {
        note("reachbench: \(size): address checks, \(options.checkSamples) per target")
        results.addressChecks += try kernel.measureAddressChecks(samples: options.checkSamples, warmup: options.checkWarmup)
    }
}

let options: Options
do {
    options = try Options.parse(CommandLine.arguments.dropFirst())
} catch {
    note("reachbench: \(error)\n\n\(Options.usage)")
    exit(2)
}
if options.help {
    print(Options.usage)
    exit(0)
}
if options.needsRoot && getuid() != 0 {
    note("reachbench: needs root to create network namespaces (or use --engine-only)")
    exit(2)
}
#if DEBUG
    note("reachbench: this is a debug build; the figures mean little (swift build -c release --product reachbench)")
#endif
installCleanupHandlers()
do {
    let results = try await runBenchmarks(options)
    print(options.json ? Report.json(results) : Report.text(results))
} catch {
    runCleanup()
    note("reachbench: \(error)")
    exit(1)
}
runCleanup()
