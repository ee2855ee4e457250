import Foundation
import Testing
@testable import Reachability

/// issue 16: watch limits hold per Unix user, not only per connection: one user with many
/// connections is refused at its share (MaxWatchesPerUser), and another user still gets watches.
/// The other user is `nobody`, a real second client process (GLib's GDBus, from Python).
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/setpriv"), "needs setpriv"))
struct WatchLimitTests {
    /// Opens CONNECTIONS connections to the bus at ADDRESS and asks each for PER watches on
    /// 127.0.0.1, printing "ok PATH" or "refused NAME MESSAGE" per call, then "done", and holds the
    /// connections (their watches live as long as they do) until killed.
    static let client = """
        import sys, time
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        address, connections, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
        held = []
        for _ in range(connections):
            connection = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
            held.append(connection)
            for _ in range(per):
                try:
                    reply = connection.call_sync("org.reachd.Reachability1", "/org/reachd/Reachability1",
                        "org.reachd.Reachability1", "Watch", GLib.Variant("(s)", ("127.0.0.1",)), None, 0, 10000, None)
                    print("ok", reply.unpack()[0], flush=True)
                except GLib.Error as error:
                    print("refused", Gio.DBusError.get_remote_error(error), error.message, flush=True)
        print("done", flush=True)
        time.sleep(120)
        """

    @Test func oneUserWithManyConnectionsIsRefusedAtItsShareAndAnotherStillGetsWatches() async throws {
        let ns = try TestNamespace()
        let harness = try DaemonHarness(ns, config: "[Limits]\nMaxWatchesPerClient=3\nMaxWatchesPerUser=5\nMaxWatches=100\n", anyUser: true)
        defer { harness.shutdown() }
        try await harness.ready(state: nil)

        let nobody = try ChildProcess("/usr/bin/setpriv", [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", Self.client, harness.address, "4", "3",
        ])
        defer { nobody.kill() }
        let deadline = ContinuousClock.now + waitLimit
        while !nobody.lines.contains("done") {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "nobody's watches: \(nobody.lines) \(nobody.errorLines)") }
            try await Task.sleep(for: .milliseconds(10))
        }
        let granted = nobody.lines.filter { $0.hasPrefix("ok ") }
        let refused = nobody.lines.filter { $0.hasPrefix("refused ") }
        #expect(granted.count == 5, "nobody holds its share across 4 connections: \(nobody.lines)")
        #expect(refused.count == 7)
        #expect(refused.allSatisfy { $0.contains("org.reachd.Reachability1.Error.LimitExceeded") && $0.contains("MaxWatchesPerUser=5") && $0.contains("65534") }, "\(refused)")

        // root is not held back by nobody's share (and has none), but by its connection's limit.
        let root = try harness.connect("root-client")
        var rootPaths: [String] = []
        for _ in 0..<3 { rootPaths.append(try DaemonHarness.watch(root, "127.0.0.1")) }
        #expect(Set(rootPaths).count == 3)
        #expect(throws: BusError.self) { try DaemonHarness.watch(root, "127.0.0.1") }  // its per-connection limit

        // When nobody's connections go, its share is free again.
        nobody.kill()
        try await Task.sleep(for: .milliseconds(300))
        let again = try ChildProcess("/usr/bin/setpriv", [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", Self.client, harness.address, "2", "2",
        ])
        defer { again.kill() }
        while !again.lines.contains("done") {
            guard ContinuousClock.now < deadline + .seconds(20) else { throw TimedOut(what: "nobody again: \(again.lines)") }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(again.lines.filter { $0.hasPrefix("ok ") }.count == 4, "\(again.lines)")
    }
}

extension WatchLimitTests {
    /// issue 24: two users at their shares cannot lock root out of Watch: users other than root
    /// together never take the last quarter of MaxWatches (here 8 of 32).
    @Test func twoUsersAtTheirSharesLeaveRootItsReserve() async throws {
        let ns = try TestNamespace()
        let harness = try DaemonHarness(ns, config: "[Limits]\nMaxWatchesPerClient=8\nMaxWatchesPerUser=16\nMaxWatches=32\n", anyUser: true)
        defer { harness.shutdown() }
        try await harness.ready(state: nil)

        func run(_ uid: Int) async throws -> ChildProcess {
            let child = try ChildProcess("/usr/bin/setpriv", [
                "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", Self.client, harness.address, "3", "6",
            ])
            let deadline = ContinuousClock.now + waitLimit
            while !child.lines.contains("done") {
                guard ContinuousClock.now < deadline else { throw TimedOut(what: "\(uid)'s watches: \(child.lines) \(child.errorLines)") }
                try await Task.sleep(for: .milliseconds(10))
            }
            return child
        }
        let nobody = try await run(65534)
        defer { nobody.kill() }
        let www = try await run(33)
        defer { www.kill() }
        #expect(nobody.lines.filter { $0.hasPrefix("ok ") }.count == 16, "nobody holds its share: \(nobody.lines)")
        #expect(www.lines.filter { $0.hasPrefix("ok ") }.count == 8, "www-data all but the reserve: \(www.lines)")
        let refused = www.lines.filter { $0.hasPrefix("refused ") }
        #expect(refused.contains { $0.contains("LimitExceeded") && $0.contains("kept for root") }, "\(refused)")

        // root takes the reserve, to MaxWatches itself (two connections: one holds 8 at most).
        var rootPaths: Set<String> = []
        // Held to the end: a connection that goes takes its watches with it.
        let connections = [try harness.connect("root-client"), try harness.connect("root-client-2")]
        for connection in connections {
            for _ in 0..<4 { rootPaths.insert(try DaemonHarness.watch(connection, "127.0.0.1")) }
        }
        #expect(rootPaths.count == 8)
        let last = try harness.connect("root-client-3")
        #expect(throws: BusError.self) { try DaemonHarness.watch(last, "127.0.0.1") }  // MaxWatches itself
        withExtendedLifetime(connections) {}
    }
}

/// `MaxWatchesPerUser=auto` (the default) follows MaxWatches: half of it, at least 2048, at most
/// all of it; a number is taken as written; anything else is refused by name.
@Suite("MaxWatchesPerUser")
struct WatchesPerUserSettingTests {
    static func parsed(_ text: String) -> (Configuration, [String]) {
        var configuration = Configuration.default
        let errors = Configuration.parse(text, file: "test.conf", into: &configuration)
        return (configuration, errors.map(\.description))
    }

    @Test(arguments: [
        ("", 2048), ("MaxWatches=100000\n", 50000), ("MaxWatches=5000\n", 2500), ("MaxWatches=4097\n", 2048),
        ("MaxWatches=1000\n", 1000), ("MaxWatches=1\n", 1), ("MaxWatchesPerUser=auto\nMaxWatches=10000\n", 5000),
        ("MaxWatchesPerUser=AUTO\n", 2048), ("MaxWatchesPerUser=7\nMaxWatches=100000\n", 7),
        ("MaxWatches=10\nMaxWatchesPerUser=500\n", 500),
    ])
    func effectiveLimit(_ limits: String, _ expected: Int) {
        let (configuration, errors) = Self.parsed("[Limits]\n" + limits)
        #expect(errors == [])
        #expect(configuration.maxWatchesPerUser == expected)
    }

    @Test func autoIsWrittenBackAsAutoAndANumberAsTheNumber() {
        let (automatic, _) = Self.parsed("[Limits]\nMaxWatches=100000\n")
        #expect(automatic.mergedText.contains("\nMaxWatchesPerUser=auto\n"))
        let (explicit, _) = Self.parsed("[Limits]\nMaxWatchesPerUser=300\n")
        #expect(explicit.mergedText.contains("\nMaxWatchesPerUser=300\n"))
        #expect(explicit != .default)
    }

    @Test(arguments: [
        ("automatic", "test.conf:2: [Limits] MaxWatchesPerUser: invalid number 'automatic'; expected a whole number from 1 to 1000000, or auto"),
        ("0", "test.conf:2: [Limits] MaxWatchesPerUser: number 0 is out of range; expected a whole number from 1 to 1000000, or auto"),
        ("", "test.conf:2: [Limits] MaxWatchesPerUser: empty value; give a whole number or auto or remove the line"),
    ])
    func aBadValueIsRefusedByName(_ value: String, _ message: String) {
        let (_, errors) = Self.parsed("[Limits]\nMaxWatchesPerUser=\(value)\n")
        #expect(errors == [message])
    }
}
