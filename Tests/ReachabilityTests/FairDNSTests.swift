import Foundation
import Testing
@testable import Reachability

/// issue 24: no caller makes host checks wrong or slow for the others. reachd runs as shipped on
/// a bus every user may use; its DNS server (dnsmasq in `far`) answers every name under `up.test`
/// and `probe.test` at once and forwards `hole.test` to a black hole. Each check asks a name of
/// its own, so none is answered from reachd's cache. The callers are
/// independent processes: GDBus from Python as `nobody`, busctl as `www-data` and as root.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/setpriv"), "needs setpriv"))
struct FairDNSTests {
    /// Sends COUNT CheckHost calls on nINDEX.SUFFIX with a 5-minute deadline, PER calls on each of
    /// its connections (default: all on one; dbus-daemon holds at most 128 calls awaiting a reply
    /// per connection), without waiting; prints "sent", then "answer INDEX REASON" or
    /// "error INDEX NAME MESSAGE" per reply, and holds its connections until killed.
    static let abandoner = """
        import sys
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        address, count, suffix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        per = int(sys.argv[4]) if len(sys.argv) > 4 else count
        flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
        connections = [Gio.DBusConnection.new_for_address_sync(address, flags, None, None) for _ in range((count + per - 1) // per)]
        def done(source, result, index):
            try:
                print("answer", index, source.call_finish(result).unpack()[3], flush=True)
            except GLib.Error as error:
                print("error", index, Gio.DBusError.get_remote_error(error), error.message, flush=True)
        for index in range(count):
            connections[index // per].call("org.reachd.Reachability1", "/org/reachd/Reachability1", "org.reachd.Reachability1",
                "CheckHost", GLib.Variant("(su)", ("n%d.%s" % (index, suffix), 300000)), None, 0, 400000, None, done, index)
        for connection in connections:
            connection.flush_sync(None)
        print("sent", flush=True)
        GLib.MainLoop().run()
        """

    /// Serves 204 on 192.0.2.1:8204 for the probe.
    static let probeServer = """
        import socket
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", 8204))
        listener.listen(64)
        print("ready", flush=True)
        while True:
            connection, _ = listener.accept()
            connection.recv(4096)
            connection.sendall(b"HTTP/1.1 204 No Content\\r\\nConnection: close\\r\\n\\r\\n")
            connection.close()
        """

    struct Setup {
        let scenario: DaemonBusTests.Scenario
        let hole: DNSBlackHole
        let directory: String
        let server: ChildProcess
        let harness: DaemonHarness

        init(config: String, _ tag: String = #function) async throws {
            scenario = try DaemonBusTests.Scenario(tag)
            try scenario.far.ip("addr add 198.51.100.54/32 dev lo")
            hole = try DNSBlackHole(in: scenario.far, address: "198.51.100.54")
            var template = Array("/tmp/fair-dns-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp") }
            directory = String(cString: made)
            _ = try scenario.far.exec("/usr/sbin/dnsmasq", [
                "--conf-file=/dev/null", "--listen-address=192.0.2.1", "--bind-interfaces", "--no-resolv", "--no-hosts",
                "--pid-file=\(directory)/dnsmasq.pid", "--user=root", "--group=root", "--local=/test/", "--local-ttl=0",
                "--cache-size=0", "--dns-forward-max=1000", "--server=/hole.test/198.51.100.54",
                "--address=/up.test/192.0.2.10", "--address=/probe.test/192.0.2.1",
            ])
            for _ in 0..<200 where !FileManager.default.fileExists(atPath: "\(directory)/dnsmasq.pid") { usleep(5000) }
            try "nameserver 192.0.2.1\n".write(toFile: "\(directory)/resolv.conf", atomically: true, encoding: .utf8)
            server = try ChildProcess("/usr/bin/ip", ["netns", "exec", scenario.far.name, "/usr/bin/python3", "-c", FairDNSTests.probeServer])
            #expect(try server.firstLine(timeout: .seconds(10)) == "ready")
            harness = try DaemonHarness(scenario.ns, config: config, resolvConf: "\(directory)/resolv.conf", anyUser: true)
            try await harness.ready()
        }

        func stop() {
            harness.shutdown()
            server.kill()
            if let text = try? String(contentsOfFile: "\(directory)/dnsmasq.pid", encoding: .utf8), let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                kill(pid, SIGKILL)
            }
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// A process as `uid` (nobody 65534, www-data 33): its own bus connection.
        func asUser(_ uid: Int, _ program: String, _ arguments: [String]) throws -> ChildProcess {
            try ChildProcess("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", program] + arguments)
        }

        /// CheckHost(NAME, 0) through busctl as `uid` (nil: root): the reason and reachd's own time.
        func checkHost(_ name: String, as uid: Int? = nil) throws -> (reason: String, elapsed: Duration, output: String) {
            let arguments = ["--address=\(harness.address)", "--json=short", "call", DaemonHarness.busName, DaemonHarness.objectPath,
                             DaemonHarness.interface, "CheckHost", "su", name, "0"]
            let started = ContinuousClock.now
            let child = try uid.map { try asUser($0, "/usr/bin/busctl", arguments) } ?? ChildProcess("/usr/bin/busctl", arguments)
            let (status, stdout, stderr) = try child.finish(timeout: .seconds(20))
            let elapsed = ContinuousClock.now - started
            let output = DaemonHarness.Output(status: status, stdout: stdout, stderr: stderr)
            let data = (try? DaemonHarness.jsonData(output)) ?? []
            return (data.count == 5 ? data[3] as? String ?? "?" : "?", elapsed, stdout + stderr)
        }
    }

    @Test func abandonedBlackHoledLookupsOfOneUserChangeNothingForRootOthersOrTheProbe() async throws {
        // A burst of 100 and one more a second: nobody's first 100 checks reach the resolver (24
        // run, the rest wait in nobody's line), the last ones are refused by the rate, however
        // slowly a loaded machine delivers them.
        let setup = try await Setup(
            config: "[Checks]\nLookupsPerUserPerSecond=1\nLookupBurstPerUser=100\n[Connectivity]\nURL=http://probe.test:8204/generate_204\nTimeout=2s\n")
        defer { setup.stop() }
        try await eventually("the probe says full", timeout: waitLimit, every: .milliseconds(20)) {
            try setup.harness.busctl(["get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "Connectivity"]).stdout
                .contains("full")
        }

        // nobody: 128 checks of names whose server never answers, each with a 5-minute deadline.
        let nobody = try setup.asUser(65534, "/usr/bin/python3", ["-c", Self.abandoner, setup.harness.address, "128", "hole.test"])
        defer { nobody.kill() }
        try await eventually("nobody's calls sent and the refused ones answered: \(nobody.lines) \(nobody.errorLines)", every: .milliseconds(10)) {
            nobody.lines.contains("sent") && nobody.lines.filter { $0.hasPrefix("error ") }.count >= 10
        }
        // The refusals come after the 100 admitted checks: every call has reached reachd by now.
        try await Task.sleep(for: .milliseconds(200))
        let refused = nobody.lines.filter { $0.hasPrefix("error ") }
        #expect((10...28).contains(refused.count), "the burst of 100 lookups was taken, the rest refused by the rate: \(refused.count)")
        #expect(refused.allSatisfy { $0.contains("org.reachd.Reachability1.Error.LimitExceeded") && $0.contains("LookupsPerUserPerSecond=1,") },
                "\(refused.prefix(3))")
        #expect(!nobody.lines.contains { $0.hasPrefix("answer ") }, "the black-holed checks are still waiting")

        // Root, another user and the probe answer in their normal time meanwhile.
        var slowest: Duration = .zero
        for attempt in 0..<3 {
            let root = try setup.checkHost("root\(attempt).up.test")
            #expect(root.reason == "" && root.elapsed < .seconds(1), "root's check \(attempt): \(root)")
            let other = try setup.checkHost("www\(attempt).up.test", as: 33)
            #expect(other.reason == "" && other.elapsed < .seconds(1), "www-data's check \(attempt): \(other)")
            slowest = max(slowest, root.elapsed, other.elapsed)
        }
        print("fair DNS timing: nobody's \(128 - refused.count) black-holed checks in flight; root's and www-data's checks answered, slowest \(slowest) (busctl included)")
        // The probe's name is asked again once its cached answer (1 s at least) is gone.
        try await Task.sleep(for: .milliseconds(1100))
        let validated = try DaemonHarness.jsonData(try setup.harness.busctlCall("Validate"))
        #expect(validated.first as? String == "full", "the probe still reaches the internet: \(validated)")

        // nobody goes: its checks are cancelled with their lookups, so its share is free at once.
        nobody.kill()
        try await Task.sleep(for: .milliseconds(300))
        let again = try setup.checkHost("nobody.up.test", as: 65534)
        #expect(again.reason == "" && again.elapsed < .seconds(1), "nobody's new check finds its share free: \(again)")
        let status = try setup.harness.busctl(["get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "Connectivity"])
        #expect(status.stdout.contains("full"), "\(status)")
    }
}
