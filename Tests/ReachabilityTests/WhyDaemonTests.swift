import Foundation
import Testing
@testable import Reachability

/// `reachctl why` against the real kernel, through reachd (`--daemon` on a private bus) and
/// in-process (`--netns`), which must name the same first broken layer: carrier lost, no route,
/// an address still tentative, a gateway that stopped answering ARP, a kill switch for the
/// caller's uid, a radio switched off, a dormant link. Each starts online with nothing broken,
/// so a layer named is the fault's, not the scenario's.
@Suite(rootOnly)
struct WhyDaemonTests {
    typealias Scenario = DaemonBusTests.Scenario

    /// One answer of `reachctl why --json`: its exit status and object.
    struct Answer {
        var source: String
        var status: Int32
        var json: [String: Any]
        var brokenLayer: String { json["brokenLayer"] as? String ?? "?" }
        var layers: [[String: Any]] { json["layers"] as? [[String: Any]] ?? [] }
        func layer(_ name: String) -> [String: Any] { layers.first { $0["layer"] as? String == name } ?? [:] }
    }

    /// `reachctl why --json [target]` through reachd and in-process (with `inProcess`'s options).
    static func why(
        _ scenario: Scenario, _ harness: DaemonHarness, _ target: [String] = [], inProcess: [String] = []
    ) throws -> [Answer] {
        let sources: [(String, [String])] = [
            ("reachd", ["--bus-address", harness.address, "--daemon"]), ("in-process", ["--netns", scenario.ns.name] + inProcess),
        ]
        return try sources.map { name, options in
            let result = try reachctl(["why", "--json"] + target + options)
            return Answer(source: name, status: result.status, json: (try? result.json()) ?? ["stderr": result.stderr])
        }
    }

    /// Waits until both sources name `layer` first (exit 1), and returns their answers.
    @discardableResult
    static func broken(
        at layer: String, _ scenario: Scenario, _ harness: DaemonHarness, _ target: [String] = [], inProcess: [String] = []
    ) async throws -> [Answer] {
        var last: [Answer] = []
        try await eventually("both name \(layer): \(last.map { "\($0.source): \($0.status) \($0.json)" })") {
            last = try why(scenario, harness, target, inProcess: inProcess)
            return last.allSatisfy { $0.brokenLayer == layer && $0.status == (layer.isEmpty ? 0 : 1) }
        }
        for answer in last {
            #expect(answer.layers.map { $0["layer"] as? String ?? "" } == Explanation.hostLayers.map(\.rawValue), "\(answer.source)")
            let first = answer.layers.first { $0["status"] as? String == "broken" }
            #expect((first?["layer"] as? String ?? "") == layer, "\(answer.source): \(answer.json)")
            let fix = first?["fix"] as? String
            if !layer.isEmpty { #expect(fix.map { !$0.isEmpty } == true, "\(answer.source): a fix for \(layer)") }
        }
        return last
    }

    /// The scenario online, reachd ready on it, and nothing broken from either source.
    static func online(_ tag: String = #function, anyUser: Bool = false) async throws -> (Scenario, DaemonHarness) {
        let scenario = try Scenario(tag)
        try scenario.ns.waitForCarrier("up0")
        let harness = try DaemonHarness(scenario.ns, anyUser: anyUser)
        try await harness.ready()
        try await broken(at: "", scenario, harness)
        return (scenario, harness)
    }

    @Test func carrierLost_isTheLinkLayer() async throws {
        let (scenario, harness) = try await Self.online()
        defer { harness.shutdown() }
        try scenario.carrier(false)
        let answers = try await Self.broken(at: "link", scenario, harness)
        #expect(answers.allSatisfy { ($0.layer("link")["evidence"] as? [String])?.first?.contains("up0: up, no carrier") == true }, "\(answers.map(\.json))")
        // An address behind the same link: the same layer.
        try await Self.broken(at: "link", scenario, harness, ["198.51.100.7"])
        // The text an admin reads.
        let text = try reachctl(["why", "--bus-address", harness.address, "--daemon"])
        #expect(text.status == 1 && text.stdout.contains("broken at the link layer") && text.stdout.contains("Fix: up0 has no carrier"), "\(text)")
        try scenario.carrier(true)
        try await Self.broken(at: "", scenario, harness)
    }

    @Test func noRoute_isTheRouteLayer() async throws {
        let (scenario, harness) = try await Self.online()
        defer { harness.shutdown() }
        try scenario.ns.ip("route del default via 192.0.2.1")
        let answers = try await Self.broken(at: "route", scenario, harness)
        #expect(answers.allSatisfy { $0.layer("link")["status"] as? String == "ok" && $0.layer("address")["status"] as? String == "ok" })
    }

    @Test func aTentativeAddress_isTheAddressLayer() async throws {
        let (scenario, harness) = try await Self.online()
        defer { harness.shutdown() }
        // IPv6 alone, its address in duplicate address detection for 100 probes (100 s).
        _ = try scenario.ns.exec("/usr/sbin/sysctl", ["-qw", "net.ipv6.conf.up0.dad_transmits=100", "net.ipv6.conf.up0.accept_dad=1"])
        try scenario.ns.ip("addr flush dev up0")
        try scenario.ns.ip("-6 addr add 2001:db8:1::2/64 dev up0")
        try scenario.ns.ip("-6 route add default via fe80::1 dev up0")
        let answers = try await Self.broken(at: "address", scenario, harness)
        for answer in answers {
            #expect((answer.layer("address")["evidence"] as? [String]) == ["2001:db8:1::2/64 (tentative)"], "\(answer.source): \(answer.json)")
            #expect((answer.layer("address")["fix"] as? String)?.contains("tentative") == true, "\(answer.source)")
        }
    }

    @Test func aGatewayThatStoppedAnsweringARP_isTheGatewayLayer_andTheHostsReason() async throws {
        let (scenario, harness) = try await Self.online()
        defer { harness.shutdown() }
        // Nobody owns 192.0.2.1 any more: ARP for it goes unanswered (probes every 100 ms).
        try scenario.far.ip("addr del 192.0.2.1/24 dev up0p")
        _ = try scenario.ns.exec("/usr/sbin/sysctl", ["-qw", "net.ipv4.neigh.up0.retrans_time_ms=100"])
        try scenario.ns.ip("neigh flush dev up0")
        // One datagram toward the internet makes the kernel resolve the gateway, and give up.
        _ = try scenario.ns.exec("/usr/bin/python3", ["-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('193.0.14.129', 9))"])
        try await eventually("the kernel's FAILED") { (try? scenario.ns.ip("neigh show dev up0"))?.contains("192.0.2.1 FAILED") ?? false }
        let answers = try await Self.broken(at: "gateway", scenario, harness)
        // Flushed first, the entry has no answer on record: its FAILED is taken at its word.
        #expect(answers.allSatisfy { ($0.layer("gateway")["evidence"] as? [String]) == ["192.0.2.1 on up0: FAILED, never answered"] }, "\(answers.map(\.json))")
        let status = try reachctl(["status", "--json", "--bus-address", harness.address, "--daemon"]).json()
        #expect(status["state"] as? String == "local" && status["reason"] as? String == "gatewayUnreachable", "\(status)")
        // The gateway answers again: the next resolution succeeds and the host is online.
        try scenario.far.ip("addr add 192.0.2.1/24 dev up0p")
        _ = try scenario.ns.exec("/usr/bin/python3", ["-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('193.0.14.129', 9))"])
        try await Self.broken(at: "", scenario, harness)
    }

    @Test func aKillSwitchForTheCallersUid_isTheRouteLayer_forThatUserOnly() async throws {
        let (scenario, harness) = try await Self.online(anyUser: true)
        defer { harness.shutdown() }
        try scenario.ns.ip("rule add uidrange 65534-65534 prohibit")
        let user = ["--reuid=65534", "--regid=65534", "--clear-groups"]
        var last: [String] = []
        try await eventually("nobody's route broken: \(last)") {
            let bus = try ChildProcess("/usr/bin/setpriv", user + [reachctlPath(), "why", "--json", "--bus-address", harness.address, "--daemon"])
                .finish(timeout: .seconds(30))
            let local = try ChildProcess("/usr/sbin/ip", ["netns", "exec", scenario.ns.name, "/usr/bin/setpriv"] + user + [reachctlPath(), "why", "--json"],
                environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/reachd-test-bus", "PATH": "/usr/bin:/bin"])
                .finish(timeout: .seconds(30))
            last = [bus, local].map { "\($0.status) \($0.stdout) \($0.stderr)" }
            return [bus, local].allSatisfy { run in
                guard run.status == 1, let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] else { return false }
                let route = (json["layers"] as? [[String: Any]])?.first { $0["layer"] as? String == "route" }
                return json["brokenLayer"] as? String == "route" && json["uid"] as? Int == 65534
                    && (route?["evidence"] as? [String])?.first?.contains("prohibit") == true
            }
        }
        // root's traffic is not behind the rule.
        try await Self.broken(at: "", scenario, harness)
    }

    @Test func aRadioSwitchedOff_isTheRadioLayer() async throws {
        let tree = try FakeRadioTree()
        defer { tree.remove() }
        try tree.addRadio(link: "rw0", switch: 7)
        let configuration = try makeScratchDirectory("reachd-why-config")
        try RadioDaemonTests.wifiRule.write(toFile: configuration + "/reachd.conf", atomically: true, encoding: .utf8)
        let scenario = try Scenario(uplink: "rw0")
        let harness = try DaemonHarness(
            scenario.ns, config: RadioDaemonTests.wifiRule, arguments: ["--sysfs-root", tree.root, "--rfkill-device", tree.root + "/rfkill"])
        defer { harness.shutdown() }
        try await harness.ready()
        let inProcess = ["--sysfs-root", tree.root, "--config-dir", configuration]
        try await Self.broken(at: "", scenario, harness, inProcess: inProcess)
        // `rfkill block wifi`, and cfg80211 takes the phy's link down.
        try tree.block(7, .soft)
        try scenario.ns.ip("link set rw0 down")
        let answers = try await Self.broken(at: "radio", scenario, harness, inProcess: inProcess)
        #expect(answers.allSatisfy { ($0.layer("radio")["evidence"] as? [String]) == ["rw0: radio switched off (rfkill soft block)"] }, "\(answers.map(\.json))")
    }

    @Test func aDormantLink_isTheLinkLayer_andSaysDormant() async throws {
        let (scenario, harness) = try await Self.online()
        defer { harness.shutdown() }
        // Link mode dormant: operstate DORMANT until a supplicant says otherwise (none does here).
        // The kernel works the operstate out again on the next carrier change: a flap, as a
        // Wi-Fi link's association would bring.
        try scenario.ns.ip("link set up0 mode dormant")
        try scenario.carrier(false)
        // linkwatch applies carrier changes asynchronously: a flap faster than it would be one
        // event, and the operstate not worked out again. Wait for the loss before the return.
        try await eventually("up0 without carrier") { !((try? scenario.ns.ip("link show up0"))?.contains("LOWER_UP") ?? true) }
        try scenario.carrier(true)
        let answers = try await Self.broken(at: "link", scenario, harness)
        #expect(answers.allSatisfy { ($0.layer("link")["fix"] as? String)?.contains("dormant") == true }, "\(answers.map(\.json))")
    }

    @Test func aDeadNameserver_isTheDNSLayer_forAHostName_andForTheHostOnceLookupsKeepTimingOut() async throws {
        let scenario = try Scenario()
        try scenario.ns.waitForCarrier("up0")
        // The gateway's address swallows DNS queries: routable, never answering.
        let hole = try DNSBlackHole(in: scenario.far, address: "192.0.2.1")
        let directory = try makeScratchDirectory("reachd-why-dns")
        let resolvConf = directory + "/resolv.conf"
        try "nameserver 192.0.2.1\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        let config = "[Checks]\nDefaultTimeout=300ms\n[Stall]\nDetect=yes\nDNSTimeouts=2\n"
        try config.write(toFile: directory + "/reachd.conf", atomically: true, encoding: .utf8)
        let harness = try DaemonHarness(scenario.ns, config: config, resolvConf: resolvConf)
        defer { harness.shutdown() }
        try await harness.ready()
        let inProcess = ["--resolv-conf", resolvConf, "--config-dir", directory]
        let host = try await Self.broken(at: "", scenario, harness, inProcess: inProcess)
        #expect(host.allSatisfy { ($0.layer("dns")["evidence"] as? [String]) == ["192.0.2.1: routable via up0"] }, "\(host.map(\.json))")

        // A name's lookup times out: its DNS layer, after every layer below it was fine.
        let name = try await Self.broken(at: "dns", scenario, harness, ["unanswered.test"], inProcess: inProcess)
        #expect(name.allSatisfy { $0.json["target"] as? String == "unanswered.test" }, "\(name.map(\.json))")

        // reachd's own lookups timed out twice in a row (the stall detector's DNS rule): the
        // host's DNS layer is broken too, ahead of the traffic layer that stalls with it.
        let daemonOnly = ["why", "--json", "--bus-address", harness.address, "--daemon"]
        var last = ""
        try await eventually("the host's dns layer broken: \(last)", timeout: .seconds(30)) {
            _ = try reachctl(daemonOnly + ["unanswered.test"])
            let result = try reachctl(daemonOnly)
            last = result.stdout
            return result.status == 1 && (try? result.json())?["brokenLayer"] as? String == "dns"
        }
        #expect(last.contains("lookup(s) in a row timed out"), "\(last)")
        withExtendedLifetime(hole) {}
    }

    @Test func aCaptivePortal_isThePortalLayer_throughReachd_andUnknownInProcess() async throws {
        // reachd's probe meets a hotel login (302 to a login page) through the gateway.
        let setup = try await ConnectivityProbeTests.Setup(config: "[Connectivity]\nURL=http://192.0.2.1:8302/generate_204\nTimeout=1s\n")
        try await setup.waitFor("portal")
        let result = try reachctl(["why", "--json", "--bus-address", setup.harness.address, "--daemon"])
        let json = try result.json()
        #expect(result.status == 1 && json["brokenLayer"] as? String == "portal", "\(result)")
        let portal = (json["layers"] as? [[String: Any]])?.first { $0["layer"] as? String == "portal" }
        #expect((portal?["evidence"] as? [String])?.first?.contains("http://login.hotel.example/?continue=probe") == true, "\(json)")
        #expect((portal?["fix"] as? String)?.contains("log in") == true, "\(json)")
        // In-process there is no probe: the layer is unknown and nothing below it is broken.
        let local = try reachctl(["why", "--json", "--netns", setup.scenario.ns.name])
        let localJSON = try local.json()
        let localPortal = (localJSON["layers"] as? [[String: Any]])?.first { $0["layer"] as? String == "portal" }
        #expect(local.status == 0 && localJSON["brokenLayer"] as? String == "" && localPortal?["status"] as? String == "unknown", "\(local)")
        setup.harness.shutdown()
    }

    @Test func anInvalidTarget_isAUsageError_namingIt() async throws {
        let (scenario, harness) = try await Self.online()
        defer { harness.shutdown() }
        for options in [["--bus-address", harness.address, "--daemon"], ["--netns", scenario.ns.name]] {
            let result = try reachctl(["why", "fe80::1%nosuchlink0"] + options)
            #expect(result.status == 255 && result.stderr.contains("nosuchlink0"), "\(options): \(result)")
        }
        let bus = try harness.busctl(["call", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "Explain", "s", "not an address"])
        #expect(bus.status != 0 && bus.stderr.contains("not an address"), "\(bus)")
    }
}
