import Foundation
import Testing
@testable import Reachability

/// issue 16: reachd takes the rtnetlink socket systemd hands it (reachd.socket: `ListenNetlink=`,
/// `ReceiveBuffer=` set by PID 1 past rmem_max) instead of opening its own, says so with the
/// buffer's size, joins the rule groups itself, and follows links and rules through it. What
/// overran counts in GetStatus and `reachctl status --verbose`.
@Suite(rootOnly)
struct SocketActivationTests {
    /// What PID 1 does for reachd.socket: a NETLINK_ROUTE socket in the groups of the mask 1361
    /// (link, IPv4/IPv6 addresses and routes), with a buffer forced past rmem_max. Returns a
    /// duplicate the caller owns.
    static func socketUnitSocket(in ns: TestNamespace, bytes: Int32) throws -> Int32 {
        let socket = try NetlinkSocket(nonBlocking: false, namespacePath: ns.path)
        try socket.join(groups: [1, 5, 7, 9, 11])
        socket.setReceiveBuffer(bytes: bytes)
        return dup(socket.fd)
    }

    /// reachd started as systemd starts a socket-activated service: `socket` as fd 3,
    /// LISTEN_FDS=1 and LISTEN_PID its own pid (the shell sets it to its pid, then becomes
    /// reachd). Its stderr is collected.
    final class ActivatedDaemon: Sendable {
        private let child: ChildProcess

        convenience init(_ harness: DaemonHarness, _ ns: TestNamespace, socket: Int32) throws {
            try self.init(harness, ns, sockets: [socket])
        }

        /// `sockets` as fds 3, 4, ...; `names` as LISTEN_FDNAMES (FileDescriptorName=) when given;
        /// `said`: LISTEN_FDS, when it is to claim another number than `sockets` holds.
        init(_ harness: DaemonHarness, _ ns: TestNamespace, sockets: [Int32], names: [String]? = nil, said: Int? = nil) throws {
            var environment = ProcessInfo.processInfo.environment
            for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "JOURNAL_STREAM"] {
                environment.removeValue(forKey: key)
            }
            environment["NOTIFY_SOCKET"] = harness.notify.path
            environment["LISTEN_FDS"] = "\(said ?? sockets.count)"
            if let names { environment["LISTEN_FDNAMES"] = names.joined(separator: ":") }
            let arguments = [productPath("reachd"), "--bus-address", harness.address, "--netns", ns.name, "--config-dir", harness.configDirectory]
            child = try ChildProcess(
                "/bin/sh", ["-c", "LISTEN_PID=$$ exec \"$@\"", "sh"] + arguments, environment: environment, passing: sockets)
        }

        /// What reachd logged so far.
        var text: String { child.errorOutput }

        var pid: pid_t { child.pid }

        func signal(_ number: Int32) { child.signal(number) }

        func stop() { child.kill() }
    }

    @Test func reachdAdoptsTheSocketUnitsSocketAndFollowsLinksAndRulesThroughIt() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let fd = try Self.socketUnitSocket(in: scenario.ns, bytes: 3 << 20)
        let daemon = try ActivatedDaemon(harness, scenario.ns, socket: fd)
        close(fd)
        defer { daemon.stop() }
        try await harness.ready()
        // 3 MiB forced; the kernel reports twice that.
        #expect(daemon.text.contains("netlink: receive buffer 6144 KiB (socket from reachd.socket, sized by systemd)"), "\(daemon.text)")

        let client = try harness.connect()
        // A carrier loss arrives through the adopted socket (its link group)...
        try scenario.carrier(false)
        try await eventually("not online after carrier loss") { try DaemonHarness.property(client, "State") as String != "online" }
        try scenario.carrier(true)
        try await eventually("online again") { try DaemonHarness.property(client, "State") as String == "online" }
        // ... and a rule change alone, through the rule group reachd joined itself.
        try scenario.ns.ip("rule add pref 100 prohibit")
        try await eventually("not online under a prohibit rule") { try DaemonHarness.property(client, "State") as String != "online" }
        try scenario.ns.ip("rule del pref 100")
        try await eventually("online once the rule is gone") { try DaemonHarness.property(client, "State") as String == "online" }
    }

    @Test func withoutTheSocketUnitReachdSaysItsOwnBufferIsClamped() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        // As root the test's reachd can force its own buffer; either way the line says which.
        let lines = harness.daemonErrorLines
        #expect(lines.contains { $0.contains("netlink: receive buffer") && $0.contains("(own socket") }, "\(lines)")
    }

    /// A netlink socket of another protocol passes sd_is_socket(fd, AF_NETLINK, 0, -1) but would
    /// never carry a link change: reachd says so and watches through a socket of its own.
    @Test func aPassedSocketThatIsNotRtnetlinkIsRefusedByNameAndReachdOpensItsOwn() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let generic = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 16)  // NETLINK_GENERIC
        try #require(generic >= 0, "socket(AF_NETLINK, NETLINK_GENERIC): errno \(errno)")
        let daemon = try ActivatedDaemon(harness, scenario.ns, socket: generic)
        close(generic)
        defer { daemon.stop() }
        try await harness.ready()
        #expect(daemon.text.contains("systemd passed file descriptor 3, not an rtnetlink socket"), "\(daemon.text)")
        #expect(daemon.text.contains("netlink: receive buffer") && daemon.text.contains("(own socket"), "\(daemon.text)")
        let client = try harness.connect()
        try scenario.carrier(false)
        try await eventually("not online after carrier loss") { try DaemonHarness.property(client, "State") as String != "online" }
    }

    /// LISTEN_FDS=1 with nothing open as descriptor 3 (a wrapper that closed it): reachd says
    /// so, takes nothing, and runs; no later close can hit a descriptor it opened under that number.
    @Test func aDescriptorSaidPassedButNotOpenIsIgnoredNotClosedLater() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let daemon = try ActivatedDaemon(harness, scenario.ns, sockets: [], names: ["metrics"], said: 1)
        defer { daemon.stop() }
        try await harness.ready()
        #expect(daemon.text.contains("systemd's LISTEN_FDS=1 names descriptors reachd was not given"), "\(daemon.text)")
        let client = try harness.connect()
        try scenario.carrier(false)
        try await eventually("not online after carrier loss") { try DaemonHarness.property(client, "State") as String != "online" }
        #expect(kill(daemon.pid, 0) == 0, "reachd still runs: \(daemon.text)")
    }

    /// reachd.socket lives on while reachd restarts: what it queued meanwhile (here up to an
    /// overrun) predates reachd's first dump, so reachd reads it empty first. That is no overrun
    /// of reachd's and costs no dump past the first sync, and the state is the kernel's.
    @Test func whatTheSocketQueuedBeforeReachdStartedIsDiscardedNotCounted() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let fd = try Self.socketUnitSocket(in: scenario.ns, bytes: 4096)
        defer { close(fd) }
        try OverrunTests.burst(scenario.ns, pairs: 40, prefix: "sq")
        try scenario.ns.ip("link del sq0")  // one the queue still shows as created
        let daemon = try ActivatedDaemon(harness, scenario.ns, socket: fd)
        defer { daemon.stop() }
        try await harness.ready()
        let counters = try #require(try ReachabilityClient(bus: .address(harness.address)).fullStatus().counters)
        #expect(counters == MirrorCounters(overruns: 0, resyncs: 1), "\(daemon.text)")
        let names = Set(try ReachabilityClient(bus: .address(harness.address)).interfaces().map(\.name))
        #expect(names.count == 2 + 78 && !names.contains("sq0") && names.contains("sq1"), "\(names.sorted())")
    }

    /// An overrun of the adopted socket (a 4 KiB buffer, reachd stopped during a burst) shows in
    /// GetStatus to an independent client (busctl) and in `reachctl status --verbose`, text and
    /// JSON; and reachd equals the kernel again.
    @Test func overrunsAndResyncsShowInGetStatusAndReachctlStatusVerbose() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let fd = try Self.socketUnitSocket(in: scenario.ns, bytes: 4096)
        let daemon = try ActivatedDaemon(harness, scenario.ns, socket: fd)
        close(fd)
        defer { daemon.stop() }
        try await harness.ready()

        func busctlCounters() throws -> (overruns: UInt64?, resyncs: UInt64?, types: [String?]) {
            let status = try DaemonHarness.jsonData(try harness.busctlCall("GetStatus"))
            let dictionary = try #require(status.first as? [String: Any], "\(status)")
            func entry(_ key: String) -> [String: Any]? { dictionary[key] as? [String: Any] }
            return (DaemonHarness.jsonNumber(entry("Overruns")?["data"]), DaemonHarness.jsonNumber(entry("Resyncs")?["data"]),
                    [entry("Overruns")?["type"] as? String, entry("Resyncs")?["type"] as? String])
        }
        let before = try busctlCounters()
        #expect(before.overruns == 0 && before.resyncs == 1 && before.types == ["t", "t"], "\(before)")

        daemon.signal(SIGSTOP)
        try OverrunTests.burst(scenario.ns, pairs: 40, prefix: "sv")
        daemon.signal(SIGCONT)
        try await eventually("an overrun and a resync in GetStatus") {
            let counters = try busctlCounters()
            return (counters.overruns ?? 0) >= 1 && (counters.resyncs ?? 0) >= 2
        }
        let after = try busctlCounters()
        try await eventually("every link of the burst listed") {
            try ReachabilityClient(bus: .address(harness.address)).interfaces().count == 2 + 80
        }

        let common = ["status", "--verbose", "--daemon", "--bus-address", harness.address]
        let json = try reachctl(common + ["--json"])
        #expect(json.status == 0, "\(json)")
        let object = try json.json()
        #expect(DaemonHarness.jsonNumber(object["overruns"]) == after.overruns, "\(json.stdout)")
        #expect(DaemonHarness.jsonNumber(object["resyncs"]) == after.resyncs, "\(json.stdout)")
        let text = try reachctl(common)
        #expect(text.stdout.contains("\nNetlink: \(after.overruns ?? 0) overrun(s), \(after.resyncs ?? 0) resync(s)"), "\(text)")
        // Without --verbose neither appears.
        let plain = try reachctl(["status", "--json", "--daemon", "--bus-address", harness.address])
        #expect(!plain.stdout.contains("overruns"), "\(plain)")
    }
}
