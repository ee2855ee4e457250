import Foundation
import Synchronization
import Testing
@testable import Reachability

/// issue 16: reachd takes the rtnetlink socket systemd hands it (reachd.socket: `ListenNetlink=`,
/// `ReceiveBuffer=` set by PID 1 past rmem_max) instead of opening its own, says so with the
/// buffer's size, joins the rule groups itself, and follows links and rules through it.
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

    /// reachd as systemd starts it: the socket as fd 3, LISTEN_FDS=1 and LISTEN_PID its own pid
    /// (the shell sets it to its pid, then becomes reachd). Returns the pid and its stderr.
    static func spawn(_ arguments: [String], socket: Int32, environment: [String: String]) throws -> (pid: pid_t, stderr: Int32) {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw SystemError("pipe") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, socket, 3)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let argv = ["/bin/sh", "-c", "LISTEN_PID=$$ exec \"$@\"", "sh"] + arguments
        let env = environment.map { "\($0.key)=\($0.value)" }
        var cArgv = argv.map { strdup($0) } + [nil]
        var cEnv = env.map { strdup($0) } + [nil]
        defer { (cArgv + cEnv).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, "/bin/sh", &actions, nil, &cArgv, &cEnv)
        close(pipeEnds[1])
        guard result == 0 else { throw SystemError("posix_spawn", errno: result) }
        return (pid, pipeEnds[0])
    }

    @Test func reachdAdoptsTheSocketUnitsSocketAndFollowsLinksAndRulesThroughIt() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let fd = try Self.socketUnitSocket(in: scenario.ns, bytes: 3 << 20)
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] {
            environment.removeValue(forKey: key)
        }
        environment["NOTIFY_SOCKET"] = harness.notify.path
        environment["LISTEN_FDS"] = "1"
        let (pid, stderr) = try Self.spawn(
            [productPath("reachd"), "--bus-address", harness.address, "--netns", scenario.ns.name, "--config-dir", harness.configDirectory],
            socket: fd, environment: environment)
        close(fd)
        defer {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            close(stderr)
        }
        let log = Mutex("")
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(stderr, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count <= 0 { return }
                log.withLock { $0 += String(decoding: buffer[0..<count], as: UTF8.self) }
            }
        }
        try await harness.ready()
        let text = log.withLock { $0 }
        // 3 MiB forced; the kernel reports twice that.
        #expect(text.contains("netlink: receive buffer 6144 KiB (socket from reachd.socket, sized by systemd)"), "\(text)")

        let client = try harness.connect()
        // A carrier loss arrives through the adopted socket (its link group)...
        try scenario.carrier(false)
        try await Self.eventually("not online after carrier loss") { try DaemonHarness.property(client, "State") as String != "online" }
        try scenario.carrier(true)
        try await Self.eventually("online again") { try DaemonHarness.property(client, "State") as String == "online" }
        // ... and a rule change alone, through the rule group reachd joined itself.
        try scenario.ns.ip("rule add pref 100 prohibit")
        try await Self.eventually("not online under a prohibit rule") { try DaemonHarness.property(client, "State") as String != "online" }
        try scenario.ns.ip("rule del pref 100")
        try await Self.eventually("online once the rule is gone") { try DaemonHarness.property(client, "State") as String == "online" }
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

    static func eventually(_ what: String, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + waitLimit
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
