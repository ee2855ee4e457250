import Testing
@testable import Reachability

/// The core's own rules on a fake kernel and a loop turned by hand: no kernel, no namespace,
/// no root, no real time; milliseconds each. The real kernel's adapters are the other suites'.
@Suite struct CoreRulesTests {
    /// A core on a fake kernel: eth0 (index 2) online at 192.0.2.10/24 via 192.0.2.1.
    final class Rig {
        let kernel = FakeKernel()
        let loop = VirtualLoop()
        var core: ReachabilityCore!
        var updates: [CoreUpdate] = []
        var warnings: [String] = []

        init(online: Bool = true, sources: [any CoreSource] = []) throws {
            if online { kernel.first = Self.onlineFacts }
            core = try ReachabilityCore(configuration: Self.configuration, kernel: kernel, loop: loop, extraSources: sources) { [unowned self] in
                self.warnings.append($0)
            }
            core.follow { [unowned self] in self.updates.append($0) }
        }

        static let onlineFacts: [NetworkEvent] = [
            .link(Fact.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Fact.v4(2, "192.0.2.10")),
            .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false),
        ]

        /// Nothing of this host's: no sysfs, no rfkill, no leases, no resolv.conf followed, no sock_diag.
        static var configuration: CoreConfiguration {
            var configuration = CoreConfiguration()
            configuration.sysfsRoot = "/nonexistent-sysfs"
            configuration.rfkillDevicePath = nil
            configuration.dhcpLeasesDirectory = nil
            configuration.followsResolvConf = false
            configuration.resolvConfPath = "/nonexistent/resolv.conf"
            configuration.resolvedUpstreamPath = nil
            configuration.stall = nil
            return configuration
        }

        /// One turn in which the kernel says `events`.
        func kernelSays(_ events: [NetworkEvent]) {
            kernel.reads.append(events)
            loop.readable(kernel.monitorDescriptor)
        }

        var monitorPaused: Bool { !(loop.watch(kernel.monitorDescriptor)?.events.contains(.readable) ?? false) }
    }

    static let otherLink: [NetworkEvent] = [.link(Fact.ethernet(3, "eth1", carrier: false), device: DeviceFacts())]

    @Test func followersHearEachUpdateInTheOrderTheyJoined() throws {
        let rig = try Rig()
        var heard: [String] = []
        for name in ["publisher", "metrics", "history", "probes", "watches"] {
            rig.core.follow { _ in heard.append(name) }
        }
        rig.kernelSays(Self.otherLink)
        #expect(heard == ["publisher", "metrics", "history", "probes", "watches"])
    }

    @Test func theInputsOfOneTurnAreOneUpdate() throws {
        let rig = try Rig()
        rig.kernel.reads.append(Self.otherLink)
        // The netlink read and a probe's verdict in the same turn, before the deferred source runs.
        rig.loop.watch(rig.kernel.monitorDescriptor)?.handler(.readable)
        rig.core.record(connectivity: ConnectivityStatus(verdict: .limited, detail: "test"))
        #expect(rig.updates.isEmpty, "told before the turn's inputs were in")
        rig.loop.runDeferred()
        let update = try #require(rig.updates.only)
        let change = try #require(update.change)
        #expect(change.changedInterfaces.map(\.name) == ["eth1"])
        #expect(change.hostChanged && update.host.connectivity.verdict == .limited)
        #expect(update.generation == change.generation && update.snapshot.generation == change.generation)
    }

    @Test func anInputHandedInDuringAnUpdateWaitsForTheNext() throws {
        let rig = try Rig()
        var seenByLater: [(update: UInt64, state: UInt64)] = []
        rig.core.follow { [unowned rig] update in
            if update.host.connectivity.verdict != .limited {
                rig.core.record(connectivity: ConnectivityStatus(verdict: .limited, detail: "probe refused"))
            }
        }
        rig.core.follow { [unowned rig] update in
            seenByLater.append((update.generation, rig.core.shared.withState { $0.generation }))
        }
        rig.kernelSays(Self.otherLink)
        #expect(seenByLater.count == 2, "the link's update, then the verdict's: \(seenByLater)")
        #expect(seenByLater.allSatisfy { $0.update == $0.state }, "a follower saw a newer state than its update: \(seenByLater)")
        #expect(rig.updates.map { $0.host.connectivity.verdict } == [.unknown, .limited])
    }

    @Test func factsThatShowNothingNewTellNobody() throws {
        let rig = try Rig()
        // The time brought in with nothing lapsing, a DHCP hint for a link nobody has.
        rig.kernelSays([.clock(.now), .dhcpMetered(index: 9, true)])
        #expect(rig.updates.isEmpty, "\(rig.updates.map(\.change))")
    }

    @Test func aRouteThatMovesNothingShownStillTellsTheRoutingMoved() throws {
        let rig = try Rig()
        rig.kernelSays([.route(Fact.subnet("198.51.100.0", 24, dev: 2, via: "192.0.2.1"), replace: false)])
        let update = try #require(rig.updates.only)
        #expect(update.change == nil && update.routingMoved)
        #expect(update.routingEpoch == rig.core.shared.withState { $0.routingEpoch })
    }

    @Test func aReloadTellsEveryFollowerTheRoutingMoved() throws {
        let rig = try Rig()
        rig.core.reconfigure(Rig.configuration)
        rig.loop.runDeferred()
        #expect(rig.updates.only?.routingMoved == true)
    }

    @Test func aResumeAsksForAFreshDumpAndTellsTheRoutingMoved() throws {
        let rig = try Rig()
        rig.core.resumed()
        rig.loop.runDeferred()
        #expect(rig.kernel.resyncsAsked == 1)
        #expect(rig.updates.only?.routingMoved == true)
        let deadline = try #require(rig.kernel.resyncDeadline)
        #expect(rig.loop.armed.contains(deadline), "the resync timer waits for the source's deadline")
        rig.loop.fire(at: deadline)
        #expect(rig.kernel.isDumping && rig.monitorPaused, "a due resync starts a dump and pauses the monitor")
    }

    @Test func anOverrunPausesTheMonitorUntilTheDumpEndsAndTheDumpReplacesTheFacts() throws {
        let rig = try Rig()
        rig.kernel.overrun()
        rig.kernel.reads.append(Self.otherLink)
        rig.loop.readable(rig.kernel.monitorDescriptor)
        #expect(rig.monitorPaused, "the monitor is read again only after the dump")
        #expect(rig.updates.isEmpty)
        // The dump finds eth0 gone.
        rig.loop.readable(rig.kernel.requestDescriptor)
        #expect(!rig.monitorPaused)
        let update = try #require(rig.updates.only)
        #expect(update.host.state == .offline && update.change?.removedInterfaces.map(\.name) == ["eth0"])
        #expect(rig.core.shared.counters.resyncs == 2, "the first sync and the dump")
        // What the kernel queued meanwhile is applied after the dump, as it happened after it.
        rig.loop.readable(rig.kernel.monitorDescriptor)
        #expect(rig.updates.last?.snapshot.interfaces.map(\.name) == ["eth1"])
    }

    @Test func theExpiryTimerIsArmedAtTheFirstLifetimePlusTheMarginAndBringsTheTimeIn() throws {
        let rig = try Rig(online: false)
        let expiry = ContinuousClock.now + .seconds(1800)
        var route = Fact.defaultV4(via: "192.0.2.1", dev: 2)
        route.expiry = expiry
        rig.kernelSays([.link(Fact.ethernet(2, "eth0"), device: DeviceFacts()), .address(Fact.v4(2, "192.0.2.10")), .route(route, replace: false)])
        #expect(rig.updates.last?.host.state == .online)
        let due = expiry + ReachabilityCore.lifetimeMargin
        #expect(rig.loop.armed.contains(due))
        // Half an hour later, in virtual time: the kernel's clock is past the route's lifetime.
        rig.kernel.clock = expiry + .seconds(1)
        rig.loop.fire(at: due)
        #expect(rig.kernel.lifetimeChecks.count == 1)
        #expect(rig.updates.last?.host.state != .online, "the lapsed default route still carries the host")
        #expect(!rig.loop.armed.contains(due))
    }

    @Test func whileADumpRunsTheExpiryTimerWaitsForItsEnd() throws {
        let rig = try Rig(online: false)
        let expiry = ContinuousClock.now + .seconds(600)
        var route = Fact.defaultV4(via: "192.0.2.1", dev: 2)
        route.expiry = expiry
        rig.kernel.dump = NetworkDump(
            links: [(Fact.ethernet(2, "eth0"), DeviceFacts())], addresses: [Fact.v4(2, "192.0.2.10")], routes: [route])
        rig.kernelSays(Array(Rig.onlineFacts.dropLast()) + [.route(route, replace: false)])
        let due = expiry + ReachabilityCore.lifetimeMargin
        #expect(rig.loop.armed.contains(due))
        rig.kernel.overrun()
        rig.loop.readable(rig.kernel.monitorDescriptor)
        #expect(!rig.loop.armed.contains(due), "a lifetime judged against facts a dump is replacing")
        rig.loop.readable(rig.kernel.requestDescriptor)
        #expect(rig.loop.armed.contains(due), "the dump's end arms it again")
    }

    @Test func theSourcesIncidentsGoToTheJournalOnce() throws {
        let rig = try Rig()
        rig.kernel.incidents = ["a truncated datagram (12 bytes)"]
        rig.kernelSays(Self.otherLink)
        rig.kernelSays([.linkRemoved(index: 3)])
        #expect(rig.warnings == ["netlink: a truncated datagram (12 bytes)"])
    }

    @Test func aVerdictJoinsTheHostsAnswerAndOnlyWhatMovedIsTold() throws {
        let rig = try Rig()
        rig.core.record(connectivity: ConnectivityStatus(verdict: .full, detail: "204"))
        rig.loop.runDeferred()
        rig.core.record(connectivity: ConnectivityStatus(verdict: .full, detail: "204"))
        rig.loop.runDeferred()
        #expect(rig.updates.count == 1, "the same verdict again is nobody's news")
        #expect(rig.updates.first?.change?.hostChanged == true && rig.core.host.connectivity.verdict == .full)
    }

    /// An input of a test's own, registered in the core's list of sources (`CoreSource`).
    final class ScriptedSource: CoreSource {
        var first: [NetworkEvent] = []
        private(set) var context: CoreSourceContext?
        private(set) var turns = 0
        private(set) var wakes = 0
        private(set) var cancelled = false
        /// Thrown by `start`, as a source that cannot do without its descriptor would.
        var refusal: SystemError?
        func firstInput(kernel: any KernelEdge) -> NetworkInput? { first.isEmpty ? nil : .events(first) }
        func start(_ context: CoreSourceContext) throws(SystemError) {
            if let refusal { throw refusal }
            self.context = context
        }
        func turnTaken(_ state: borrowing NetworkState) { turns += 1 }
        func kernelWoke() { wakes += 1 }
        func cancel() { cancelled = true }
        /// Says `events` on the loop, as a watch of its own would.
        func says(_ events: [NetworkEvent]) { context?.submit(.events(events)) }
    }

    @Test func aSourceInTheListIsReadFirstThenStartedAndItsInputsReachAnUpdate() throws {
        let source = ScriptedSource()
        source.first = [.nameservers([NameserverRoute(address: IPAddress("192.0.2.53")!, route: nil)])]
        do {
            let rig = try Rig(sources: [source])
            #expect(source.context != nil, "started with the core")
            #expect(rig.core.shared.withState { $0.nameservers.count } == 1, "its first input is part of the first picture")
            source.says([.connectivity(ConnectivityStatus(verdict: .limited, detail: "a test's source"))])
            #expect(rig.updates.isEmpty, "told once the turn's inputs are in")
            rig.loop.runDeferred()
            #expect(rig.updates.only?.host.connectivity.verdict == .limited)
            #expect(source.turns == 1, "told of the turn its input made")
            rig.kernelSays(Self.otherLink)
            #expect(source.wakes == 1 && source.turns == 2)
        }
        #expect(source.cancelled, "cancelled as the core goes")
    }

    /// A record refused at the first read, before the loop runs, is still told once the core
    /// starts (the leases remember it as told: dropped there, it was never said).
    @Test func aLeaseRefusedAtTheFirstReadIsToldOnce() throws {
        let directory = try makeScratchDirectory("core-first-refusal")
        defer { removeTree(directory) }
        try "CAPTIVE_PORTAL=http://portal.example/\n".write(toFile: directory + "/1", atomically: true, encoding: .utf8)
        var configuration = CoreConfiguration()
        (configuration.dhcpLeasesDirectory, configuration.dhcpClientLeasesDirectory, configuration.dhcpcdLeasesDirectory) = (nil, nil, nil)
        configuration.networkdLinksDirectory = directory
        let rig = try Rig(sources: [LeaseWatch(try #require(DHCPLeases(configuration)))])
        #expect(rig.warnings.count { $0.contains("http://portal.example/") } == 1, "\(rig.warnings)")
    }

    @Test func aSourceThatCannotStartStopsTheCoreAndEveryOtherSourceIsCancelled() {
        let (before, refusing) = (ScriptedSource(), ScriptedSource())
        refusing.refusal = SystemError("open(/dev/test-source)", errno: 2)  // ENOENT
        #expect(throws: SystemError.self) { try Rig(sources: [before, refusing]) }
        #expect(before.context != nil && before.cancelled, "started, then cancelled with the core that did not start")
    }

    @Test func propertyReadsAnswerFromTheUpdateLastTold() throws {
        let rig = try Rig()
        let before = rig.core.snapshot.generation
        rig.kernel.reads.append(Self.otherLink)
        rig.loop.watch(rig.kernel.monitorDescriptor)?.handler(.readable)
        #expect(rig.core.snapshot.generation == before, "applied but not yet told")
        rig.loop.runDeferred()
        #expect(rig.core.snapshot.generation == rig.updates.last?.generation && rig.core.snapshot.generation > before)
    }
}

extension Array {
    /// The one element; nil when there are none or several.
    fileprivate var only: Element? { count == 1 ? first : nil }
}
