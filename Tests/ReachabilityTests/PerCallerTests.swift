import Foundation
import Testing
@testable import Reachability

/// issue 25, part 1: reachd answers each caller as the kernel routes that caller's traffic. A
/// `uidrange` rule sends user nobody's traffic into a table whose default is unreachable (how
/// per-user kill switches are built): through reachd, nobody is told policyBlocked (the kernel
/// refuses nobody's lookup with EHOSTUNREACH, not ENETUNREACH) while root is told
/// reachable, for CheckAddress, CheckHost and a watch, and the watch follows when the rule goes.
/// nobody is a real second process (GLib's GDBus from Python, under setpriv); reachd learns its
/// user with one bus round trip per connection, however many calls it makes.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/setpriv"), "needs setpriv"))
struct PerCallerTests {
    /// On one connection to ADDRESS: prints its unique name, CheckAddress(TARGET) twice and
    /// CheckHost(TARGET) as "check FLAGS INTERFACE REASON", then a watch's Flags and Reason as
    /// "watch FLAGS REASON", then each change of that watch the same way, until killed.
    static let client = """
        import sys
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        address, target = sys.argv[1], sys.argv[2]
        flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
        bus = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
        print("name", bus.get_unique_name(), flush=True)
        def call(member, arguments, signature):
            return bus.call_sync("org.reachd.Reachability1", "/org/reachd/Reachability1", "org.reachd.Reachability1",
                member, GLib.Variant(signature, arguments), None, 0, 10000, None).unpack()
        for _ in range(2):
            answer = call("CheckAddress", (target,), "(s)")
            print("check", answer[0], answer[1] or "-", answer[2] or "-", flush=True)
        answer = call("CheckHost", (target, 0), "(su)")
        print("check", answer[0], answer[1] or "-", answer[3] or "-", flush=True)
        path = call("Watch", (target,), "(s)")[0]
        def show(*_):
            get = lambda name: bus.call_sync("org.reachd.Reachability1", path, "org.freedesktop.DBus.Properties", "Get",
                GLib.Variant("(ss)", ("org.reachd.Reachability1.Watch", name)), None, 0, 10000, None).unpack()[0]
            print("watch", get("Flags"), get("Reason") or "-", flush=True)
        bus.signal_subscribe("org.reachd.Reachability1", "org.freedesktop.DBus.Properties", "PropertiesChanged", path,
            None, Gio.DBusSignalFlags.NONE, show)
        show()
        GLib.MainLoop().run()
        """

    static let reachable: UInt32 = 1 << 1
    static let target = "198.51.100.7"

    /// The client as `uid` (0 runs it as root, as this test runs).
    static func client(as uid: Int, _ harness: DaemonHarness) throws -> ChildProcess {
        let python = ["/usr/bin/python3", "-c", Self.client, harness.address, Self.target]
        if uid == 0 { return try ChildProcess(python[0], Array(python.dropFirst())) }
        return try ChildProcess("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"] + python)
    }

    static func lines(_ child: ChildProcess, prefix: String, count: Int) async throws -> [String] {
        let deadline = ContinuousClock.now + waitLimit
        while true {
            let found = child.lines.filter { $0.hasPrefix(prefix + " ") }
            if found.count >= count { return found }
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "\(count) '\(prefix)' lines: \(child.lines) \(child.errorLines)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// nobody's traffic goes to table 100, whose default is unreachable; reachd on a bus every
    /// user may call, online through up0.
    static func killSwitch(verbose: Bool = false) async throws -> (DaemonBusTests.Scenario, DaemonHarness) {
        let scenario = try DaemonBusTests.Scenario()
        try scenario.ns.ip("route add unreachable default table 100")
        try scenario.ns.ip("rule add uidrange 65534-65534 table 100")
        let harness = try DaemonHarness(scenario.ns, anyUser: true, verbose: verbose)
        try await harness.ready()
        return (scenario, harness)
    }

    @Test func aUidrangeKillSwitchAnswersNobodyPolicyBlockedAndRootReachable() async throws {
        let (scenario, harness) = try await Self.killSwitch(verbose: true)
        defer { harness.shutdown() }

        let nobody = try Self.client(as: 65534, harness)
        defer { nobody.kill() }
        let root = try Self.client(as: 0, harness)
        defer { root.kill() }

        let nobodyChecks = try await Self.lines(nobody, prefix: "check", count: 3)
        #expect(nobodyChecks == Array(repeating: "check 0 - policyBlocked", count: 3), "\(nobody.lines) \(harness.diagnostics)")
        let rootChecks = try await Self.lines(root, prefix: "check", count: 3)
        #expect(rootChecks == Array(repeating: "check \(Self.reachable) up0 -", count: 3), "\(root.lines)")
        #expect(try await Self.lines(nobody, prefix: "watch", count: 1) == ["watch 0 policyBlocked"])
        #expect(try await Self.lines(root, prefix: "watch", count: 1) == ["watch \(Self.reachable) -"])

        // Four calls from nobody's connection, one question to the bus about its user.
        let name = try #require(nobody.lines.first { $0.hasPrefix("name ") }?.dropFirst(5))
        let asked = harness.daemonErrorLines.filter { $0.hasSuffix("the Unix user of \(name)") }
        #expect(asked.count == 1, "\(harness.diagnostics)")

        // The rule alone goes: nobody's watch follows, though the system's answer did not move.
        try scenario.ns.ip("rule del uidrange 65534-65534 table 100")
        #expect(try await Self.lines(nobody, prefix: "watch", count: 2).last == "watch \(Self.reachable) -", "\(nobody.lines)")
    }

    /// The host's answer stays the system's view whoever asks: nobody reads "online" too; and
    /// it carries the path's facts.
    @Test func theHostsAnswerIsTheSystemsViewForEveryCaller() async throws {
        let (scenario, harness) = try await Self.killSwitch()
        defer { withExtendedLifetime(scenario) { harness.shutdown() } }
        let state = try run("/usr/bin/setpriv", [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/busctl", "--address=\(harness.address)",
            "get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "State",
        ])
        #expect(state.trimmingCharacters(in: .whitespacesAndNewlines) == "s \"online\"")
        // With its path facts (issue 25, part 2), the same through reachd and in-process.
        for source in [["--bus-address", harness.address], ["--netns", scenario.ns.name]] {
            let json = try reachctl(["status", "--json"] + source).json()
            #expect(json["supportsIPv4"] as? Bool == true, "\(json)")
            #expect(json["supportsIPv6"] as? Bool == false)
            #expect(json["gateways"] as? [String] == ["192.0.2.1"])
            #expect(json["reason"] as? String == "")
        }
        let text = try reachctl(["status", "--bus-address", harness.address]).stdout
        // DNS is there when this machine's resolv.conf names a server the default route carries.
        #expect(text.contains("Path: IPv4 via 192.0.2.1\nDNS: "), "\(text)")
        // A carrier lost: Reason says why, on the bus as a client reads it.
        try scenario.carrier(false)
        try await eventually("Reason linkDown") {
            let reason = try harness.busctl(["get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "Reason"])
            return reason.stdout.contains("\"linkDown\"")
        }
    }

    /// `reachctl check --user`: root asks as nobody through reachd and in-process, with the same
    /// answer; nobody may not ask as root, neither through reachctl nor on the bus.
    @Test func rootAsksAsAnotherUserThroughReachdAndInProcess() async throws {
        let (scenario, harness) = try await Self.killSwitch()
        defer { harness.shutdown() }
        let viaDaemon = ["--bus-address", harness.address]
        let inProcess = ["--netns", scenario.ns.name]
        for source in [viaDaemon, inProcess] {
            let asNobody = try reachctl(["check", "--json", "--user", "nobody", Self.target] + source)
            #expect(asNobody.status == 1, "\(asNobody.stderr)")
            #expect(try asNobody.json()["reason"] as? String == "policyBlocked", "\(asNobody.stdout)")
            let asRoot = try reachctl(["check", "--json", "--user", "0", Self.target] + source)
            #expect(asRoot.status == 0, "\(asRoot.stdout) \(asRoot.stderr)")
        }
        let refused = try ChildProcess("/usr/bin/setpriv", [
            "--reuid=65534", "--regid=65534", "--clear-groups", reachctlPath(), "check", "--user", "root", Self.target,
        ] + viaDaemon).finish(timeout: .seconds(30))
        #expect(refused.status == 255 && refused.stderr.contains("only root may ask as another user"), "\(refused)")
        let onTheBus = try ChildProcess("/usr/bin/setpriv", [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/busctl", "--address=\(harness.address)", "call",
            DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "CheckHostAsUser", "suu", Self.target, "0", "0",
        ]).finish(timeout: .seconds(30))
        #expect(onTheBus.status != 0 && onTheBus.stderr.contains("Access denied"), "\(onTheBus)")
    }

    /// Two unprivileged users, one behind the kill switch (nobody) and one not (daemon, uid 1),
    /// each asking as itself with independent clients: the kernel's own `ip route get ... uid`
    /// is the oracle; busctl through reachd and reachctl in-process (run as that user, with no
    /// reachd to ask) must both give that user the kernel's answer.
    @Test func twoRealUsersEachGetTheKernelsAnswerThroughReachdAndInProcess() async throws {
        let (scenario, harness) = try await Self.killSwitch()
        defer { harness.shutdown() }
        for (uid, routed) in [(1, true), (65534, false)] {
            let user = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"]
            let kernel = try ChildProcess("/usr/sbin/ip", ["-n", scenario.ns.name, "route", "get", Self.target, "uid", "\(uid)"])
                .finish(timeout: .seconds(30))
            #expect((kernel.status == 0) == routed, "uid \(uid): ip route get: \(kernel)")
            // The kill switch's unreachable route: "No route to host" (EHOSTUNREACH), reachd's policyBlocked.
            #expect(routed || kernel.stderr.contains("No route to host"), "uid \(uid): ip route get: \(kernel)")

            let bus = try ChildProcess("/usr/bin/setpriv", user + [
                "/usr/bin/busctl", "--address=\(harness.address)", "call",
                DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "CheckAddress", "s", Self.target,
            ]).finish(timeout: .seconds(30))
            #expect(bus.status == 0, "uid \(uid): \(bus)")
            // busctl prints the reply as `ussa{sv} FLAGS "INTERFACE" "REASON" ...`.
            let words = bus.stdout.split(separator: " ").map(String.init)
            let flags = try #require(words.count > 3 ? UInt32(words[1]) : nil, "uid \(uid): \(bus.stdout)")
            #expect((flags & Self.reachable != 0) == routed, "uid \(uid) through reachd: \(bus.stdout)")
            #expect(words[3] == (routed ? "\"\"" : "\"policyBlocked\""), "uid \(uid) through reachd: \(bus.stdout)")

            // In-process as that user: no reachd on the (absent) system bus, so reachctl answers itself.
            let local = try ChildProcess("/usr/sbin/ip", ["netns", "exec", scenario.ns.name, "/usr/bin/setpriv"] + user + [
                reachctlPath(), "check", "--json", Self.target,
            ], environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/reachd-test-bus", "PATH": "/usr/bin:/bin"])
                .finish(timeout: .seconds(30))
            #expect(local.status == (routed ? 0 : 1), "uid \(uid) in-process: \(local)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(local.stdout.utf8)) as? [String: Any])
            #expect(json["reason"] as? String == (routed ? nil : "policyBlocked") || (routed && json["reason"] as? String == ""),
                "uid \(uid) in-process: \(local.stdout)")
            #expect(json["interface"] as? String == (routed ? "up0" : nil) || (!routed && json["interface"] as? String == ""),
                "uid \(uid) in-process: \(local.stdout)")
        }
    }
}
