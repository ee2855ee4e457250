import Reachability

extension Report {
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
                ("groups", .array([("rounds", options.kernel), ("engine", options.engine), ("checks", options.checks),
                    ("bus", options.bus), ("stall", options.stall)].filter(\.1).map { .string($0.0) })),
                ("checkSamples", .int(Int64(options.checkSamples))), ("checkWarmup", .int(Int64(options.checkWarmup))),
                ("blackHoleRepetitions", .int(Int64(options.blackHoleRepetitions))),
                ("concurrentChecks", .int(Int64(options.concurrentChecks))),
                ("deadlineMs", .int(Int64(options.deadlineMilliseconds))), ("sharedDeadline", .bool(options.sharedDeadline)),
                ("getentRuns", .int(Int64(options.getentRuns))), ("busCalls", .int(Int64(options.busCalls))),
            ])),
            ("changeLatency", .array(results.flaps.map { flap in
                var members: [(String, JSONValue)] = [
                    ("pairs", .int(Int64(flap.pairs))), ("links", .int(Int64(flap.links))),
                    ("pairsIPv6", .bool(flap.ipv6)),
                    ("policy", .string(flap.policy)),
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
                    ("policy", .string(sync.policy)),
                    ("interfaces", .int(Int64(sync.interfaces))), ("addresses", .int(Int64(sync.addresses))),
                    ("sync", summary(sync.sync)), ("memoryBefore", memory(sync.before)),
                    ("memoryAlive", memory(sync.alive)),
                ])
            })),
            ("stallPoll", .array(results.stall.map { m in
                .object([
                    ("sockets", .int(Int64(m.sockets))), ("request", .string(m.request)), ("dumped", .int(Int64(m.dumped))), ("poll", summary(m.total)),
                    ("dump", summary(m.dump)), ("evaluate", summary(m.evaluate)),
                ])
            })),
            ("engine", .array(results.engine.map { engine in
                .object([
                    ("links", .int(Int64(engine.links))), ("fillNs", .uint(engine.fill)),
                    ("stateKiB", .int(Int64(engine.stateKiB))),
                    ("defaultRouteLinkEvent", summary(engine.uplink)), ("otherLinkEvent", summary(engine.leaf)),
                    ("metricsRender", summary(engine.metrics)),
                ])
            })),
            ("addressChecks", .array(results.addressChecks.map { check in
                .object([
                    ("setting", .string(check.setting)), ("destination", .string(check.path)),
                    ("target", .string(check.target)), ("flags", .string(check.flags)), ("check", summary(check.summary)),
                ])
            })),
            ("hostChecks", results.hostChecks.map { host in
                .object([
                    ("deadlineNs", .uint(host.deadline)), ("concurrent", .int(Int64(host.concurrent))),
                    ("maximumConcurrentLookups", .int(Int64(host.maximumConcurrentLookups))),
                    ("sharedDeadline", .bool(host.sharedDeadline)),
                    ("blackHole", .array(host.blackHole.map { run in
                        func batch(_ b: BlackHoleBatch) -> JSONValue {
                            .object([
                                ("lateness", summary(b.lateness)), ("timeouts", .int(Int64(b.timeouts))),
                                ("early", .int(Int64(b.early))), ("wallNs", .uint(b.wall)),
                                ("queries", .int(Int64(b.queries))), ("namesAsked", .int(Int64(b.namesAsked))),
                                ("addressChecksDuring", b.addressChecksDuring.map(summary) ?? .null),
                                ("addressThreadVoluntarySwitches", .int(Int64(b.addressThreadSwitches.voluntary))),
                                ("addressThreadInvoluntarySwitches", .int(Int64(b.addressThreadSwitches.involuntary))),
                                ("runQueueWaitNs", .uint(b.runQueueWait)), ("runQueueWaitLargestNs", .uint(b.runQueueWaitLargest)),
                            ])
                        }
                        return .object([
                            ("singleLatenessNs", .uint(run.single)), ("singleReason", .string(run.singleReason)),
                            ("alone", batch(run.alone)), ("withAddressChecks", batch(run.withAddressChecks)),
                        ])
                    })),
                    ("coldNs", .uint(host.cold)), ("coldResult", .string(host.coldResult)),
                    ("cached", host.cached.map(summary) ?? .null), ("upQueries", .int(Int64(host.upQueries))),
                    ("noLink", host.noLink.map(summary) ?? .null), ("noLinkResult", .string(host.noLinkResult)),
                    ("noLinkQueries", .int(Int64(host.noLinkQueries))),
                    ("getent", .array(host.getent.map { run in
                        .object([("wallNs", .uint(run.wall)), ("status", .string(run.status)), ("output", .string(run.output))])
                    })),
                ])
            } ?? .null),
            ("bus", results.bus.map { bus in
                func usage(_ u: ProcessUsage) -> JSONValue {
                    .object([
                        ("vmRSSKiB", .int(Int64(u.residentKiB))), ("rssAnonKiB", .int(Int64(u.anonymousKiB))),
                        ("rssFileKiB", .int(Int64(u.fileKiB))), ("pssKiB", .int(Int64(u.proportionalKiB))),
                        ("threads", .int(Int64(u.threads))),
                        ("residentByMapping", .array(u.mappings.map {
                            .object([("name", .string($0.name)), ("kib", .int(Int64($0.kib)))])
                        })),
                    ])
                }
                return .object([
                    ("reachd", .string(bus.reachd)), ("startupNs", .uint(bus.startup)),
                    ("changeLatency", .array(bus.flaps.map { path in
                        .object([
                            ("observer", .string(path.path)), ("down", summary(path.down)), ("up", summary(path.up)),
                            ("all", summary(path.all)),
                        ])
                    })),
                    ("signalsPerTransitionTimes100", .int(Int64(bus.signalsPerTransitionTimes100))),
                    ("glibSignalsPerTransitionTimes100", bus.glibSignalsPerTransitionTimes100.map { .int(Int64($0)) } ?? .null),
                    ("calls", .array(bus.calls.map { .object([("member", .string($0.member)), ("call", summary($0.summary))]) })),
                    ("idle", usage(bus.idle)), ("networkdIdle", bus.networkdIdle.map(usage) ?? .null),
                    ("idleWindowSeconds", .int(Int64(bus.idleWindowSeconds))),
                    ("idleTimeslices", .uint(bus.idleTimeslices)), ("idleContextSwitches", .uint(bus.idleContextSwitches)),
                    ("afterWork", usage(bus.afterWork)), ("afterWorkTimeslices", .uint(bus.afterWorkTimeslices)),
                    ("afterWorkContextSwitches", .uint(bus.afterWorkContextSwitches)), ("exit", .string(bus.exit)),
                ])
            } ?? (results.busError.map { .object([("error", .string($0))]) } ?? .null)),
            ("groupLoadAverages", .array(results.loads.map {
                .object([
                    ("group", .string($0.group)), ("start", .string($0.start)), ("end", .string($0.end)),
                    ("cpuPressureStart", .string($0.pressureStart)), ("cpuPressureEnd", .string($0.pressureEnd)),
                ])
            })),
            ("loadAverage", .object([("start", .string(results.loadBefore)), ("end", .string(results.loadAfter))])),
            ("clockOverheadNs", .uint(results.clockOverhead)),
            ("elapsedNs", .uint(results.elapsed)),
        ])
        return value.serialized()
    }
}
