import Foundation
import Testing
@testable import Reachability

/// issue 12: GLib's own GNetworkMonitor (python3-gi), pointed at reachd on a private "system bus",
/// picks its NetworkManager backend and reports network-available, network-metered and
/// connectivity truthfully through a carrier loss and a switch from an ethernet uplink to a
/// cellular one, with at most one notification per property per change. GLib's netlink backend,
/// watching the same namespace, runs beside it for comparison.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/python3"), "needs python3-gi"))
struct NetworkManagerCompatibilityTests {
    static let nmName = "org.freedesktop.NetworkManager"
    static let nmPath = "/org/freedesktop/NetworkManager"

    /// Prints one JSON line at start and one per signal of the default GNetworkMonitor: which
    /// backend GLib chose, the signal, and the three properties after it.
    static let client = """
        import json, sys
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        monitor = Gio.NetworkMonitor.get_default()
        def report(signal):
            print(json.dumps({"backend": type(monitor).__name__, "signal": signal,
                "available": monitor.get_network_available(), "metered": monitor.get_network_metered(),
                "connectivity": int(monitor.get_connectivity())}), flush=True)
        for name in ("network-available", "network-metered", "connectivity"):
            monitor.connect("notify::" + name, lambda m, spec: report(spec.name))
        monitor.connect("network-changed", lambda m, available: report("network-changed"))
        report("start")
        GLib.MainLoop().run()
        """

    /// One GLib client, in `ns` (its netlink parent class watches the same links reachd does).
    final class GLibClient: @unchecked Sendable {
        let child: ChildProcess

        init(_ ns: TestNamespace, bus: String, backend: String) throws {
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
            environment["GIO_USE_NETWORK_MONITOR"] = backend
            child = try ChildProcess(
                "/usr/sbin/ip", ["netns", "exec", ns.name, "/usr/bin/python3", "-c", NetworkManagerCompatibilityTests.client],
                environment: environment)
        }

        var events: [[String: Any]] {
            child.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        /// Waits until the latest report satisfies `condition`; returns it.
        @discardableResult
        func wait(for what: String, _ condition: ([String: Any]) -> Bool) async throws -> [String: Any] {
            let deadline = ContinuousClock.now + waitLimit
            while true {
                if let last = events.last, condition(last) { return last }
                guard ContinuousClock.now < deadline, child.isRunning else {
                    throw TimedOut(what: "GLib \(what): \(child.lines) \(child.errorLines)")
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }

        /// "connectivity 1, network-available 1", or "none".
        static func text(_ counts: [String: Int]) -> String {
            counts.isEmpty ? "none" : counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }

        /// Signals since event `start`, by name.
        func counts(since start: Int) -> [String: Int] {
            var counts: [String: Int] = [:]
            for event in events.dropFirst(start) { counts[event["signal"] as? String ?? "?", default: 0] += 1 }
            return counts
        }
    }

    static let config = """
        [Compatibility]
        NetworkManager=yes
        [Interface]
        Name=eth*
        Kind=wired
        [Interface]
        Name=wwan*
        Kind=cellular
        """

    @Test func glibFollowsCarrierLossAndASwitchToCellularWithOneSignalPerChange() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "eth0")
        let harness = try DaemonHarness(uplinks.ns, config: Self.config)
        defer { harness.shutdown() }
        try await harness.ready()
        #expect(harness.daemonErrorLines.contains { $0.contains("NetworkManager compatibility: serving \(Self.nmName) (State 70, Connectivity 4, Metered 4)") },
                "\(harness.daemonErrorLines)")

        let nm = try GLibClient(uplinks.ns, bus: harness.address, backend: "networkmanager")
        let netlink = try GLibClient(uplinks.ns, bus: harness.address, backend: "netlink")
        defer {
            nm.child.kill()
            netlink.child.kill()
        }
        let first = try await nm.wait(for: "start") { $0["signal"] as? String == "start" }
        #expect(first["backend"] as? String == "GNetworkMonitorNM", "GLib chose \(first)")
        #expect(first["available"] as? Bool == true && first["metered"] as? Bool == false && first["connectivity"] as? Int == 4, "\(first)")
        try await netlink.wait(for: "netlink start") { $0["backend"] as? String == "GNetworkMonitorNetlink" }

        // One step: make the change, wait for reachd's answer and GLib's, let late signals arrive,
        // then count what each client saw for it.
        var figures: [String] = []
        func step(
            _ name: String, state: String, available: Bool, metered: Bool, connectivity: Int,
            changed: Set<String>, _ change: () throws -> Void
        ) async throws {
            let nmStart = nm.events.count
            let netlinkStart = netlink.events.count
            try change()
            let client = try harness.connect()
            let deadline = ContinuousClock.now + waitLimit
            while try DaemonHarness.property(client, "State") as String != state {
                guard ContinuousClock.now < deadline else { throw TimedOut(what: "\(name): State \(state); \(harness.diagnostics)") }
                try await Task.sleep(for: .milliseconds(5))
            }
            if !changed.isEmpty {
                try await nm.wait(for: name) { $0["available"] as? Bool == available && $0["metered"] as? Bool == metered && $0["connectivity"] as? Int == connectivity }
            }
            try await Task.sleep(for: .seconds(1))
            let last = nm.events.last ?? [:]
            #expect(last["available"] as? Bool == available && last["metered"] as? Bool == metered && last["connectivity"] as? Int == connectivity,
                    "\(name): GLib (NM) reports \(last)")
            let counts = nm.counts(since: nmStart)
            for property in ["network-available", "network-metered", "connectivity"] {
                #expect(counts[property, default: 0] == (changed.contains(property) ? 1 : 0), "\(name): \(property) signals: \(counts)")
            }
            let netlinkLast = netlink.events.last ?? [:]
            // network-changed comes from GLib's netlink parent class (the NM backend subclasses
            // it), on route changes, whatever reachd says: not counted against reachd.
            figures.append("\(name): NM backend: \(GLibClient.text(counts)) -> available=\(last["available"] ?? "?") metered=\(last["metered"] ?? "?") connectivity=\(last["connectivity"] ?? "?"); "
                + "netlink backend: \(GLibClient.text(netlink.counts(since: netlinkStart))) -> available=\(netlinkLast["available"] ?? "?") metered=\(netlinkLast["metered"] ?? "?")")
        }

        try await step("carrier loss", state: "offline", available: false, metered: false, connectivity: 1,
                       changed: ["network-available", "connectivity"]) { try uplinks.carrier(false) }
        try await step("carrier back", state: "online", available: true, metered: false, connectivity: 4,
                       changed: ["network-available", "connectivity"]) { try uplinks.carrier(true) }
        // A cellular uplink beside the wired one changes reachd's AvailableInterfaces but nothing
        // NetworkManager's clients read: no signal.
        try await step("cellular up beside ethernet", state: "online", available: true, metered: false, connectivity: 4,
                       changed: []) { try uplinks.addUplink("wwan0", "198.51.100", metric: 700) }
        try await step("ethernet gone, cellular carries", state: "online", available: true, metered: true, connectivity: 4,
                       changed: ["network-metered"]) { try uplinks.ns.ip("link del eth0") }

        // What Qt follows: PrimaryConnection -> Devices -> DeviceType (8, modem) and Metered (3, guess-yes).
        let client = try harness.connect()
        let primary = try Self.objectPath(client, Self.nmName, Self.nmPath, "PrimaryConnection")
        #expect(primary.hasPrefix(Self.nmPath + "/ActiveConnection/"))
        let xml = try harness.busctl(["--xml-interface", "introspect", Self.nmName, primary]).stdout
        #expect(xml.contains("<property name=\"Devices\" type=\"ao\" access=\"read\">"), "\(xml)")
        let devices = try harness.busctl(["get-property", Self.nmName, primary, Self.nmName + ".Connection.Active", "Devices"]).stdout
        let device = try #require(devices.split(separator: "\"").dropFirst().first.map(String.init), "\(devices)")
        let values = try harness.busctl(["get-property", Self.nmName, device, Self.nmName + ".Device", "DeviceType", "Metered"]).stdout
        #expect(values == "u 8\nu 3\n", "\(values)")

        for line in figures { print("GLib signals per change: \(line)") }
    }

    static func objectPath(_ client: BusConnection, _ destination: String, _ path: String, _ name: String) throws -> String {
        let reply = try client.call(
            destination: destination, path: path, interface: "org.freedesktop.DBus.Properties", member: "Get", timeout: .seconds(10)
        ) { message throws(BusError) in
            try message.append(destination)
            try message.append(name)
        }
        return try DaemonHarness.read(reply) { message in
            _ = try message.enter("v", "o")
            return try message.readObjectPath()
        }
    }

    /// The default: nothing is claimed, and GLib quietly keeps its netlink backend.
    @Test func offByDefaultTheNameHasNoOwner() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "eth0")
        let harness = try DaemonHarness(uplinks.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let owned = try harness.busctl(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", "s", Self.nmName])
        #expect(owned.stdout == "b false\n", "\(owned)")
        let names = try harness.busctl(["list", "--no-pager"]).stdout
        #expect(!names.contains("NetworkManager"), "\(names)")
        let glib = try GLibClient(uplinks.ns, bus: harness.address, backend: "networkmanager")
        defer { glib.child.kill() }
        let first = try await glib.wait(for: "start") { $0["signal"] as? String == "start" }
        #expect(first["backend"] as? String == "GNetworkMonitorNetlink", "\(first)")
    }

    /// `systemctl reload reachd` switches the surface: off releases the name, on claims it again.
    @Test func aReloadSwitchesTheSurface() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "eth0")
        let harness = try DaemonHarness(uplinks.ns, config: Self.config)
        defer { harness.shutdown() }
        try await harness.ready()
        func owned() throws -> Bool {
            try harness.busctl(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", "s", Self.nmName])
                .stdout == "b true\n"
        }
        func until(_ wanted: Bool) async throws {
            let deadline = ContinuousClock.now + waitLimit
            while try owned() != wanted {
                guard ContinuousClock.now < deadline else { throw TimedOut(what: "owner of \(Self.nmName) \(wanted); \(harness.diagnostics)") }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        try await until(true)
        try harness.writeConfig(Self.config.replacingOccurrences(of: "NetworkManager=yes", with: "NetworkManager=no"))
        harness.daemon?.signal(SIGHUP)
        try await until(false)
        #expect(try harness.busctl(["introspect", Self.nmName, Self.nmPath]).status != 0)
        try harness.writeConfig(Self.config)
        harness.daemon?.signal(SIGHUP)
        try await until(true)
        #expect(try harness.busctl(["get-property", Self.nmName, Self.nmPath, Self.nmName, "State"]).stdout == "u 70\n")
    }

    /// Never alongside NetworkManager: when another connection owns the name, reachd says so and
    /// serves its own interface only; it does not queue for the name.
    @Test func aTakenNameIsRefusedClearlyAndReachdGoesOn() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "eth0")
        let harness = try DaemonHarness(uplinks.ns, config: Self.config, start: false)
        defer { harness.shutdown() }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = harness.address
        let owner = try ChildProcess("/usr/bin/python3", ["-c", """
            import gi
            gi.require_version("Gio", "2.0")
            from gi.repository import Gio, GLib
            Gio.bus_own_name(Gio.BusType.SYSTEM, "\(Self.nmName)", Gio.BusNameOwnerFlags.NONE,
                None, lambda c, n: print("owned", flush=True), lambda c, n: print("lost", flush=True))
            GLib.MainLoop().run()
            """], environment: environment)
        defer { owner.kill() }
        _ = try owner.firstLine(timeout: .seconds(20))
        #expect(owner.lines.first == "owned", "\(owner.lines) \(owner.errorLines)")

        try harness.startDaemon()
        try await harness.ready()
        try harness.daemon?.waitForErrorLine(containing: "NetworkManager compatibility refused")
        let line = harness.daemonErrorLines.first { $0.contains("NetworkManager compatibility refused") } ?? ""
        #expect(line.contains("cannot own \(Self.nmName): another connection owns it") && line.contains("serving only org.reachd.Reachability1"), "\(line)")
        // Not queued behind the owner: the bus lists one owner and no one waiting.
        let queued = try harness.busctl(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListQueuedOwners", "s", Self.nmName])
        #expect(queued.stdout.hasPrefix("as 1 "), "\(queued)")
        #expect(try harness.busctl(["get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "State"]).stdout == "s \"online\"\n")
    }
}
