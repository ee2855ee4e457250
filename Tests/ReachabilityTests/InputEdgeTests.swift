import Foundation
import Testing
@testable import Reachability

/// issue 16: inputs found from outside that must get one clear answer everywhere.
@Suite("Numeric address forms")
struct NumericFormTests {
    @Test(arguments: ["127.1", "2130706433", "0x7f.0.0.1", "0X7F.1", "010.0.0.1", "10.1", "0x7f000001", "127.1."])
    func inetAtonFormsAreNeverHostNames(_ text: String) {
        guard case let .failure(error) = HostName.validate(text) else {
            Issue.record("\(text) was taken for a host name and would go to DNS")
            return
        }
        #expect(error.problem == .numericAddressForm || AddressTarget.looksLikeAddress(text))
        #expect(error.description.contains("'\(text)'") && error.description.contains("127.0.0.1"), "\(error)")
    }

    @Test(arguments: ["127.1", "2130706433", "010.0.0.1"])
    func digitOnlyFormsAreRefusedAsAddressesWithTheSameAdvice(_ text: String) {
        guard case let .failure(error) = AddressTarget.parse(text) else {
            Issue.record("\(text) parsed as an address")
            return
        }
        #expect(error.description.contains("inet_aton") && error.description.contains("127.0.0.1"), "\(error)")
    }

    @Test(arguments: ["example.com", "0x7f.example", "a1.b2", "host-1.test", "1a.2b.3c.4d", "123.example", "0x7f.local"])
    func namesWithLettersStayNames(_ text: String) {
        #expect(throws: Never.self) { try HostName.validate(text).get() }
        #expect(!AddressTarget.looksLikeAddress(text), "\(text) would be refused as an address")
    }

    /// Every entry point routes with looksLikeAddress; a text it sends to the address side is
    /// then refused by parse, so nothing of this list can ever reach DNS.
    @Test(arguments: [
        ("0x7f.0.0.1", "inet_aton"), ("0x7f000001", "inet_aton"), ("1.0x1", "inet_aton"), ("127.1.", "inet_aton"),
        ("192.0.2.999", "is not an IPv4 or IPv6 address"), ("1.2.3.4.5", "is not an IPv4 or IPv6 address"),
        ("0x7f.0.0.999", "last label '999' is all digits"), ("host.123", "last label '123' is all digits"),
        ("host.123.", "last label '123' is all digits"),
    ])
    func textsThatCannotBeNamesGoToTheAddressSideAndAreRefusedThere(_ text: String, _ expected: String) {
        #expect(AddressTarget.looksLikeAddress(text))
        guard case let .failure(error) = AddressTarget.parse(text) else {
            Issue.record("\(text) parsed as an address")
            return
        }
        #expect(error.description.contains("'\(text)'") && error.description.contains(expected), "\(error)")
        #expect(throws: HostNameError.self) { try HostName.validate(text).get() }
    }

    @Test func anAddressIsStillNotANameToCheckAddress() {
        guard case let .failure(error) = AddressTarget.parse("example.test") else { Issue.record("parsed"); return }
        #expect(error.description == "'example.test' is not an IPv4 or IPv6 address")
    }

    @Test func aNumericTopLevelLabelIsNamedInTheHostNameError() {
        let error = HostName.validate("printer.lan.42")
        #expect(error == .failure(HostNameError(name: "printer.lan.42", problem: .numericTopLevelLabel("42"))))
        if case let .failure(error) = error { #expect(error.description.contains("last label '42' is all digits"), "\(error)") }
    }
}

/// The same refusals through reachd, by busctl (a client that is not ours), and by reachctl.
@Suite(rootOnly)
struct InputEdgeBusTests {
    @Test func numericFormsAndUnknownScopesAreRefusedAlikeByEveryEntryPoint() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        func refusal(_ arguments: [String]) throws -> String {
            let output = try harness.busctl(["call", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface] + arguments)
            #expect(output.status != 0, "busctl \(arguments) succeeded: \(output.stdout)")
            return output.stderr
        }
        for target in ["0x7f.0.0.1", "127.1", "2130706433", "010.0.0.1", "10.1", "host.123"] {
            var messages: Set<String> = []
            for arguments in [["CheckHost", "su", target, "500"], ["Watch", "s", target], ["CheckAddress", "s", target]] {
                let message = try refusal(arguments)
                #expect(message.contains("'\(target)'"), "\(arguments): \(message)")
                messages.insert(message)
            }
            #expect(messages.count == 1, "one refusal for \(target) whatever the method: \(messages)")
            let advice = target == "host.123" ? "all digits" : "127.0.0.1"
            for command in [["check", target], ["monitor", target]] {
                let daemon = try reachctl(command + ["--daemon", "--bus-address", harness.address])
                #expect(daemon.status == 255 && daemon.stderr.contains("'\(target)'") && daemon.stderr.contains(advice), "\(command): \(daemon.stderr)")
                let inProcess = try reachctl(command + ["--netns", scenario.ns.name])
                #expect(inProcess.status == 255 && inProcess.stderr.contains("'\(target)'") && inProcess.stderr.contains(advice), "\(command) in-process: \(inProcess.stderr)")
            }
        }
        // A scope that names no interface: CheckAddress and Watch give the same refusal.
        let scoped = "fe80::1%nonexist"
        let checkMessage = try refusal(["CheckAddress", "s", scoped])
        let watchMessage = try refusal(["Watch", "s", scoped])
        #expect(checkMessage.contains("nonexist") && checkMessage == watchMessage, "\(checkMessage) / \(watchMessage)")
        #expect(try refusal(["CheckHost", "su", scoped, "500"]) == checkMessage)
        for command in [["check", scoped], ["monitor", scoped]] {
            for source in [["--daemon", "--bus-address", harness.address], ["--netns", scenario.ns.name]] {
                let result = try reachctl(command + source)
                #expect(result.status == 255 && result.stderr.contains("no interface named 'nonexist'"), "\(command + source): \(result.stderr)")
            }
        }
    }
}

/// reachctl refuses what it cannot honour, before doing anything, with exit status 255.
@Suite("reachctl usage limits")
struct ReachctlLimitTests {
    @Test(arguments: [
        (["check", "example.org", "--timeout", "-1s"], "durations cannot be negative"),
        (["wait", "--timeout", "-1s"], "durations cannot be negative"),
        (["check", "example.org", "--timeout", "400s"], "above the maximum of 5m"),
        (["check", "example.org", "--timeout", "0"], "must be above zero"),
        (["wait", "--timeout", "1441m"], "longer than the maximum of 24 hours"),
        // A systemd time span adds its parts up: 5m1s is read, and is above check's limit.
        (["check", "example.org", "--timeout", "5m1s"], "--timeout 301s is above the maximum of 5m"),
        (["check", "example.org", "--timeout", "5m1x"], "invalid duration '5m1x'"),
    ])
    func badTimeoutsAreRefusedNamingTheValue(_ arguments: [String], _ expected: String) throws {
        let result = try reachctl(arguments)
        #expect(result.status == 255)
        #expect(result.stderr.contains(expected), "\(result.stderr)")
    }

    @Test func monitorRefusesMoreTargetsThanAWatchLimitHolds() throws {
        let targets = (1...65).map { "192.0.2.\($0)" }
        let result = try reachctl(["monitor"] + targets)
        #expect(result.status == 255)
        #expect(result.stderr.contains("at most 64 targets") && result.stderr.contains("got 65"), "\(result.stderr)")
    }
}

/// A dangling drop-in link is a warning by name from every program that reads reachd.conf, and
/// the rest of the configuration still applies.
@Suite("Configuration warnings")
struct ConfigurationWarningTests {
    @Test func reachdAndReachctlWarnAboutADanglingDropInByName() throws {
        let root = try makeScratchDirectory("reachd-dangling")
        defer { removeTree(root) }
        try FileManager.default.createDirectory(atPath: root + "/reachd.conf.d", withIntermediateDirectories: true)
        try "[Checks]\nDefaultTimeout=2s\n".write(toFile: root + "/reachd.conf", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: root + "/reachd.conf.d/10-gone.conf", withDestinationPath: "/nonexistent/10-gone.conf")
        let expected = root + "/reachd.conf.d/10-gone.conf: a symbolic link to /nonexistent/10-gone.conf, which does not exist; ignored"
        let checked = try DaemonHarness.execute(productPath("reachd"), ["--check-config", "--config-dir", root])
        #expect(checked.status == 0, "a warning, not an error: \(checked.stderr)")
        #expect(checked.stderr.contains(expected), "\(checked.stderr)")
        #expect(checked.stdout.contains("DefaultTimeout=2s"), "\(checked.stdout)")
        // reachctl reads the same files in-process; an invalid target stops it right after.
        let reachctl = try reachctl(["check", "127.1", "--config-dir", root, "--sysfs-root", "/"])
        #expect(reachctl.stderr.contains("warning: " + expected), "\(reachctl.stderr)")
    }
}

/// reachd and a bus that fails or stops reading: the log says why, memory does not grow per change.
@Suite(rootOnly)
struct BusTroubleTests {
    @Test func losingTheBusIsLoggedWithItsCause() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = try #require(harness.daemon)
        harness.bus.kill()
        let status = try await daemon.exit(timeout: .seconds(5))
        #expect(status == 1, "exit \(String(describing: status)); \(daemon.errorLines)")
        let line = daemon.errorLines.first { $0.contains("lost the bus") } ?? ""
        // dbus-daemon killed: reachd reads end-of-file, which sd-bus reports as ECONNRESET.
        #expect(line.contains("the connection was closed by the other end") && line.hasSuffix("Connection reset by peer; exiting so that systemd restarts reachd"), "\(daemon.errorLines)")
        #expect(daemon.errorLines.filter { $0.contains("lost the bus") }.count == 1, "one line says it: \(daemon.errorLines)")
    }

    /// issue 9: a second reachd on the same bus never announces READY without the name: it exits
    /// 1 naming the owner (unique name and PID, asked from the bus), and the first keeps the name,
    /// as an independent client (busctl's GetNameOwner) sees.
    @Test func aSecondInstanceIsRefusedByNameAndNeverReady() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let first = try #require(harness.daemon)
        func owner() throws -> String? {
            let output = try harness.busctl([
                "--json=short", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", "s",
                DaemonHarness.busName,
            ])
            return try DaemonHarness.jsonData(output).first as? String
        }
        let before = try #require(try owner())

        let notify = try DaemonHarness.NotifySocket(path: harness.directory + "/notify-second")
        defer { notify.close() }
        var environment = ProcessInfo.processInfo.environment
        for key in ["WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM"] { environment.removeValue(forKey: key) }
        environment["NOTIFY_SOCKET"] = notify.path
        let second = try ChildProcess(
            productPath("reachd"), ["--bus-address", harness.address, "--netns", scenario.ns.name, "--config-dir", harness.configDirectory],
            environment: environment)
        let status = try await second.exit(timeout: .seconds(20))
        #expect(status == 1, "exit \(String(describing: status)); \(second.errorLines)")
        let line = second.errorLines.first { $0.contains("another instance owns the bus name") } ?? ""
        #expect(line.contains("\(DaemonHarness.busName) (\(before), pid \(first.pid))"), "\(second.errorLines)")
        #expect(!second.errorLines.contains { $0.contains("ready on the bus") }, "\(second.errorLines)")
        #expect(!notify.datagrams.contains { $0.fields["READY"] == "1" }, "\(notify.datagrams.map(\.text))")
        #expect(notify.datagrams.contains { $0.fields["STATUS"]?.hasPrefix("refused:") == true }, "\(notify.datagrams.map(\.text))")
        #expect(try owner() == before)
        #expect(first.isRunning)
    }

    /// A stopped dbus-daemon reads nothing while the link flaps 40 times under 2,000 watches: reachd holds
    /// its signals back instead of queueing one per change, and sends the latest when the
    /// broker resumes, so the monitor sees far fewer Changed than reachd had changes, the last
    /// of them carrying the final generation.
    ///
    /// reachd runs without CAP_NET_ADMIN, as the shipped unit runs it (no capability at all), so
    /// its bus socket's send buffer is the kernel's wmem_max (about 416 KiB) as it is in service:
    /// as root, sd-bus forces 16 MiB (SO_SNDBUFFORCE), which this test's flaps filled only on a
    /// loaded machine (alone, 67-72 Changed for 80 changes).
    @Test func signalsAreCoalescedWhileTheBrokerIsStopped() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(
            scenario.ns, config: "[Limits]\nMaxWatchesPerClient=2000\nMaxWatchesPerUser=2000\n",
            launcher: ["/usr/bin/setpriv", "--bounding-set=-net_admin", "--inh-caps=-net_admin", "--"])
        defer { harness.shutdown() }
        try await harness.ready()
        // Watches that change with every flap: each change sends up to 2,000 signals, so the
        // socket buffer is full within a few changes.
        let client = try harness.connect("watcher")
        for index in 0..<2000 { _ = try DaemonHarness.watch(client, "10.\(index / 200).\(index % 200).1") }
        let monitor = try harness.monitor("type='signal',member='Changed'")
        defer { monitor.stop() }
        let mark = harness.notify.datagrams.count
        harness.bus.signal(SIGSTOP)
        var resumed = false
        defer { if !resumed { harness.bus.signal(SIGCONT) } }
        // One carrier flap at a time, each seen by reachd (its STATUS= on NOTIFY_SOCKET, which
        // the stall does not block), so every flap is two host changes.
        var next = mark
        for _ in 0..<40 {
            for up in [false, true] {
                _ = try scenario.far.ip("link set up0p \(up ? "up" : "down")")
                next = try await harness.notify.wait(for: "STATUS after a flap", from: next) { datagram in
                    datagram.fields["STATUS"].map { $0.hasPrefix("online") == up } ?? false
                }.index + 1
            }
        }
        let statuses = harness.notify.datagrams[mark...].filter { $0.fields["STATUS"] != nil }.count
        harness.bus.signal(SIGCONT)
        resumed = true
        let status = try DaemonHarness.status(try harness.connect())
        #expect(status.primaryInterface == "up0")
        // Held signals go out as soon as the broker reads again; wait until none arrives for 1 s.
        var received = -1
        while monitor.changes.count != received {
            received = monitor.changes.count
            try await Task.sleep(for: .seconds(1))
        }
        let last = try #require(monitor.changes.last)
        #expect(last.primaryInterface == "up0" && last.generation <= status.generation, "\(last) / \(status)")
        #expect(statuses >= 80, "the flaps must make many host changes to prove anything: \(statuses)")
        #expect(received < statuses / 2, "\(received) Changed signals for \(statuses) host changes: not coalesced")
    }
}
