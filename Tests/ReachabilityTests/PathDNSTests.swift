import Foundation
import Testing
@testable import Reachability

/// issue 25: `SupportsDNS` and `Constrained` through reachd (a real dbus-daemon, busctl as the
/// client) and in-process (`reachctl status --json --netns`), with equal answers: a nameserver
/// routable through a ready link, made unreachable, replaced by rename in resolv.conf, and on a
/// link whose carrier is lost; `Constrained=yes` on the uplink by a reload. Each change is
/// exactly one `Changed`.
@Suite(rootOnly)
struct PathDNSTests {
    /// The scenario's up0 uplink, and dns0: a second link to `far` (203.0.113.2/24, no default
    /// route), for a nameserver whose carrier can go while the host stays online.
    static func scenario(_ tag: String = #function) throws -> DaemonBusTests.Scenario {
        let scenario = try DaemonBusTests.Scenario(tag)
        try scenario.addUplink("dns0", "203.0.113", metric: 500)
        try scenario.ns.ip("route del default dev dns0")
        return scenario
    }

    /// Writes resolv.conf aside and renames it over, as resolvconf and NetworkManager do.
    static func writeResolvConf(_ path: String, _ nameserver: String) throws {
        try "# written by PathDNSTests\nnameserver \(nameserver)\n".write(toFile: path + ".new", atomically: false, encoding: .utf8)
        guard rename(path + ".new", path) == 0 else { throw SetupFailure(call: "rename", path: path, code: errno) }
    }

    static func property(_ harness: DaemonHarness, _ name: String) throws -> String {
        let output = try harness.busctl(["get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, name])
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The host's answer as `reachctl status --json` prints it, without the generation (each
    /// source counts its own) and the interfaces' list.
    static func status(_ arguments: [String]) throws -> [String: String] {
        let json = try reachctl(["status", "--json"] + arguments).json()
        let keys = ["flags", "state", "primaryInterface", "supportsIPv4", "supportsIPv6", "supportsDNS", "gateways", "reason"]
        return Dictionary(uniqueKeysWithValues: keys.map { ($0, "\(json[$0] ?? "missing")") })
    }

    /// Waits until reachd's SupportsDNS is `expected` and the in-process answer agrees with
    /// reachd's; then, after a pause for any straggler, exactly one more Changed than `before`.
    static func expect(
        supportsDNS expected: Bool, _ what: String, harness: DaemonHarness, monitor: DaemonHarness.SignalMonitor,
        changesBefore before: Int, inProcess: [String]
    ) async throws {
        try await eventually("\(what): SupportsDNS \(expected)") { try property(harness, "SupportsDNS") == "b \(expected)" }
        try await monitor.wait(for: "\(what): Changed") { $0.compactMap(\.changed).count > before }
        let daemon = try status(["--bus-address", harness.address])
        #expect(daemon["supportsDNS"] == (expected ? "1" : "0"), "\(what): \(daemon)")
        try await eventually("\(what): in-process \(daemon)") { try status(inProcess) == daemon }
        try await Task.sleep(for: .milliseconds(300))
        #expect(monitor.changes.count == before + 1, "\(what): \(monitor.changes)")
        let changed = monitor.signals.compactMap(\.propertiesChanged).last { $0.values["SupportsDNS"] != nil }
        #expect(changed?.values["SupportsDNS"] as? Bool == expected, "\(what): PropertiesChanged \(String(describing: changed))")
    }

    @Test func supportsDNSFollowsTheNameserversRouteCarrierAndResolvConf() async throws {
        let scenario = try Self.scenario()
        let directory = try makeScratchDirectory("pathdns")
        defer { removeTree(directory) }
        let resolvConf = directory + "/resolv.conf"
        try Self.writeResolvConf(resolvConf, "198.51.100.53")
        let harness = try DaemonHarness(scenario.ns, resolvConf: resolvConf)
        defer { harness.shutdown() }
        try await harness.ready()
        let inProcess = ["--netns", scenario.ns.name, "--resolv-conf", resolvConf]
        let monitor = try harness.monitor()

        // Routed by the default route through up0: routable.
        #expect(try Self.property(harness, "SupportsDNS") == "b true")
        #expect(try Self.status(inProcess) == Self.status(["--bus-address", harness.address]))
        let text = try reachctl(["status", "--bus-address", harness.address]).stdout
        #expect(text.contains("Path: IPv4 via 192.0.2.1\nDNS: 198.51.100.53 routable"), "\(text)")

        // Its route made unreachable: the host stays online, only SupportsDNS moves.
        try scenario.ns.ip("route add unreachable 198.51.100.53/32")
        try await Self.expect(
            supportsDNS: false, "unreachable route", harness: harness, monitor: monitor, changesBefore: 0, inProcess: inProcess)
        #expect(try Self.property(harness, "State") == "s \"online\"")

        // resolv.conf replaced by a rename, naming a server on dns0: routable again.
        try Self.writeResolvConf(resolvConf, "203.0.113.53")
        try await Self.expect(
            supportsDNS: true, "resolv.conf renamed over", harness: harness, monitor: monitor, changesBefore: 1, inProcess: inProcess)

        // dns0's carrier lost: the route stays, the link is not ready.
        try scenario.far.ip("link set dns0p down")
        try await Self.expect(
            supportsDNS: false, "carrier lost", harness: harness, monitor: monitor, changesBefore: 2, inProcess: inProcess)
        #expect(try Self.property(harness, "State") == "s \"online\"")

        // The unreachable route goes and the first server comes back, by another rename.
        try scenario.ns.ip("route del unreachable 198.51.100.53/32")
        try Self.writeResolvConf(resolvConf, "198.51.100.53")
        try await Self.expect(
            supportsDNS: true, "first server back", harness: harness, monitor: monitor, changesBefore: 3, inProcess: inProcess)
        monitor.stop()
    }

    @Test func constrainedUplinkIsFlaggedAfterAReloadWithOneChanged() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = try #require(harness.daemon)
        let isConstrained = ReachabilityFlags.isConstrained.rawValue
        #expect(try Self.property(harness, "Constrained") == "b false")
        let monitor = try harness.monitor()

        try harness.writeConfig("[Interface]\nName=up0\nConstrained=yes\n")
        daemon.signal(SIGHUP)
        try await eventually("Constrained true") { try Self.property(harness, "Constrained") == "b true" }
        try await monitor.wait(for: "Changed") { !$0.compactMap(\.changed).isEmpty }
        try await Task.sleep(for: .milliseconds(300))
        #expect(monitor.changes.count == 1, "\(monitor.changes)")
        #expect(monitor.changes.first.map { $0.flags & isConstrained != 0 } == true, "\(monitor.changes)")

        // The same through reachd and in-process with the same configuration: the host's flags,
        // the interface's, and a check through it.
        let viaDaemon = ["--bus-address", harness.address]
        let inProcess = ["--netns", scenario.ns.name, "--config-dir", harness.configDirectory]
        for source in [viaDaemon, inProcess] {
            let status = try reachctl(["status", "--json"] + source).json()
            #expect((status["flags"] as? [String])?.contains("isConstrained") == true, "\(source): \(status)")
            let interfaces = status["interfaces"] as? [[String: Any]] ?? []
            let up0 = interfaces.first { $0["name"] as? String == "up0" }
            #expect((up0?["flags"] as? [String])?.contains("isConstrained") == true, "\(source): \(interfaces)")
            let check = try reachctl(["check", "--json", "198.51.100.7"] + source).json()
            #expect((check["flags"] as? [String])?.contains("isConstrained") == true, "\(source): \(check)")
        }
        #expect(try Self.status(inProcess) == Self.status(viaDaemon))

        // Off again by another reload: one more Changed, the flag gone.
        try harness.writeConfig("[Interface]\nName=up0\nMetered=yes\n")
        daemon.signal(SIGHUP)
        try await eventually("Constrained false") { try Self.property(harness, "Constrained") == "b false" }
        try await Task.sleep(for: .milliseconds(300))
        #expect(monitor.changes.count == 2, "\(monitor.changes)")
        #expect(monitor.changes.last.map { $0.flags & isConstrained == 0 } == true, "\(monitor.changes)")
        monitor.stop()
    }

    /// systemd-resolved's layout, in-process: resolv.conf a symlink to a stub file in another
    /// directory, that file renamed over, and resolved's upstream list appearing beside it.
    @Test func aSymlinkedStubIsFollowedAndJudgedByItsUpstreamList() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "pf0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let directory = try makeScratchDirectory("pathdns")
        defer { removeTree(directory) }
        for sub in ["etc", "resolve"] { mkdir(directory + "/" + sub, 0o755) }
        let stub = directory + "/resolve/stub-resolv.conf"
        try Self.writeResolvConf(stub, "198.51.100.53")
        symlink("../resolve/stub-resolv.conf", directory + "/etc/resolv.conf")
        var configuration = CoreConfiguration()
        configuration.namespacePath = ns.path
        configuration.sysfsRoot = "/nonexistent-sysfs"
        configuration.resolvConfPath = directory + "/etc/resolv.conf"
        configuration.resolvedUpstreamPath = directory + "/resolve/resolv.conf"
        let monitor = try ReachabilityMonitor(configuration: configuration)
        func expect(_ expected: Bool, _ what: String) async throws {
            try await eventually("\(what): supportsDNS \(expected), \(monitor.pathFacts)") { monitor.pathFacts.supportsDNS == expected }
        }
        try await expect(true, "routed by the default route")
        try ns.ip("route add unreachable 198.51.100.53/32")
        try await expect(false, "its route unreachable")
        // The stub file renamed over with resolved's stub: online, no upstream list, so it counts.
        try Self.writeResolvConf(stub, "127.0.0.53")
        try await expect(true, "the stub while online")
        // resolved's upstream list appears, naming the unreachable server: that is what counts.
        try Self.writeResolvConf(directory + "/resolve/resolv.conf", "198.51.100.53")
        try await expect(false, "the upstream server, unreachable")
        try ns.ip("route del unreachable 198.51.100.53/32")
        try await expect(true, "the upstream server routable again")
        withExtendedLifetime(monitor) {}
    }
}
