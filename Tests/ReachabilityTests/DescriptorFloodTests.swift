import Foundation
import Testing
@testable import Reachability

/// issue 50: no caller can end reachd. The bus passes file descriptors with any message, whatever
/// its signature, and reachd held a call's message (so its descriptors) until it answered: some
/// 70 held host checks carrying 16 each took it past systemd's soft limit of 1024, and it exited.
/// reachd now declines descriptors when it connects, so the broker refuses such calls on the
/// sender's side. Unprivileged users attack it here with raw D-Bus bytes (no client library
/// would send them), under the soft limit systemd gives a service.
@Suite(rootOnly, .serialized, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/setpriv"), "needs setpriv"))
struct DescriptorFloodTests {
    /// `ADDRESS METHOD AT-ONCE SECONDS FDS MODE`: connects as its user, agrees on descriptor
    /// passing with the broker, says Hello, sends AT-ONCE calls of METHOD (CheckAddress, CheckHost
    /// of one name, whose one lookup they share, GetHistory(0) or Explain("")) back to back, each carrying FDS descriptors, then
    /// keeps up to WINDOW (64 unless given) more outstanding for SECONDS. MODE `answers` waits for every answer and
    /// prints `{"sent": N, "answers": {ERROR-NAME or "return": count}}`; MODE `hold:S` prints
    /// `sent N`, keeps its calls unanswered for S seconds, then exits without reading a byte.
    static let client = #"""
        import array, json, os, re, socket, struct, sys, threading, time
        address, method, at_once, seconds, fds, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
        window = int(sys.argv[7]) if len(sys.argv) > 7 else 64
        negotiate_fds = True
        """# + "\n" + RawDBusClient.preamble + "\n" + #"""
        riders = array.array("i", [os.open("/dev/null", os.O_RDONLY) for _ in range(fds)])
        answers, lock = {}, threading.Lock()
        counted = [0]
        def read():
            try:
                while True:
                    kind, data = receive()
                    if kind not in (2, 3): continue
                    name = re.search(rb"org\.[A-Za-z0-9.]+Error\.[A-Za-z]+", data) if kind == 3 else None
                    key = name.group(0).decode() if name else "return"
                    with lock:
                        answers[key] = answers.get(key, 0) + 1
                        counted[0] += 1
            except (EOFError, OSError):
                pass
        if mode == "answers": threading.Thread(target=read, daemon=True).start()
        sent = [0]
        def send():
            serial = 2 + sent[0]
            if method == "CheckHost":
                body = string(b"", "held.flood.test")
                body = pad(body, 4) + struct.pack("<I", 20000)
                sig = "su"
            elif method == "GetHistory":
                body, sig = struct.pack("<Q", 0), "t"
            elif method == "Explain":
                body, sig = string(b"", ""), "s"
            else:
                body, sig = string(b"", "127.0.0.1"), "s"
            call = message(serial, "org.reachd.Reachability1", "/org/reachd/Reachability1", "org.reachd.Reachability1", method, sig, body, fds)
            if fds: sock.sendmsg([call], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, riders)])
            else: sock.sendall(call)
            sent[0] += 1
        start = time.monotonic()
        for _ in range(at_once): send()
        while time.monotonic() - start < seconds:
            with lock: outstanding = sent[0] - counted[0]
            if outstanding < window: send()
            else: time.sleep(0.001)
        if mode.startswith("hold:"):
            print("sent %d" % sent[0], flush=True)
            time.sleep(float(mode[5:]))
            os._exit(0)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with lock:
                if counted[0] >= sent[0]: break
            time.sleep(0.01)
        with lock: print(json.dumps({"sent": sent[0], "answers": answers}), flush=True)
        """#

    /// reachd's open descriptors now.
    static func descriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// reachd under the soft limit systemd gives services (1024; the hard limit as it is).
    static func limitLikeSystemd(_ pid: pid_t) throws {
        let set = try DaemonHarness.execute("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=1024:"])
        let now = try DaemonHarness.execute("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile", "--noheadings", "--output=SOFT"])
        guard set.status == 0, now.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1024" else {
            throw CommandFailed(command: "prlimit", status: set.status, output: set.stderr + now.stdout)
        }
    }

    /// Starts the attacker as `uid`.
    static func attacker(
        _ harness: DaemonHarness, uid: Int, _ method: String, atOnce: Int, seconds: Int, fds: Int, mode: String, window: Int = 64
    ) throws -> ChildProcess {
        try ChildProcess("/usr/bin/setpriv", [
            "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", client, harness.address, method,
            "\(atOnce)", "\(seconds)", "\(fds)", mode, "\(window)",
        ])
    }

    /// What an `answers` attacker printed: how many it sent, and its answers by error name.
    static func summary(_ process: ChildProcess) throws -> (sent: Int, answers: [String: Int]) {
        let line = try #require(process.lines.last { $0.hasPrefix("{") }, "\(process.lines) \(process.errorLines)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return (object["sent"] as? Int ?? 0, object["answers"] as? [String: Int] ?? [:])
    }

    /// The issue's 60 s; REACHD_FLOOD_SECONDS shortens it while working on the test.
    static let floodSeconds = Int(ProcessInfo.processInfo.environment["REACHD_FLOOD_SECONDS"] ?? "") ?? 60

    static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
    static let brokerRefusals: Set = [notSupported, "org.freedesktop.DBus.Error.LimitsExceeded"]

    /// A sample each 20 ms of reachd's descriptors while `running`, the largest seen.
    static func watchDescriptors(_ pid: pid_t, while running: () -> Bool) async throws -> Int {
        var most = 0
        while running() {
            most = max(most, descriptors(pid))
            try await Task.sleep(for: .milliseconds(20))
        }
        return most
    }

    /// How long after `since` reachd's descriptors came back to `idle` (at most `bound`).
    static func backToIdle(_ pid: pid_t, _ idle: Int, within bound: Duration) async throws -> Duration? {
        let since = ContinuousClock.now
        while ContinuousClock.now - since < bound {
            if descriptors(pid) <= idle { return ContinuousClock.now - since }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// The issue's flood: 10,000 calls from nobody, each carrying 16 descriptors, at once and then
    /// in a loop for 60 s, beside two more users doing the same with fewer: every one is refused
    /// by the broker before reachd, whose descriptors never move, while root's CheckAddress
    /// through the bus keeps its p99 within 50 ms.
    @Test func callsCarryingDescriptorsNeverReachReachdFromSeveralUsers() async throws {
        let scenario = try DaemonBusTests.Scenario("fdflood")
        let harness = try DaemonHarness(scenario.ns, anyUser: true)
        defer { withExtendedLifetime(scenario) { harness.shutdown() } }
        try await harness.ready()
        let pid = try #require(harness.daemon?.pid)
        try Self.limitLikeSystemd(pid)
        let idle = Self.descriptors(pid)
        let origin = ContinuousClock.now
        let address = harness.address
        let root = HostileCallerTests.Prober(origin: origin, setUp: { try? BusConnection(.address(address), description: "prober") }) { bus in
            _ = try? DaemonHarness.call(bus, "CheckAddress") { message throws(BusError) in try message.append("127.0.0.1") }
        }
        try await Task.sleep(for: .milliseconds(300))
        let began = ContinuousClock.now - origin
        let users = [(65534, 10_000), (33, 2_000), (1, 2_000)]  // nobody, www-data, daemon
        let attackers = try users.map { uid, count in
            try Self.attacker(harness, uid: uid, "CheckAddress", atOnce: count, seconds: Self.floodSeconds, fds: 16, mode: "answers")
        }
        let most = try await Self.watchDescriptors(pid) { attackers.contains { $0.isRunning } }
        let ended = ContinuousClock.now - origin
        let settled = try await Self.backToIdle(pid, idle, within: .seconds(1))
        let calls = HostileCallerTests.Overlap(root.stop(), from: began, to: ended)
        let p99 = Self.percentile99(root: calls)
        for (attacker, (uid, count)) in zip(attackers, users) {
            let (sent, answers) = try Self.summary(attacker)
            print("descriptor flood: uid \(uid) sent \(sent): \(answers)")
            #expect(sent > count, "uid \(uid) kept sending after its \(count) at once")
            // The broker refuses them (NotSupported: reachd takes no descriptors; LimitsExceeded:
            // the sender's queue of them is full), never reachd, which never answers one.
            #expect(answers[Self.notSupported, default: 0] > 0, "uid \(uid)'s calls refused by the broker: \(answers)")
            #expect(Set(answers.keys).isSubset(of: Self.brokerRefusals) && answers.values.reduce(0, +) == sent, "uid \(uid): \(answers)")
        }
        print("descriptor flood: reachd's descriptors \(idle) idle, \(most) at most, back in \(settled.map { "\($0)" } ?? "never"); root's CheckAddress \(calls), p99 \(p99)")
        #expect(kill(pid, 0) == 0, "reachd still runs: \(harness.diagnostics)")
        #expect(most <= idle + 2, "reachd's descriptors rose from \(idle) to \(most)")
        #expect(settled != nil, "reachd's descriptors back to \(idle) within 1 s: \(Self.descriptors(pid))")
        #expect(calls.count >= 100, "root's calls kept being answered: \(calls)")
        #expect(p99 <= .milliseconds(50), "root's CheckAddress p99 \(p99)")
        #expect(try DaemonBusTests.status(try harness.connect()) == DaemonBusTests.online)
    }

    static func percentile99(root overlap: HostileCallerTests.Overlap) -> Duration {
        let sorted = overlap.durations.sorted()
        guard !sorted.isEmpty else { return .zero }
        return sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
    }
}

extension DescriptorFloodTests {
    /// Host checks held into a black-holed nameserver: nobody keeps 1,000 of them waiting on eight
    /// connections (the broker lets one wait for 128 answers) and sends 1,000 more carrying 16
    /// descriptors each, then dies without reading an answer. The descriptor-carrying ones are
    /// refused by the broker; the held ones cost reachd no descriptor of their own, only its
    /// bounded lookups' sockets (at most 6 per lookup, MaxConcurrentLookups=64: reachd.conf(5)),
    /// and die with their caller: every descriptor is back within 1 s.
    @Test func heldHostChecksStayWithinTheirBoundsAndDieWithTheirCaller() async throws {
        let scenario = try DaemonBusTests.Scenario("fdheld")
        let hole = try DNSBlackHole(in: scenario.far, address: "192.0.2.1")
        defer { withExtendedLifetime(hole) {} }
        let resolvConf = FileManager.default.temporaryDirectory.appendingPathComponent("resolv-\(scenario.ns.name).conf").path
        try "nameserver 192.0.2.1\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: resolvConf) }
        let harness = try DaemonHarness(scenario.ns, resolvConf: resolvConf, anyUser: true)
        defer { withExtendedLifetime(scenario) { harness.shutdown() } }
        try await harness.ready()
        let pid = try #require(harness.daemon?.pid)
        try Self.limitLikeSystemd(pid)
        // A host check first: what starts with the first one is not what held calls cost.
        _ = try harness.busctlCall("CheckHost", "su", "warm.flood.test", "50")
        let idle = Self.descriptors(pid)
        let resident = HostileCallerTests.memory(pid, "VmRSS")
        try "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)

        let riders = try (0..<8).map { _ in
            try Self.attacker(harness, uid: 65534, "CheckHost", atOnce: 125, seconds: 0, fds: 16, mode: "answers")
        }
        let holders = try (0..<8).map { _ in
            try Self.attacker(harness, uid: 65534, "CheckHost", atOnce: 125, seconds: 0, fds: 0, mode: "hold:6")
        }
        let most = try await Self.watchDescriptors(pid) { (riders + holders).contains { $0.isRunning } }
        let settled = try await Self.backToIdle(pid, idle, within: .seconds(1))
        let grown = HostileCallerTests.memory(pid, "VmHWM") - resident
        for rider in riders {
            let (sent, answers) = try Self.summary(rider)
            #expect(sent == 125 && answers == [Self.notSupported: 125], "refused by the broker: \(answers)")
        }
        #expect(holders.allSatisfy { $0.lines.contains("sent 125") }, "\(holders.map(\.lines))")
        let metrics = try #require(DaemonHarness.jsonData(try harness.busctlCall("GetMetrics")).first as? String)
        let abandoned = MetricsDaemonTests.value(metrics, "reachd_host_checks_abandoned_total") ?? 0
        // Past the user's burst of new lookups, the rest are refused at once (rate_limited), as
        // past its share of 1,024 they would be: what is not refused is held, then abandoned.
        let refused = ["share_full", "rate_limited", "in_flight_cap"].compactMap {
            MetricsDaemonTests.value(metrics, "reachd_host_checks_refused_total{reason=\"\($0)\"}")
        }.reduce(0, +)
        let lookupSockets = 6 * 64
        print("held checks: reachd's descriptors \(idle) idle, \(most) at most, back in \(settled.map { "\($0)" } ?? "never"); peak memory +\(grown >> 10) KiB; \(Int(abandoned)) held then abandoned, \(Int(refused)) refused")
        #expect(kill(pid, 0) == 0, "reachd still runs: \(harness.diagnostics)")
        #expect(most <= idle + lookupSockets, "reachd's descriptors rose from \(idle) to \(most), past its lookups' \(lookupSockets)")
        #expect(abandoned >= 32 && abandoned + refused == 1000, "held until the caller died, then abandoned: \(abandoned), refused \(refused)")
        #expect(settled != nil, "reachd's descriptors back to \(idle) within 1 s of the caller's death: \(Self.descriptors(pid))")
        #expect(grown < 8 << 20, "reachd's peak resident memory rose \(grown) bytes")
        // Every ledger of what callers hold reads 0 once they are gone (issue 44): the calls
        // whose reply is owed, the checks and their lookups, the clients holding anything.
        for ledger in ["reachd_host_check_calls_in_flight", "reachd_host_checks_running", "reachd_bus_clients_holding"] {
            #expect(MetricsDaemonTests.value(metrics, ledger) == 0, "\(ledger) after every caller left: \(MetricsDaemonTests.value(metrics, ledger) ?? -1)")
        }
        #expect(try DaemonBusTests.status(try harness.connect()) == DaemonBusTests.online)
    }
}

extension DescriptorFloodTests {
    /// More lookups configured than the soft limit leaves room for: reachd runs what fits and says
    /// so, rather than meet EMFILE when callers fill them.
    @Test func lookupsAreKeptWithinTheDescriptorLimit() async throws {
        #expect(DescriptorBudget.lookups(64, limit: 1024) == 64)
        #expect(DescriptorBudget.lookups(4096, limit: 1024) == (1024 - DescriptorBudget.fixed) / 6)
        #expect(DescriptorBudget.lookups(4096, limit: 32768) == 4096)
        #expect(DescriptorBudget.lookups(8, limit: 10) == 1)
        let scenario = try DaemonBusTests.Scenario("fdlimit")
        let harness = try DaemonHarness(scenario.ns)
        defer { withExtendedLifetime(scenario) { harness.shutdown() } }
        try await harness.ready()
        let pid = try #require(harness.daemon?.pid)
        let set = try DaemonHarness.execute("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=256:"])
        #expect(set.status == 0, "\(set)")
        try "[Checks]\nMaxConcurrentLookups=4096\n".write(toFile: harness.configDirectory + "/reachd.conf", atomically: true, encoding: .utf8)
        kill(pid, SIGHUP)
        let expected = "MaxConcurrentLookups=4096 needs 24704 file descriptors, more than the soft limit of 256 (LimitNOFILE=): running 21 lookups at once"
        try await eventually("the warning in reachd's log") { harness.daemonErrorLines.contains { $0.contains(expected) } }
    }
}
