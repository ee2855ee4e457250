import Reachability

/// Everything one run measured.
struct Results: Sendable {
    var machine: MachineInfo
    var options: Options
    /// Where the monitor read sysfs facts from: "namespace" (a sysfs mounted inside it) or "none".
    var sysfs: String
    var syncs: [SyncMeasurement] = []
    var flaps: [FlapMeasurement] = []
    var engine: [EngineMeasurement] = []
    var addressChecks: [AddressCheckMeasurement] = []
    var hostChecks: HostCheckResults?
    var bus: BusMeasurement?
    var hostLoad: [HostLoadMeasurement] = []
    var stall: [StallPollMeasurement] = []
    /// Why the bus group failed, when it did.
    var busError: String?
    /// The 1-minute load average at the start and end of each group.
    var loads: [GroupLoad] = []
    var clockOverhead: UInt64 = 0
    var elapsed: UInt64 = 0
    /// 1-minute load average at the start and at the end of the run.
    var loadBefore = ""
    var loadAfter = ""
}

struct GroupLoad: Sendable {
    var group: String
    /// 1-minute load average at the start and the end of the group.
    var start: String
    var end: String
    /// CPU pressure (some avg10) at the start and the end.
    var pressureStart = ""
    var pressureEnd = ""

    init(group: String, start: String, pressure: String) {
        self.group = group
        self.start = start
        end = loadAverage()
        pressureStart = pressure
        pressureEnd = cpuPressure()
    }
}

enum Report {
    // MARK: text

    static func text(_ results: Results) -> String {
        let machine = results.machine
        let options = results.options
        var out: [String] = []
        out.append("reachbench: Linux \(machine.kernel), \(machine.cpus) CPUs (\(machine.cpuModel)), "
            + "Swift \(machine.swiftCompiler), \(machine.buildMode) build; load average \(results.loadBefore) -> \(results.loadAfter)")
        if options.kernel {
            out.append("flaps: \(options.flaps) per size (+\(options.warmup) warm-up), 2 samples each (down, up); "
                + "initial syncs: \(options.syncRepetitions) per size; sysfs: \(results.sysfs)")
        }
        if options.checks {
            out.append("checks: \(options.checkSamples) samples per target (+\(options.checkWarmup) warm-up), "
                + "\(options.blackHoleRepetitions) black-hole repetitions of \(options.concurrentChecks) checks, "
                + "\(options.getentRuns) getent run(s)")
        }
        if options.bus {
            out.append("bus: \(options.flaps) flaps (+\(options.warmup) warm-up), \(options.busCalls) calls per method")
        }
        out.append("")

        out += flapSection(results)
        out += syncSection(results)
        out += engineSection(results)
        out += checkSections(results)
        out += busSection(results)
        out += hostLoadSection(results)
        out += stallSection(results)
        if !results.loads.isEmpty {
            out.append("load average (1 min) per group: "
                + results.loads.map { "\($0.group) \($0.start) -> \($0.end)" }.joined(separator: ", "))
            out.append("CPU pressure (some avg10) per group: "
                + results.loads.map { "\($0.group) \($0.pressureStart) -> \($0.pressureEnd)" }.joined(separator: ", "))
        }
        let tenths = results.elapsed / 100_000_000
        out.append("total time: \(tenths / 10).\(tenths % 10) s")
        return out.joined(separator: "\n")
    }

    /// Section 1 / 3a: change latency, kernel to notification.
    private static func flapSection(_ results: Results) -> [String] {
        guard !results.flaps.isEmpty else { return [] }
        var out: [String] = []
        out.append("1 / 3a. Change latency, kernel -> notification: veth peer admin down/up -> up0 carrier (us)")
        out.append("   from just before the RTM_NEWLINK sendmsg to the notification in the waiting code")
        var rows: [[String]] = []
        for flap in results.flaps {
            for (transition, summary) in [("down", flap.down), ("up", flap.up), ("both", flap.all)] {
                rows.append([
                    "\(flap.pairs)", "\(flap.links)", (flap.ipv6 ? "yes" : "no") + (flap.policy.isEmpty ? "" : "; \(flap.policy)"), flap.path.rawValue, transition, "\(summary.count)",
                    Format.microseconds(summary.median), Format.microseconds(summary.p99),
                    Format.microseconds(summary.max),
                ])
            }
        }
        out.append(Format.table(
            ["pairs", "links", "v6", "path", "change", "n", "median", "p99", "max"], rows, leftColumns: 5))
        let perTransition = results.flaps.compactMap { flap in
            flap.updatesPerTransitionTimes100.map {
                "\(flap.pairs)\(flap.ipv6 ? "+v6" : "") pairs: \($0 / 100).\($0 % 100 < 10 ? "0" : "")\($0 % 100)"
            }
        }
        if !perTransition.isEmpty {
            out.append("   updates() changes per transition (peer + uplink): " + perTransition.joined(separator: ", "))
        }
        out.append("")
        return out
    }

    /// Section 2: the initial sync and its memory.
    private static func syncSection(_ results: Results) -> [String] {
        guard !results.syncs.isEmpty else { return [] }
        var out: [String] = []
        out.append("2. Initial sync: ReachabilityMonitor(configuration:) = dump links, addresses, routes + Engine (ms)")
        out.append("   memory: process VmRSS / RssAnon (MiB) before the first monitor, and with it alive")
        var rows: [[String]] = []
        for sync in results.syncs {
            rows.append([
                "\(sync.pairs)", "\(sync.links)", (sync.ipv6 ? "yes" : "no") + (sync.policy.isEmpty ? "" : "; \(sync.policy)"), "\(sync.interfaces)", "\(sync.addresses)", "\(sync.sync.count)",
                Format.milliseconds(sync.sync.median), Format.milliseconds(sync.sync.min),
                Format.milliseconds(sync.sync.max),
                Format.mebibytes(sync.before.residentKiB), Format.mebibytes(sync.alive.residentKiB),
                Format.mebibytes(sync.alive.residentKiB - sync.before.residentKiB),
                Format.mebibytes(sync.alive.anonymousKiB - sync.before.anonymousKiB),
            ])
        }
        out.append(Format.table(
            ["pairs", "links", "v6", "ifaces", "addrs", "n", "median", "min", "max", "RSS before", "RSS alive",
                "RSS delta", "anon delta"], rows, leftColumns: 0))
        out.append("")
        return out
    }

    /// Section 3b: the Engine in-process.
    private static func engineSection(_ results: Results) -> [String] {
        guard !results.engine.isEmpty else { return [] }
        var out: [String] = []
        out.append("3b. Engine in-process: NetworkState.apply([one link event]), carrier off/on alternating (ns)")
        var rows: [[String]] = []
        for engine in results.engine {
            for (event, summary) in [("default-route link", engine.uplink), ("other link", engine.leaf), ("metrics render", engine.metrics)] {
                rows.append([
                    "\(engine.links)", event, "\(summary.count)", "\(summary.median)", "\(summary.p99)",
                    "\(summary.max)", "\(summary.mean)", Format.milliseconds(engine.fill),
                    Format.mebibytes(engine.stateKiB),
                ])
            }
        }
        out.append(Format.table(
            ["links", "event", "n", "median", "p99", "max", "mean", "fill (ms)", "state (MiB)"], rows,
            leftColumns: 2))
        out.append("   each sample includes one clock read (~\(results.clockOverhead) ns); "
            + "fill = one apply() of the whole synthetic dump; metrics render = snapshot + "
            + "MetricsExposition.render, one scrape's work, not a link event")
        out.append("")
        return out
    }

    /// Section 9: concurrent CheckHost against a DNS black hole.
    private static func hostLoadSection(_ results: Results) -> [String] {
        guard !results.hostLoad.isEmpty else { return [] }
        var out: [String] = []
        out.append("9. Concurrent D-Bus CheckHost against a DNS black hole (ms past each call's deadline, as the caller saw it and inside reachd; CheckAddress round trips meanwhile, us)")
        let rows = results.hostLoad.map { load in
            [
                "\(load.concurrent)", "\(load.deadlineMilliseconds)", "\(load.timedOut)",
                Format.milliseconds(load.lateness.median), Format.milliseconds(load.lateness.p99), Format.milliseconds(load.lateness.max),
                Format.milliseconds(load.reachdLateness.median), Format.milliseconds(load.reachdLateness.p99),
                Format.milliseconds(load.reachdLateness.max),
                "\(load.checkAddress.count)", Format.microseconds(load.checkAddress.median), Format.microseconds(load.checkAddress.p99),
                Format.microseconds(load.checkAddress.max), "\(load.cpuMilliseconds)", "\(load.hogs)",
            ]
        }
        out.append(Format.table(
            ["checks", "deadline", "dnsTimeout", "late p50", "p99", "max", "in reachd p50", "p99", "max", "CheckAddress n", "p50", "p99", "max", "reachd CPU ms", "CPU hogs"],
            rows, leftColumns: 0))
        out.append("")
        return out
    }

    /// Section 11: one passive stall poll.
    private static func stallSection(_ results: Results) -> [String] {
        guard !results.stall.isEmpty else { return [] }
        var out: [String] = []
        out.append("11. One passive stall poll: sock_diag dump of IPv4 and IPv6 (request, reads, decode) + StallEvaluator.poll (us)")
        let rows = results.stall.map { m in
            ["\(m.sockets)", m.request, "\(m.dumped)", "\(m.total.count)", Format.microseconds(m.total.median), Format.microseconds(m.total.p99),
             Format.microseconds(m.total.max), Format.microseconds(m.dump.median), Format.microseconds(m.evaluate.median)]
        }
        out.append(Format.table(["sockets", "request", "dumped", "polls", "poll p50", "p99", "max", "dump p50", "evaluate p50"], rows, leftColumns: 0))
        out.append("")
        return out
    }

    private static func row(_ summary: Summary) -> [String] {
        [
            "\(summary.count)", Format.microseconds(summary.median), Format.microseconds(summary.p99),
            Format.microseconds(summary.max),
        ]
    }

    private static func checkSections(_ results: Results) -> [String] {
        var out: [String] = []
        if !results.addressChecks.isEmpty {
            out.append("4. Address check in-process: monitor.check(address:), back to back (us)")
            out.append(Format.table(
                ["where", "destination", "target", "answer", "n", "median", "p99", "max"],
                results.addressChecks.map { [$0.setting, $0.path, $0.target, $0.flags] + row($0.summary) }, leftColumns: 4))
            out.append("")
        }
        guard let host = results.hostChecks else { return out }
        if !host.blackHole.isEmpty {
            out.append("5. Host check against a DNS black hole, deadline \(Format.milliseconds(host.deadline)) ms "
                + "(\(host.sharedDeadline ? "one for the whole batch" : "from each call")), maximumConcurrentLookups "
                + "\(host.maximumConcurrentLookups)")
            out.append("   lateness = answer in the awaiting task - its deadline (ms)")
            out.append("   a. one check alone: " + host.blackHole.map {
                "\(Format.milliseconds($0.single)) ms (\($0.singleReason))"
            }.joined(separator: ", "))
            out.append("   b. \(host.concurrent) checks at once, distinct names; c. the same with address checks back to back "
                + "on a thread of their own (us)")
            var rows: [[String]] = []
            for (index, run) in host.blackHole.enumerated() {
                for (kind, batch) in [("alone", run.alone), ("+ address checks", run.withAddressChecks)] {
                    let during = batch.addressChecksDuring
                    rows.append([
                        "\(index + 1)", kind, "\(batch.lateness.count)", "\(batch.timeouts)",
                        Format.milliseconds(batch.lateness.median), Format.milliseconds(batch.lateness.p99),
                        Format.milliseconds(batch.lateness.max), Format.milliseconds(batch.wall),
                        "\(batch.namesAsked)", "\(batch.queries)",
                        during.map { "\($0.count)" } ?? "-", during.map { Format.microseconds($0.median) } ?? "-",
                        during.map { Format.microseconds($0.p99) } ?? "-", during.map { Format.microseconds($0.max) } ?? "-",
                        during == nil ? "-" : "\(batch.addressThreadSwitches.voluntary)/\(batch.addressThreadSwitches.involuntary)",
                        Format.milliseconds(batch.runQueueWait) + "/" + Format.milliseconds(batch.runQueueWaitLargest),
                    ])
                }
            }
            out.append(Format.table(
                ["rep", "batch", "n", "timeouts", "late med", "late p99", "late max", "wall", "names", "queries",
                    "addr n", "addr med", "addr p99", "addr max", "vol/invol", "rq wait"], rows, leftColumns: 2))
            out.append("   names / queries: distinct names and datagrams that reached the black hole during the batch "
                + "(the lookups that started);")
            out.append("   vol/invol: context switches of the address-check thread (voluntary = it waited, involuntary = preempted)")
            out.append("   rq wait: ms the bench's threads were runnable without a CPU during the batch, all threads / the most "
                + "for one thread")
            out.append("")
        }
        out.append("6. Host checks with dnsmasq (ms / us)")
        out.append("   cold (first) check of up.test: \(Format.milliseconds(host.cold)) ms (\(host.coldResult))")
        if let cached = host.cached {
            out.append("   cached checks of up.test: n \(cached.count), median \(Format.microseconds(cached.median)) us, "
                + "p99 \(Format.microseconds(cached.p99)) us, max \(Format.microseconds(cached.max)) us")
        }
        out.append("   queries for up.test that reached dnsmasq in all: \(host.upQueries) (A and AAAA of the cold check)")
        if let noLink = host.noLink {
            out.append("   uplink without carrier, names never asked: n \(noLink.count), median "
                + "\(Format.microseconds(noLink.median)) us, p99 \(Format.microseconds(noLink.p99)) us, max "
                + "\(Format.microseconds(noLink.max)) us (\(host.noLinkResult)); queries that reached dnsmasq: \(host.noLinkQueries)")
        }
        out.append("")
        if !host.getent.isEmpty {
            out.append("7. getent ahosts slow.test against the same black hole (glibc defaults: timeout 5 s, attempts 2)")
            for run in host.getent {
                out.append("   \(Format.milliseconds(run.wall)) ms, \(run.status)\(run.output.isEmpty ? "" : ": " + run.output)")
            }
            out.append("")
        }
        return out
    }

    private static func busSection(_ results: Results) -> [String] {
        if let error = results.busError { return ["8. D-Bus: failed: \(error)", ""] }
        guard let bus = results.bus else { return [] }
        var out: [String] = []
        out.append("8. reachd on a private D-Bus (\(bus.reachd))")
        out.append("   start to first GetStatus answer: \(Format.milliseconds(bus.startup)) ms")
        out.append("   a. carrier flap (up0s in the server namespace) -> observer, the same flaps for each (us)")
        var rows: [[String]] = []
        for path in bus.flaps {
            for (transition, summary) in [("down", path.down), ("up", path.up), ("both", path.all)] {
                rows.append([path.path, transition] + row(summary))
            }
        }
        out.append(Format.table(["observer", "change", "n", "median", "p99", "max"], rows, leftColumns: 2))
        let per = bus.signalsPerTransitionTimes100
        out.append("   Changed signals per transition: \(per / 100).\(per % 100 < 10 ? "0" : "")\(per % 100)")
        if let glib = bus.glibSignalsPerTransitionTimes100 {
            out.append("   GLib network-changed signals per transition: \(glib / 100).\(glib % 100 < 10 ? "0" : "")\(glib % 100)")
        }
        out.append("   c. method call round trips, synchronous sd_bus_call (us)")
        out.append(Format.table(["call", "n", "median", "p99", "max"], bus.calls.map { [$0.member] + row($0.summary) }))
        func memory(_ usage: ProcessUsage) -> String {
            "VmRSS \(Format.mebibytes(usage.residentKiB)) MiB (anon \(Format.mebibytes(usage.anonymousKiB)), file "
                + "\(Format.mebibytes(usage.fileKiB))), PSS \(Format.mebibytes(usage.proportionalKiB)) MiB, \(usage.threads) thread(s)"
        }
        out.append("   d. idle after start (2 s): \(memory(bus.idle))")
        out.append("      resident by mapping (MiB): " + bus.idle.mappings.prefix(10).map {
            "\($0.name) \(Format.mebibytes($0.kib))"
        }.joined(separator: ", "))
        out.append("      in the next \(bus.idleWindowSeconds) s: \(bus.idleTimeslices) times on a CPU, "
            + "\(bus.idleContextSwitches) context switches")
        if let networkd = bus.networkdIdle {
            out.append("      systemd-networkd beside it, same moment: \(memory(networkd))")
        }
        out.append("      idle after the flaps and calls: \(memory(bus.afterWork))")
        out.append("      in the next \(bus.idleWindowSeconds) s: \(bus.afterWorkTimeslices) times on a CPU, "
            + "\(bus.afterWorkContextSwitches) context switches")
        out.append("   reachd on SIGTERM: \(bus.exit)")
        out.append("")
        return out
    }
}
