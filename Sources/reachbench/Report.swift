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
    var clockOverhead: UInt64 = 0
    var elapsed: UInt64 = 0
    /// 1-minute load average at the start and at the end of the run.
    var loadBefore = ""
    var loadAfter = ""
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
        out.append("")

        if !results.flaps.isEmpty {
            out.append("1 / 3a. Change latency, kernel -> notification: veth peer admin down/up -> up0 carrier (us)")
            out.append("   from just before the RTM_NEWLINK sendmsg to the notification in the waiting code")
            var rows: [[String]] = []
            for flap in results.flaps {
                for (transition, summary) in [("down", flap.down), ("up", flap.up), ("both", flap.all)] {
                    rows.append([
                        "\(flap.pairs)", "\(flap.links)", flap.ipv6 ? "yes" : "no", flap.path.rawValue, transition, "\(summary.count)",
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
        }

        if !results.syncs.isEmpty {
            out.append("2. Initial sync: ReachabilityMonitor(configuration:) = dump links, addresses, routes + Engine (ms)")
            out.append("   memory: process VmRSS / RssAnon (MiB) before the first monitor, and with it alive")
            var rows: [[String]] = []
            for sync in results.syncs {
                rows.append([
                    "\(sync.pairs)", "\(sync.links)", sync.ipv6 ? "yes" : "no", "\(sync.interfaces)", "\(sync.addresses)", "\(sync.sync.count)",
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
        }

        if !results.engine.isEmpty {
            out.append("3b. Engine in-process: NetworkState.apply([one link event]), carrier off/on alternating (ns)")
            var rows: [[String]] = []
            for engine in results.engine {
                for (event, summary) in [("default-route link", engine.uplink), ("other link", engine.leaf)] {
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
                + "fill = one apply() of the whole synthetic dump")
            out.append("")
        }
        let tenths = results.elapsed / 100_000_000
        out.append("total time: \(tenths / 10).\(tenths % 10) s")
        return out.joined(separator: "\n")
    }

    // MARK: JSON

    static func json(_ results: Results) -> String {
        let machine = results.machine
        let options = results.options
        func summary(_ s: Summary) -> JSONValue {
            .object([
                ("n", .int(Int64(s.count))), ("medianNs", .uint(s.median)), ("p99Ns", .uint(s.p99)),
                ("minNs", .uint(s.min)), ("maxNs", .uint(s.max)), ("meanNs", .uint(s.mean)),
            ])
        }
        func memory(_ m: MemoryUsage) -> JSONValue {
            .object([
                ("vmRSSKiB", .int(Int64(m.residentKiB))), ("rssAnonKiB", .int(Int64(m.anonymousKiB))),
                ("rssFileKiB", .int(Int64(m.fileKiB))),
            ])
        }
        let value = JSONValue.object([
            ("machine", .object([
                ("kernel", .string(machine.kernel)), ("cpus", .int(Int64(machine.cpus))),
                ("cpuModel", .string(machine.cpuModel)), ("swift", .string(machine.swiftCompiler)),
                ("build", .string(machine.buildMode)),
            ])),
            ("settings", .object([
                ("quick", .bool(options.quick)), ("flaps", .int(Int64(options.flaps))),
                ("warmupFlaps", .int(Int64(options.warmup))), ("syncRepetitions", .int(Int64(options.syncRepetitions))),
                ("engineIterations", .int(Int64(options.engineIterations))), ("sysfs", .string(results.sysfs)),
                ("ipv6Round", .bool(options.ipv6Round)),
            ])),
            ("changeLatency", .array(results.flaps.map { flap in
                var members: [(String, JSONValue)] = [
                    ("pairs", .int(Int64(flap.pairs))), ("links", .int(Int64(flap.links))),
                    ("pairsIPv6", .bool(flap.ipv6)),
                    ("path", .string(flap.path == .floor ? "netlinkFloor" : "monitorUpdates")),
                    ("down", summary(flap.down)), ("up", summary(flap.up)), ("all", summary(flap.all)),
                ]
                if let updates = flap.updatesPerTransitionTimes100 {
                    members.append(("updatesPerTransitionTimes100", .int(Int64(updates))))
                }
                return .object(members)
            })),
            ("initialSync", .array(results.syncs.map { sync in
                .object([
                    ("pairs", .int(Int64(sync.pairs))), ("links", .int(Int64(sync.links))),
                    ("pairsIPv6", .bool(sync.ipv6)),
                    ("interfaces", .int(Int64(sync.interfaces))), ("addresses", .int(Int64(sync.addresses))),
                    ("sync", summary(sync.sync)), ("memoryBefore", memory(sync.before)),
                    ("memoryAlive", memory(sync.alive)),
                ])
            })),
            ("engine", .array(results.engine.map { engine in
                .object([
                    ("links", .int(Int64(engine.links))), ("fillNs", .uint(engine.fill)),
                    ("stateKiB", .int(Int64(engine.stateKiB))),
                    ("defaultRouteLinkEvent", summary(engine.uplink)), ("otherLinkEvent", summary(engine.leaf)),
                ])
            })),
            ("loadAverage", .object([("start", .string(results.loadBefore)), ("end", .string(results.loadAfter))])),
            ("clockOverheadNs", .uint(results.clockOverhead)),
            ("elapsedNs", .uint(results.elapsed)),
        ])
        return value.serialized()
    }
}
