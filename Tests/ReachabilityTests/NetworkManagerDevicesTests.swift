import Foundation
import Testing
@testable import Reachability

/// reachd's follower of NetworkManager (`NetworkManagerDevices`) against what the real
/// NetworkManager never sends: an owner of org.freedesktop.NetworkManager on reachd's private bus,
/// served by GLib's GDBus (python3-gi), listing more devices than reachd follows, names no kernel
/// would give, a Metered outside NMMetered, beside one honest device. reachd follows the honest
/// one, refuses the rest by name, answers throughout, and forgets everything when the owner goes.
/// The real NetworkManager, under systemd, is PackagingDebianTests'.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/python3"), "needs python3-gi"))
struct NetworkManagerDevicesTests {
    /// The owner: argv[1] is JSON `{"devices": [[Interface, IpInterface, Metered], ...],
    /// "unserved": N, "steps": [[index, Metered], ...]}`. Devices are served at Devices/1...; N
    /// more paths are listed with no object behind them; each SIGUSR1 applies the next step (a new
    /// Metered and its PropertiesChanged). Prints "owned" once the name is its own.
    static let owner = """
        import json, signal, sys
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        plan = json.loads(sys.argv[1])
        NM, PATH = "org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager"
        info = Gio.DBusNodeInfo.new_for_xml('''<node>
          <interface name="org.freedesktop.NetworkManager"><method name="GetDevices"><arg type="ao" direction="out"/></method></interface>
          <interface name="org.freedesktop.NetworkManager.Device">
            <property name="Interface" type="s" access="read"/><property name="IpInterface" type="s" access="read"/>
            <property name="Metered" type="u" access="read"/></interface></node>''')
        devices = {}
        paths = []
        def device_path(n): return PATH + "/Devices/%d" % n
        def get(connection, sender, path, interface, name):
            value = devices[path][name]
            return GLib.Variant("u" if name == "Metered" else "s", value)
        def call(connection, sender, path, interface, method, parameters, invocation):
            invocation.return_value(GLib.Variant("(ao)", (paths,)))
        def serve(connection):
            # Before the name, as NetworkManager does: whoever sees the owner finds the objects.
            for n, (interface, ip, metered) in enumerate(plan["devices"], 1):
                devices[device_path(n)] = {"Interface": interface, "IpInterface": ip, "Metered": metered}
                connection.register_object(device_path(n), info.interfaces[1], None, get, None)
                paths.append(device_path(n))
            paths.extend(device_path(1000 + n) for n in range(plan["unserved"]))
            connection.register_object(PATH, info.interfaces[0], call, None, None)
        steps = list(plan["steps"])
        def step():
            index, metered = steps.pop(0)
            path = device_path(index)
            devices[path]["Metered"] = metered
            connection.emit_signal(None, path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                GLib.Variant("(sa{sv}as)", ("org.freedesktop.NetworkManager.Device", {"Metered": GLib.Variant("u", metered)}, [])))
            print("step", flush=True)
            return True
        connection = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, step)
        serve(connection)
        Gio.bus_own_name_on_connection(connection, NM, Gio.BusNameOwnerFlags.NONE, lambda c, n: print("owned", flush=True), None)
        GLib.MainLoop().run()
        """

    /// Starts the owner on `harness`'s bus and waits until the name is its own.
    static func startOwner(_ harness: DaemonHarness, plan: String) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = harness.address
        let child = try ChildProcess("/usr/bin/python3", ["-c", owner, plan], environment: environment)
        _ = try child.firstLine(timeout: .seconds(20))
        #expect(child.lines.first == "owned", "\(child.lines) \(child.errorLines)")
        return child
    }

    /// eth0's reason as reachd's GetStatus tells it ("" when it is not expensive).
    static func reason(_ harness: DaemonHarness) throws -> String {
        let status = try DaemonHarness.jsonData(harness.busctlCall("GetStatus"))
        let entries = status.first as? [String: Any]
        let reasons = (entries?["InterfaceExpensiveReasons"] as? [String: Any])?["data"] as? [String: String]
        return reasons?["eth0"] ?? ""
    }

    @Test func followsTheHonestDeviceRefusesTheHostileOnesByNameAndForgetsThemWhenTheOwnerGoes() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "eth0")
        let harness = try DaemonHarness(uplinks.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        #expect(try Self.reason(harness) == "")
        let long = String(repeating: "x", count: 100)
        let plan = """
            {"devices": [["eth0", "", 1], ["\(long)", "", 1], ["../etc", "", 1], ["up1", "", 7]],
             "unserved": 300, "steps": [[1, 2], [1, 1]]}
            """
        let owner = try Self.startOwner(harness, plan: plan)
        defer { owner.kill() }
        try await eventually("eth0 expensive by NetworkManager's setting: \(harness.diagnostics)") { try Self.reason(harness) == "networkManager" }
        try await eventually("the refusals: \(harness.daemonErrorLines)") {
            harness.daemonErrorLines.contains { $0.contains("more than 256 devices") }
        }
        let lines = harness.daemonErrorLines.filter { $0.contains("NetworkManager (") }
        #expect(lines.contains { $0.contains("Interface is 100 bytes, at most 64: 'xxx") }, "\(lines)")
        #expect(lines.contains { $0.contains("Interface '../etc' is no interface name: ignored") }, "\(lines)")
        #expect(lines.contains { $0.contains("Metered 7 is none of NetworkManager's values (0-4): taken as unknown") }, "\(lines)")
        #expect(lines.contains { $0.contains("GetDevices lists more than 256 devices: following the first") }, "\(lines)")
        // reachd answered all along, and the host's own answer says why too.
        #expect(try harness.busctl(["get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "ExpensiveReason"])
            .stdout == "s \"networkManager\"\n")

        // The user's no, then yes again, each one PropertiesChanged.
        owner.signal(SIGUSR1)
        try await eventually("eth0 no longer expensive: \(harness.diagnostics)") { try Self.reason(harness) == "" }
        owner.signal(SIGUSR1)
        try await eventually("eth0 expensive again: \(harness.diagnostics)") { try Self.reason(harness) == "networkManager" }

        // The owner goes: what it said goes with it.
        owner.kill()
        try await eventually("forgotten: \(harness.diagnostics)") { try Self.reason(harness) == "" }
        try harness.daemon?.waitForErrorLine(containing: "is gone: what it said of 1 interface(s) is forgotten")
        #expect(harness.daemon?.isRunning == true)
    }

    /// reachd's own NetworkManager surface holds the name where NetworkManager does not run: it
    /// is not NetworkManager, and reachd does not follow itself.
    @Test func reachdsOwnSurfaceIsNotFollowed() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "eth0")
        let harness = try DaemonHarness(uplinks.ns, config: NetworkManagerCompatibilityTests.config)
        defer { harness.shutdown() }
        try await harness.ready()
        try harness.daemon?.waitForErrorLine(containing: "NetworkManager compatibility: serving org.freedesktop.NetworkManager")
        // A round trip through reachd after the name was its own: the NameOwnerChanged that
        // announced it was handled before this answer.
        _ = try harness.busctlCall("GetStatus")
        #expect(!harness.daemonErrorLines.contains { $0.contains("NetworkManager runs") }, "\(harness.daemonErrorLines)")
        #expect(try Self.reason(harness) == "")
    }
}
