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

        let nobody = try DaemonHarness.Child("/usr/bin/setpriv", [
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

        // root, another user, is not held back by nobody's share (nor exempt from its own).
        let root = try harness.connect("root-client")
        var rootPaths: [String] = []
        for _ in 0..<3 { rootPaths.append(try DaemonHarness.watch(root, "127.0.0.1")) }
        #expect(Set(rootPaths).count == 3)
        #expect(throws: BusError.self) { try DaemonHarness.watch(root, "127.0.0.1") }  // its per-connection limit

        // When nobody's connections go, its share is free again.
        nobody.kill()
        try await Task.sleep(for: .milliseconds(300))
        let again = try DaemonHarness.Child("/usr/bin/setpriv", [
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
