import Foundation
import Testing
@testable import Reachability

/// Sleep and resume: a stand-in logind owns org.freedesktop.login1 on the test's bus and emits the
/// real `PrepareForSleep(b)` signal, both edges; reachd resyncs its kernel mirror (the Resyncs
/// counter), probes again at once (the probe server sees the request, long before the
/// interval would have sent it), forgets cached DNS answers and asks watched hosts again, and says
/// so in its log. A signal from anyone else is not logind.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/python3"), "needs python3-gi"))
struct SleepResumeTests {
    /// Owns org.freedesktop.login1 on the bus at argv[1], then emits PrepareForSleep(true) and,
    /// a moment later, PrepareForSleep(false), as logind does around a suspend; with argv[2]
    /// `asleep`, only the first (a host that went to sleep and has not woken up yet).
    static let logind = """
        import sys, gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
        bus = Gio.DBusConnection.new_for_address_sync(sys.argv[1], flags, None, None)
        loop = GLib.MainLoop()
        def emit(sleeping):
            bus.emit_signal(None, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
                GLib.Variant("(b)", (sleeping,)))
            bus.flush_sync(None)
            print("PrepareForSleep", sleeping, flush=True)
        def owned(connection, name):
            emit(True)
            if sys.argv[2:] != ["asleep"]:
                GLib.timeout_add(300, lambda: (emit(False), False)[1])
        Gio.bus_own_name_on_connection(bus, "org.freedesktop.login1", Gio.BusNameOwnerFlags.NONE, owned, None)
        loop.run()
        """

    static func resyncs(_ harness: DaemonHarness) throws -> UInt64 {
        try ReachabilityClient(bus: .address(harness.address)).fullStatus().counters?.resyncs ?? 0
    }

    @Test func aResumeAnnouncedByLogindResyncsAndProbesAtOnce() async throws {
        // Interval=60m: only the resume can send the second probe within the test.
        let setup = try await ConnectivityProbeTests.Setup(config: "[Connectivity]\nURL=http://192.0.2.1:8204/\nTimeout=2s\nInterval=60m\n")
        try await setup.waitFor("full")
        let harness = setup.harness
        let probes = setup.requests.count
        let resyncs = try Self.resyncs(harness)

        // Not logind: the same signal from a connection that does not own its name.
        let impostor = try harness.busctl(["emit", "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep", "b", "false"])
        #expect(impostor.status == 0, "\(impostor.stderr)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(!harness.daemonErrorLines.contains { $0.contains("resumed from sleep") }, "\(harness.daemonErrorLines)")
        #expect(setup.requests.count == probes)

        try await Self.suspendAndResume(harness)
        #expect(harness.daemonErrorLines.contains { $0.contains("the host goes to sleep (logind)") })
        try await eventually("a resync; \(harness.diagnostics)") { try Self.resyncs(harness) == resyncs + 1 }
        try await eventually("a probe; requests \(setup.requests)") { setup.requests.count == probes + 1 }
        try await setup.waitFor("full")
        // Once: the sleep's first edge starts nothing.
        try await Task.sleep(for: .milliseconds(300))
        #expect(try Self.resyncs(harness) == resyncs + 1)
        #expect(setup.requests.count == probes + 1, "\(setup.requests)")
    }

    /// A timer that fires on resume runs `reachctl wait --internet`: the verdict from before the
    /// sleep (full) is dropped when reachd learns of the resume, so the wait waits for the new
    /// probe's answer instead of passing on the old one. Here the network does not answer after
    /// the resume (the far end drops its replies silently), so the wait times out; once it
    /// answers again, the new verdict (full) ends the next wait.
    /// On threads of its own (`.ownThreads`), so that its steps between the resume and the
    /// route's return are not held back by other tests' blocking calls: the probe's SYN goes
    /// again 1, 3, 7, 15, 31 and 63 s after it began, and only one of those ends the wait.
    @Test(.ownThreads) func aWaitForTheInternetAfterAResumeNeverPassesOnTheVerdictFromBeforeIt() async throws {
        // Timeout=120s (the most): the new probe is still out whenever the test looks, however
        // loaded the machine; its SYN's retransmission ends it once the far end answers again.
        let setup = try await ConnectivityProbeTests.Setup(config: "[Connectivity]\nURL=http://192.0.2.1:8204/\nTimeout=120s\nInterval=60m\n")
        try await setup.waitFor("full")
        let harness = setup.harness
        let wait = ["wait", "--internet", "--daemon", "--bus-address", harness.address]
        #expect(try reachctl(wait + ["--timeout", "2s"]).status == 0, "before the sleep the internet answers")
        // While the host sleeps it moves to a network that does not answer: the far end's
        // replies to this host vanish (no RST, no ICMP), so the new probe gets no answer.
        try setup.scenario.far.ip("route add blackhole 192.0.2.2/32")

        try await Self.suspendAndResume(harness)
        let seen = try setup.connectivity()
        #expect(seen == "unknown", "the verdict from before the sleep is gone: \(seen); \(harness.daemonErrorLines)")
        let after = try reachctl(wait + ["--timeout", "1s"])
        #expect(after.status == 1, "waited for the new verdict: \(after.stdout) \(after.stderr)")
        #expect(after.stderr.contains("the internet to answer (connectivity full); saw: "), "\(after.stderr)")

        // The network answers: the probe's next SYN gets through, and the wait ends on it. The
        // next may be up to 32 s away (the one at 63 s, when the route came back after 31 s),
        // so the wait outlasts that gap (a 30 s wait gave up in one fresh-clone run, beside the
        // main pass's tests).
        try setup.scenario.far.ip("route del blackhole 192.0.2.2/32")
        let answered = try reachctl(wait + ["--timeout", "70s"])
        #expect(answered.status == 0, "\(answered.stderr); \(harness.daemonErrorLines)")
        #expect(harness.daemonErrorLines.filter { $0.contains("connectivity: full") }.count == 2, "\(harness.daemonErrorLines)")
    }

    /// logind's warning that the host goes to sleep drops the verdict at once: a question asked
    /// after the resume but before reachd hears of it (the timer's service may well come first)
    /// finds no verdict from before the sleep.
    @Test func theVerdictIsDroppedWhenLogindWarnsOfTheSleep() async throws {
        let setup = try await ConnectivityProbeTests.Setup(config: "[Connectivity]\nURL=http://192.0.2.1:8204/\nTimeout=2s\nInterval=60m\n")
        try await setup.waitFor("full")
        let harness = setup.harness
        let logind = try ChildProcess("/usr/bin/python3", ["-c", Self.logind, harness.address, "asleep"])
        defer { logind.kill() }
        try await eventually("reachd hears of the sleep; logind \(logind.lines) \(logind.errorLines); \(harness.diagnostics)") {
            harness.daemonErrorLines.contains { $0.contains("the host goes to sleep (logind)") }
        }
        try await setup.waitFor("unknown", within: .seconds(2))
        let wait = try reachctl(["wait", "--internet", "--timeout", "500ms", "--daemon", "--bus-address", harness.address])
        #expect(wait.status == 1, "\(wait.stdout) \(wait.stderr)")
        #expect(!harness.daemonErrorLines.contains { $0.contains("resumed from sleep") })
    }

    /// Runs the stand-in logind on `harness`'s bus until reachd says it resumed.
    static func suspendAndResume(_ harness: DaemonHarness) async throws {
        let logind = try ChildProcess("/usr/bin/python3", ["-c", Self.logind, harness.address])
        defer { logind.kill() }
        try await eventually("logind's resume; logind \(logind.lines) \(logind.errorLines); \(harness.diagnostics)") {
            harness.daemonErrorLines.contains { $0.contains("the host resumed from sleep (logind)") }
        }
    }

    @Test func aResumeForgetsCachedDNSAnswersAndAsksWatchedHostsAgain() async throws {
        let dns = try DNSScenario(nameserver: DNSScenario.answering)
        // A TTL of 5 minutes: without the resume, nothing would ask DNS again during the test.
        let server = try DNSMasqServer(in: dns.server, address: DNSScenario.answering, records: ["far.test": ["203.0.113.10"]], ttl: 300)
        defer { withExtendedLifetime(server) {} }
        let harness = try DaemonHarness(dns.client, resolvConf: dns.resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try harness.connect()
        let watch = try DaemonHarness.watch(client, "far.test")
        try await eventually("the watch's first answer; \(harness.diagnostics)") {
            try DaemonHarness.property(client, "Flags", path: watch, interface: DaemonHarness.watchInterface) as UInt32 != 0
        }
        // A check now is answered from the cache: DNS hears nothing more.
        let asked = server.queries(for: "far.test")
        #expect(asked >= 1)
        _ = try harness.busctlCall("CheckHost", "su", "far.test", "0")
        #expect(server.queries(for: "far.test") == asked, "cached")

        try await Self.suspendAndResume(harness)
        try await eventually("the watched host asked again; \(server.queries(for: "far.test")) queries") {
            server.queries(for: "far.test") > asked
        }
        #expect(try DaemonHarness.property(client, "Flags", path: watch, interface: DaemonHarness.watchInterface) as UInt32 != 0)
    }

    @Test func theClocksTellASleepOfAtLeastTwoSeconds() {
        var clock = SleepClock(suspendedMicroseconds: 5_000_000)
        #expect(clock.slept(suspendedMicroseconds: 5_000_000) == nil, "awake: the gap stays")
        #expect(clock.slept(suspendedMicroseconds: 6_500_000) == nil, "1.5 s is no sleep")
        #expect(clock.slept(suspendedMicroseconds: 66_500_000) == .seconds(60))
        #expect(clock.slept(suspendedMicroseconds: 66_500_000) == nil, "told once")
        // The real clocks of a machine that is not sleeping now.
        var real = SleepClock()
        #expect(real.slept() == nil)
    }
}
