import Foundation
import Testing
@testable import Reachability

/// CheckUnit through reachd against an owner of org.freedesktop.systemd1 on reachd's private bus
/// (GLib's GDBus, python3-gi) that serves each unit's properties as systemd 252 types them, and
/// against a mute one. The real systemd, with real units and real traffic, is
/// PackagingDebianTests'. reachd answers each unit as its sandbox and its route say, names what
/// denies, refuses a hostile name, another user's unit and a unit systemd does not have, and its
/// loop answers while systemd is silent.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/python3"), "needs python3-gi"))
struct UnitCheckDaemonTests {
    /// argv[1]: JSON `{unit: {property: [signature, value]}}`; with argv[2] "mute", the objects
    /// are registered but their main context never runs: calls to them are taken off the bus
    /// and never answered, as a hung systemd would. Prints "owned" once the name is its own,
    /// then "Get UNIT PROPERTY" for each property it answers.
    static let owner = """
        import json, sys, time
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        connection = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
        def own():
            connection.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                GLib.Variant("(su)", ("org.freedesktop.systemd1", 4)), None, Gio.DBusCallFlags.NONE, -1, None)
            print("owned", flush=True)
        units = json.loads(sys.argv[1])
        def label(name):
            return "".join(c if c.isalpha() or (c.isdigit() and i > 0) else "_%02x" % ord(c) for i, c in enumerate(name))
        info = Gio.DBusNodeInfo.new_for_xml('''<node>
          <interface name="org.freedesktop.systemd1.Unit"><property name="LoadState" type="s" access="read"/></interface>
          <interface name="org.freedesktop.systemd1.Manager"><property name="Features" type="s" access="read"/></interface>
          <interface name="org.freedesktop.systemd1.Service">
            <property name="MainPID" type="u" access="read"/><property name="User" type="s" access="read"/>
            <property name="DynamicUser" type="b" access="read"/><property name="PrivateNetwork" type="b" access="read"/>
            <property name="NetworkNamespacePath" type="s" access="read"/>
            <property name="IPAddressAllow" type="a(iayu)" access="read"/><property name="IPAddressDeny" type="a(iayu)" access="read"/>
            <property name="RestrictNetworkInterfaces" type="(bas)" access="read"/>
            <property name="RestrictAddressFamilies" type="(bas)" access="read"/>
            <property name="ControlGroup" type="s" access="read"/></interface></node>''')
        defaults = {"LoadState": ["s", "loaded"], "MainPID": ["u", 0], "User": ["s", ""], "DynamicUser": ["b", False],
            "PrivateNetwork": ["b", False], "NetworkNamespacePath": ["s", ""], "IPAddressAllow": ["a(iayu)", []],
            "IPAddressDeny": ["a(iayu)", []], "RestrictNetworkInterfaces": ["(bas)", [False, []]],
            "RestrictAddressFamilies": ["(bas)", [False, []]], "ControlGroup": ["s", ""]}
        def getter(unit, settings):
            def get(connection, sender, path, interface, name):
                print("Get", unit, name, flush=True)
                signature, value = settings.get(name, defaults[name])
                if signature == "a(iayu)": value = [(f, bytes(a), p) for f, a, p in value]
                if signature == "(bas)": value = tuple(value)
                return GLib.Variant(signature, value)
            return get
        for name, settings in units.items():
            path = "/org/freedesktop/systemd1/unit/" + label(name)
            for interface in info.interfaces[:1] + info.interfaces[2:]:
                connection.register_object(path, interface, None, getter(name, settings), None)
        connection.register_object("/org/freedesktop/systemd1", info.interfaces[1], None,
            lambda c, s, p, i, n: GLib.Variant("s", "+PAM +SECCOMP +BPF_FRAMEWORK"), None)
        own()
        if sys.argv[2:] == ["mute"]: time.sleep(3600)
        GLib.MainLoop().run()
        """

    static func startOwner(_ harness: DaemonHarness, _ plan: String, mute: Bool = false) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = harness.address
        let child = try ChildProcess("/usr/bin/python3", ["-c", owner, plan] + (mute ? ["mute"] : []), environment: environment)
        _ = try child.firstLine(timeout: .seconds(20))
        #expect(child.lines.first == "owned", "\(child.lines) \(child.errorLines)")
        return child
    }

    /// The units: systemd's `a(iayu)` is (AF_INET 2 / AF_INET6 10, address bytes, prefix length).
    static let units = """
        {"plain.service": {},
         "backup.service": {"IPAddressDeny": ["a(iayu)", [[2, [0,0,0,0], 0], [10, [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0], 0]]],
                            "IPAddressAllow": ["a(iayu)", [[2, [192,0,2,1], 32]]]},
         "vpn-only.service": {"RestrictNetworkInterfaces": ["(bas)", [true, ["wg0"]]]},
         "unix.service": {"RestrictAddressFamilies": ["(bas)", [true, ["AF_UNIX"]]]},
         "private.service": {"PrivateNetwork": ["b", true]},
         "prohibited.service": {"User": ["s", "4242"]},
         "nobody.service": {"User": ["s", "65534"]},
         "missing.service": {"LoadState": ["s", "not-found"]}}
        """

    /// `reachctl check|why --unit` through the harness's reachd, as JSON.
    static func ask(_ harness: DaemonHarness, _ command: String, _ unit: String, _ target: String) throws -> (status: Int32, json: [String: Any], stderr: String) {
        let result = try reachctl([command, "--json", "--unit", unit, target, "--bus-address", harness.address, "--daemon"])
        return (result.status, (try? result.json()) ?? [:], result.stderr)
    }

    @Test func eachUnitIsJudgedByItsSandbox_andWhyNamesWhatDenies() async throws {
        let scenario = try DaemonBusTests.Scenario()
        try scenario.ns.ip("rule add uidrange 4242-4242 prohibit")
        // systemd filters IP addresses only on cgroup v2: reachd reads that from its sysfs root,
        // which here holds one (scripts/test's fresh sysfs has none at fs/cgroup).
        let sysfs = try makeScratchDirectory("unit-sysfs")
        try FileManager.default.createDirectory(atPath: sysfs + "/fs/cgroup", withIntermediateDirectories: true)
        _ = try run("/bin/mount", ["-t", "cgroup2", "none", sysfs + "/fs/cgroup"])
        defer {
            _ = try? run("/bin/umount", [sysfs + "/fs/cgroup"])
            removeTree(sysfs)
        }
        let harness = try DaemonHarness(scenario.ns, arguments: ["--sysfs-root", sysfs])
        defer { harness.shutdown() }
        try await harness.ready()
        let isolated = try TestNamespace("isolated")
        let units = Self.units.replacingOccurrences(of: "\"plain.service\": {},", with: """
            "plain.service": {},
            "tunnel.service": {"NetworkNamespacePath": ["s", "\(scenario.far.path)"]},
            "confined.service": {"NetworkNamespacePath": ["s", "\(isolated.path)"]},
            """)
        let owner = try Self.startOwner(harness, units)
        defer { owner.kill() }

        let far = "198.51.100.7"
        let expected: [(unit: String, target: String, reachable: Bool, message: String?)] = [
            ("plain.service", far, true, nil),
            ("backup.service", far, false, "IPAddressDeny=any of backup.service: 198.51.100.7 is denied"),
            ("backup.service", "192.0.2.1", true, nil),
            ("vpn-only.service", far, false, "RestrictNetworkInterfaces=wg0 of vpn-only.service: the route to 198.51.100.7 leaves through up0"),
            ("unix.service", far, false, "RestrictAddressFamilies=AF_UNIX of unix.service: AF_INET sockets are refused"),
            ("private.service", far, false, "PrivateNetwork=yes of private.service: its namespace has a loopback only, no way to 198.51.100.7"),
            ("prohibited.service", far, false, nil),
            ("nobody.service", far, true, nil),
            // far holds 192.0.2.1/24 on up0p: 192.0.2.2 is on its link, 198.51.100.7 beyond any route.
            ("tunnel.service", "192.0.2.2", true, nil),
            ("tunnel.service", far, false, "NetworkNamespacePath=\(scenario.far.path) of tunnel.service: that namespace has no way to 198.51.100.7 (noRoute)"),
            ("confined.service", "192.0.2.2", false,
             "NetworkNamespacePath=\(isolated.path) of confined.service: that namespace has no way to 192.0.2.2 (noRoute)"),
        ]
        for item in expected {
            let check = try Self.ask(harness, "check", item.unit, item.target)
            #expect(check.status == (item.reachable ? 0 : 1), "\(item.unit): \(check)")
            #expect((check.json["reason"] as? String == "") == item.reachable, "\(item.unit): \(check.json)")
            if let message = item.message { #expect(check.json["message"] as? String == message, "\(item.unit): \(check.json)") }
            let why = try Self.ask(harness, "why", item.unit, item.target)
            #expect(why.json["unit"] as? String == item.unit, "\(why)")
            let layers = why.json["layers"] as? [[String: Any]] ?? []
            let policy = layers.first { $0["layer"] as? String == "policy" }
            #expect((policy?["status"] as? String) == (item.message == nil ? "ok" : "broken"), "\(item.unit): \(why.json)")
            if let message = item.message { #expect((policy?["evidence"] as? [String])?.first == message, "\(why.json)") }
        }
        // No unit here is watched ([Units] Watch=): each traffic layer is the host's, and says so.
        let plainCall = try harness.busctlCall("CheckUnit", "ss", "plain.service", far)
        #expect(plainCall.stdout.contains(#""TrafficScope":{"type":"s","data":"host"}"#), "\(plainCall)")
        #expect(try Self.ask(harness, "why", "plain.service", far).json["trafficScope"] as? String == "host")
        let tunnel = try Self.ask(harness, "check", "tunnel.service", "192.0.2.2")
        #expect(tunnel.json["interface"] as? String == "up0p", "\(tunnel.json)")
        let inside = try Self.ask(harness, "why", "tunnel.service", "192.0.2.2")
        let link = (inside.json["layers"] as? [[String: Any]])?.first { $0["layer"] as? String == "link" }
        #expect(link?["status"] as? String == "unknown", "the host's link says nothing of the namespace's: \(inside.json)")
        // The uid's prohibit rule is the route's, not the sandbox's.
        let prohibited = try Self.ask(harness, "why", "prohibited.service", far)
        #expect(prohibited.json["brokenLayer"] as? String == "route", "\(prohibited.json)")
        let check = try Self.ask(harness, "check", "prohibited.service", far)
        #expect(check.json["reason"] as? String == "policyBlocked", "\(check.json)")

        // `is --unit` for ExecCondition=: the host is online, and the unit's own traffic decides.
        let plainIs = try reachctl(["is", "--unit", "plain.service", "online", "--bus-address", harness.address, "--daemon"])
        #expect(plainIs.status == 0, "\(plainIs)")
        let backupIs = try reachctl(["is", "--unit", "backup.service", "online", "--bus-address", harness.address, "--daemon"])
        #expect(backupIs.status == 1 && backupIs.stderr.contains("online: no, IPAddressDeny=any of backup.service: 193.0.14.129 is denied"), "\(backupIs)")

        // `status --unit`: the service's own path to the internet.
        let plainStatus = try reachctl(["status", "--unit", "plain", "--json", "--bus-address", harness.address, "--daemon"])
        #expect(plainStatus.status == 0 && (try? plainStatus.json())?["interface"] as? String == "up0", "\(plainStatus)")
        let backupStatus = try reachctl(["status", "--unit", "backup.service", "--bus-address", harness.address, "--daemon"])
        #expect(backupStatus.status == 1 && backupStatus.stdout.hasPrefix("backup.service: offline via up0: policyBlocked (IPAddressDeny=any of backup.service"), "\(backupStatus)")

        // Refusals, each naming the value, and reachd answering throughout.
        let hostile = try reachctl(["check", "--unit", "../../etc/passwd", far, "--bus-address", harness.address, "--daemon"])
        #expect(hostile.status == 255 && hostile.stderr.contains("invalid unit name '../../etc/passwd'"), "\(hostile)")
        let throughBus = try harness.busctlCall("CheckUnit", "ss", "x\u{1b}[31m.service", far)
        #expect(throughBus.status != 0 && throughBus.stderr.contains("invalid unit name"), "\(throughBus)")
        let missing = try Self.ask(harness, "check", "missing.service", far)
        #expect(missing.status == 255 && missing.stderr.contains("systemd has no unit missing.service (LoadState='not-found')"), "\(missing)")
        let socket = try harness.busctlCall("CheckUnit", "ss", "backup.socket", far)
        #expect(socket.stderr.contains("only services are judged"), "\(socket)")
        #expect(harness.daemon?.isRunning == true)
    }

    /// A mute owner of systemd's name: CheckUnit fails with Timeout naming systemd after its 2 s,
    /// and meanwhile reachd answers every other call at once.
    @Test func aMuteSystemdCostsTheCallerTwoSeconds_andReachdsLoopNothing() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let owner = try Self.startOwner(harness, Self.units, mute: true)
        defer { owner.kill() }
        let started = ContinuousClock.now
        let pending = try ChildProcess(reachctlPath(), ["check", "--unit", "plain.service", "198.51.100.7", "--bus-address", harness.address, "--daemon"])
        var slowest: Duration = .zero
        var answered = 0
        while ContinuousClock.now - started < .milliseconds(1500) {
            let asked = ContinuousClock.now
            let status = try harness.busctlCall("CheckAddress", "s", "198.51.100.7")
            slowest = max(slowest, ContinuousClock.now - asked)
            if status.status == 0 { answered += 1 }
        }
        let finished = try pending.finish(timeout: .seconds(10))
        let waited = ContinuousClock.now - started
        print("unit(mute systemd): \(answered) CheckAddress answered while CheckUnit waited, slowest \(slowest); CheckUnit failed after \(waited)")
        #expect(answered >= 3 && slowest < .milliseconds(500), "answered \(answered), slowest \(slowest)")
        #expect(finished.status == 255 && finished.stderr.contains("systemd (org.freedesktop.systemd1) did not answer for plain.service within 2000 ms"), "\(finished)")
        #expect(waited < .seconds(5), "\(waited)")
    }
}
