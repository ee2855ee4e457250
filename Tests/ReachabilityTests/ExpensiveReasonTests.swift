import Foundation
import Testing
@testable import Reachability

/// Why a path is expensive, from each fact that can say so: the pure Engine fed the facts
/// (configuration, a cellular kind, a tether driver, the iPhone hotspot layout), then reachd
/// against the kernel for the layout and configuration.
struct ExpensiveReasonTests {
    /// eth0 online through `gateway` with `address`/`length`, its driver `driver`.
    static func uplink(
        _ classifier: Classifier = Classifier(), address: String = "192.0.2.10", length: UInt8 = 24,
        gateway: String = "192.0.2.1", driver: String? = nil, deviceType: String? = nil
    ) throws -> NetworkState {
        var state = NetworkState(classifier: classifier)
        let change = state.apply([
            .link(Fact.ethernet(2, "eth0"), device: DeviceFacts(deviceType: deviceType, driver: driver)),
            .address(Fact.v4(2, address, length)),
            .route(Fact.defaultV4(via: gateway, dev: 2), replace: false),
        ])
        try #require(change?.host.state == .online)
        return state
    }

    @Test func eachFactGivesItsReason() throws {
        #expect(try Self.uplink().host.expensiveReason == nil)
        #expect(try !Self.uplink().host.flags.contains(.isExpensive))

        let configured = try Self.uplink(Classifier(rules: [InterfaceRule(pattern: "eth0", metered: true)]))
        #expect(configured.host.expensiveReason == .configuration)
        #expect(configured.host.flags.contains(.isExpensive))

        let cellular = try Self.uplink(deviceType: "wwan")
        #expect(cellular.host.expensiveReason == .cellular)

        for driver in ["ipheth", "rndis_host"] {
            let tether = try Self.uplink(driver: driver)
            #expect(tether.host.expensiveReason == .tether, "\(driver)")
            #expect(tether.host.flags.contains(.isExpensive))
        }
        // USB Ethernet adapters and docks use these too: no guess.
        for driver in ["cdc_ncm", "cdc_ether", "r8152"] {
            #expect(try Self.uplink(driver: driver).host.expensiveReason == nil, "\(driver)")
        }

        let hotspot = try Self.uplink(address: "172.20.10.3", length: 28, gateway: "172.20.10.1")
        #expect(hotspot.host.expensiveReason == .hotspot)
        #expect(hotspot.host.flags.contains(.isExpensive))
        // The layout is the /28 and its gateway both: either alone is some other network.
        #expect(try Self.uplink(address: "172.20.10.3", length: 24, gateway: "172.20.10.1").host.expensiveReason == nil)
        #expect(try Self.uplink(address: "172.20.10.3", length: 28, gateway: "172.20.10.14").host.expensiveReason == nil)
        #expect(try Self.uplink(address: "172.20.11.3", length: 28, gateway: "172.20.11.1").host.expensiveReason == nil)
    }

    @Test func aTetherDriverReadThroughAnInjectedSysfsTree() throws {
        // As sysfs lays it out: class/net/NAME/device/driver links to the driver's directory.
        let files = FileManager.default
        let root = files.temporaryDirectory.appendingPathComponent("reachd-tether-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
        defer { try? files.removeItem(atPath: root) }
        for (name, driver) in [("eth1", "ipheth"), ("usb0", "rndis_host"), ("eth2", "cdc_ether")] {
            try files.createDirectory(atPath: root + "/class/net/\(name)/device", withIntermediateDirectories: true)
            try files.createDirectory(atPath: root + "/bus/usb/drivers/\(driver)", withIntermediateDirectories: true)
            try "INTERFACE=\(name)\n".write(toFile: root + "/class/net/\(name)/uevent", atomically: true, encoding: .utf8)
            try files.createSymbolicLink(atPath: root + "/class/net/\(name)/device/driver", withDestinationPath: "../../../../bus/usb/drivers/\(driver)")
        }
        let reader = SysfsReader(root: root)
        for (name, reason) in [("eth1", ExpensiveReason.tether), ("usb0", .tether), ("eth2", nil)] {
            let facts = reader.deviceFacts(forInterface: name)
            var state = NetworkState()
            let applied = state.apply([
                .link(Fact.ethernet(2, name), device: facts), .address(Fact.v4(2, "192.0.2.10")),
                .route(Fact.defaultV4(via: "192.0.2.1", dev: 2), replace: false),
            ])
            let change = try #require(applied)
            #expect(change.host.expensiveReason == reason, "\(name): \(facts)")
            #expect(change.changedInterfaces.first?.expensiveReason == reason)
            #expect(change.host.flags.contains(.isExpensive) == (reason != nil))
        }
    }

    @Test func networkManagersMeteredCallsTheGuessesGuesses() throws {
        let hotspot = try Self.uplink(address: "172.20.10.3", length: 28, gateway: "172.20.10.1")
        #expect(NetworkManagerValues(host: hotspot.host, interfaces: hotspot.snapshot.interfaces).metered == NetworkManagerValues.meteredGuessYes)
        let configured = try Self.uplink(Classifier(rules: [InterfaceRule(pattern: "eth0", metered: true)]))
        #expect(NetworkManagerValues(host: configured.host, interfaces: configured.snapshot.interfaces).metered == NetworkManagerValues.meteredYes)
        #expect(NetworkManagerValues(host: try Self.uplink(driver: "ipheth").host, interfaces: try Self.uplink(driver: "ipheth").snapshot.interfaces).metered == NetworkManagerValues.meteredGuessYes)
        #expect(NetworkManagerValues(host: try Self.uplink().host, interfaces: try Self.uplink().snapshot.interfaces).metered == NetworkManagerValues.meteredGuessNo)
    }

    @Test func configurationComesFirstAndMeteredNoSilencesTheGuesses() throws {
        let both = try Self.uplink(Classifier(rules: [InterfaceRule(pattern: "eth*", metered: true)]), driver: "ipheth")
        #expect(both.host.expensiveReason == .configuration)
        let unmetered = Classifier(rules: [InterfaceRule(pattern: "eth0", metered: false)])
        #expect(try Self.uplink(unmetered, driver: "ipheth").host.expensiveReason == nil)
        #expect(try !Self.uplink(unmetered, address: "172.20.10.3", length: 28, gateway: "172.20.10.1").host.flags.contains(.isExpensive))
        // A modem stays expensive: its kind says so, not a guess.
        #expect(try Self.uplink(unmetered, deviceType: "wwan").host.expensiveReason == .cellular)
    }

    @Test func theReasonFollowsTheGatewayAndAReload() throws {
        var state = try Self.uplink(address: "172.20.10.3", length: 28, gateway: "172.20.10.1")
        let removal = state.apply([.routeRemoved(Fact.defaultV4(via: "172.20.10.1", dev: 2))])
        let gone = try #require(removal)
        #expect(gone.host.expensiveReason == nil)
        let addition = state.apply([.route(Fact.defaultV4(via: "172.20.10.1", dev: 2), replace: false)])
        let back = try #require(addition)
        #expect(back.host.expensiveReason == .hotspot)
        let reclassified = state.reclassify(with: Classifier(rules: [InterfaceRule(pattern: "eth0", metered: false)]))
        let reload = try #require(reclassified)
        #expect(reload.hostChanged)
        #expect(reload.host.expensiveReason == nil && !reload.host.flags.contains(.isExpensive))
    }

    @Test func aTunnelOverAMeteredLinkIsExpensiveForItsCarriersReason() throws {
        var state = try Self.uplink(driver: "ipheth")
        // A VPN client's split default (0.0.0.0/1) through the tunnel, the main default left in
        // place through eth0: the kernel's answer for the internet is the tunnel.
        let tun = Link(
            index: 3, name: "tun0", flags: [.up, .pointToPoint, .running, .lowerUp],
            hardwareType: Link.hardwareNone, operState: .unknown, infoKind: "tun")
        let split = Route(destination: IPPrefix(.anyV4, length: 1), metric: 0, nextHops: [NextHop(gateway: nil, interfaceIndex: 3)])
        let applied = state.apply([
            .link(tun, device: DeviceFacts()), .address(Fact.v4(3, "10.8.0.2", 32)), .route(split, replace: false),
            .internetPath(family: .ipv4, route: split),
        ])
        let change = try #require(applied)
        #expect(change.host.primaryInterface == "tun0")
        #expect(change.host.underlyingInterface == "eth0", "\(change.host)")
        #expect(change.host.expensiveReason == .tether)
    }

    @Test func theStatusLineAndJSONSayWhy() throws {
        let state = try Self.uplink(address: "172.20.10.3", length: 28, gateway: "172.20.10.1")
        #expect(renderStatus(state.snapshot).contains("\nMetered: yes (iPhone hotspot address layout)\n"), "\(renderStatus(state.snapshot))")
        #expect(state.snapshot.json.serialized().contains("\"expensiveReason\":\"hotspot\""))
        let plain = try Self.uplink()
        #expect(!renderStatus(plain.snapshot).contains("Metered:"))
        #expect(plain.snapshot.json.serialized().contains("\"expensiveReason\":\"\""))
        #expect(state.snapshot.interfaces.first { $0.name == "eth0" }?.expensiveReason == .hotspot, "per interface too")
        let snapshot = ReachabilitySnapshot(generation: 1, host: state.host, interfaces: state.snapshot.interfaces)
        #expect(HostCondition.unmetered.failure(in: snapshot) == "the host's path via eth0 (wired) is metered (iPhone hotspot address layout)")
    }
}

/// The reason through reachd on the kernel: the `ExpensiveReason` property as busctl reads it,
/// `reachctl status` and its JSON, in-process the same.
@Suite(rootOnly)
struct ExpensiveReasonDaemonTests {
    @Test func theHotspotLayoutAndConfigurationThroughReachd() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "hs0", "172.20.10.5/28", gateway: "172.20.10.1", metric: 100)
        let harness = try DaemonHarness(ns, config: "[Interface]\nName=hs0\nKind=wifi\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let busctl = try DaemonHarness.execute("/usr/bin/busctl", [
            "--address=\(harness.address)", "get-property", ReachdContract.busName, ReachdContract.objectPath,
            ReachdContract.interface, "ExpensiveReason",
        ])
        #expect(busctl.stdout == "s \"hotspot\"\n", "\(busctl)")
        for source in [["--daemon", "--bus-address", harness.address], ["--netns", ns.name, "--config-dir", harness.configDirectory]] {
            let text = try reachctl(["status"] + source)
            #expect(text.stdout.contains("\nMetered: yes (iPhone hotspot address layout)\n"), "\(source): \(text.stdout)")
            #expect(try reachctl(["status", "--json"] + source).json()["expensiveReason"] as? String == "hotspot")
            let interfaces = try #require(try reachctl(["interfaces", "--json"] + source).json()["interfaces"] as? [[String: Any]])
            let reasons = Dictionary(uniqueKeysWithValues: interfaces.map { ($0["name"] as? String ?? "", $0["expensiveReason"] as? String) })
            #expect(reasons == ["lo": "", "hs0": "hotspot", "hs0p": ""], "\(source): per interface too")
            let unmetered = try reachctl(["is", "unmetered"] + source)
            #expect(unmetered.status == 1)
            #expect(unmetered.stderr.contains("is metered (iPhone hotspot address layout)"), "\(unmetered.stderr)")
        }

        // Metered=no on a reload silences the guess, and the property follows without a restart.
        try harness.writeConfig("[Interface]\nName=hs0\nKind=wifi\nMetered=no\n")
        harness.daemon?.signal(SIGHUP)
        try await eventually("ExpensiveReason empty after the reload", every: .milliseconds(20)) {
            try reachctl(["status", "--json", "--daemon", "--bus-address", harness.address]).json()["expensiveReason"] as? String == ""
        }
        #expect(try reachctl(["is", "unmetered", "--daemon", "--bus-address", harness.address]).status == 0)
    }

    /// A lease as systemd-networkd writes it, its option 43 holding `payload` (hex, uppercase as
    /// networkd's hexmem writes it).
    static func lease(vendorSpecific payload: String?) -> String {
        var lines = ["# This is private data. Do not parse.", "ADDRESS=192.0.2.10", "NETMASK=255.255.255.0", "ROUTER=192.0.2.1"]
        if let payload { lines.append("VENDOR_SPECIFIC=" + payload.utf8.map { String(format: "%02X", $0) }.joined()) }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func aLeaseSaysMeteredOnlyWithTheHintInItsVendorOption() {
        #expect(DHCPLeases.saysMetered(Array(Self.lease(vendorSpecific: "ANDROID_METERED").utf8)))
        // Inside other vendor data (Android sends it alone; others may wrap it).
        #expect(DHCPLeases.saysMetered(Array(Self.lease(vendorSpecific: "\u{2B}\u{0F}ANDROID_METERED").utf8)))
        #expect(!DHCPLeases.saysMetered(Array(Self.lease(vendorSpecific: nil).utf8)))
        #expect(!DHCPLeases.saysMetered(Array(Self.lease(vendorSpecific: "MSFT 5.0").utf8)))
        #expect(!DHCPLeases.saysMetered(Array("VENDOR_SPECIFIC=414E44524F49445F4D455445524544Z\n".utf8)), "not hexadecimal")
        #expect(!DHCPLeases.saysMetered(Array("VENDOR_SPECIFIC=414\n".utf8)), "odd length")
        #expect(!DHCPLeases.saysMetered(Array("ANDROID_METERED=1\nHOSTNAME=ANDROID_METERED\n".utf8)), "elsewhere in the lease")
    }

    @Test func theDHCPServersHintIsAReasonOfItsOwn_andMeteredNoSilencesIt() throws {
        var state = try ExpensiveReasonTests.uplink()
        let change = state.apply([.dhcpMetered(index: 2, true)])
        #expect(change?.host.expensiveReason == .dhcp && change?.host.flags.contains(.isExpensive) == true)
        #expect(NetworkManagerValues.metered(state.host.flags, kind: .wired, reason: .dhcp) == NetworkManagerValues.meteredGuessYes)
        #expect(state.apply([.dhcpMetered(index: 2, false)])?.host.expensiveReason == nil)
        var silenced = try ExpensiveReasonTests.uplink(Classifier(rules: [InterfaceRule(pattern: "eth0", metered: false)]))
        _ = silenced.apply([.dhcpMetered(index: 2, true)])
        #expect(!silenced.host.flags.contains(.isExpensive))
    }

    /// networkd's lease directory against reachd: a lease written for the uplink's index with the
    /// hint makes the host metered for the reason `dhcp`, a renewal without it clears it, and a
    /// lease removed (the link let go of it) clears it too; each within a second, no restart.
    @Test func aNetworkdLeaseWithTheHintThroughReachd() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "dh0", "192.0.2.10/24", gateway: "192.0.2.1", metric: 100)
        let leases = FileManager.default.temporaryDirectory.appendingPathComponent("leases-\(ns.name)").path
        try FileManager.default.createDirectory(atPath: leases, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: leases) }
        let harness = try DaemonHarness(ns, arguments: ["--dhcp-leases", leases])
        defer { harness.shutdown() }
        try await harness.ready()
        let index = try #require(Int32(try ns.exec("/bin/cat", ["/sys/class/net/dh0/ifindex"]).trimmingCharacters(in: .whitespacesAndNewlines)))
        func reason() throws -> String? {
            try reachctl(["status", "--json", "--daemon", "--bus-address", harness.address]).json()["expensiveReason"] as? String
        }
        #expect(try reason() == "")
        // networkd writes the lease aside and renames it over, as on every renewal.
        func write(_ text: String) throws {
            try text.write(toFile: leases + "/.tmp", atomically: false, encoding: .utf8)
            #expect(rename(leases + "/.tmp", leases + "/\(index)") == 0)
        }
        try write(Self.lease(vendorSpecific: "ANDROID_METERED"))
        try await eventually("metered by the lease", timeout: .seconds(1), every: .milliseconds(20)) { try reason() == "dhcp" }
        let unmetered = try reachctl(["is", "unmetered", "--daemon", "--bus-address", harness.address])
        #expect(unmetered.status == 1 && unmetered.stderr.contains("the DHCP server says metered"), "\(unmetered)")
        try write(Self.lease(vendorSpecific: nil))
        try await eventually("cleared by a renewal without it", timeout: .seconds(1), every: .milliseconds(20)) { try reason() == "" }
        try write(Self.lease(vendorSpecific: "ANDROID_METERED"))
        try await eventually("metered again", timeout: .seconds(1), every: .milliseconds(20)) { try reason() == "dhcp" }
        #expect(unlink(leases + "/\(index)") == 0)
        try await eventually("cleared when the lease is gone", timeout: .seconds(1), every: .milliseconds(20)) { try reason() == "" }
    }

    /// The lease directory read without trust: a FIFO nobody writes to, /dev/zero, a lease of
    /// 1 MiB whose hint lies past the cap, a directory and a name that is no index sit beside
    /// the uplink's real lease. reachd neither hangs nor spins on them (it keeps answering, and
    /// at once), takes none of them for a hint, and still follows the real lease.
    @Test func hostileFilesInTheLeaseDirectoryAreSkipped() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "dh1", "192.0.2.10/24", gateway: "192.0.2.1", metric: 100)
        let leases = FileManager.default.temporaryDirectory.appendingPathComponent("leases-hostile-\(ns.name)").path
        try FileManager.default.createDirectory(atPath: leases, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: leases) }
        let index = try #require(Int32(try ns.exec("/bin/cat", ["/sys/class/net/dh1/ifindex"]).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(mkfifo(leases + "/\(index + 1)", 0o644) == 0)
        #expect(symlink("/dev/zero", leases + "/\(index + 2)") == 0)
        let padding = String(repeating: "X", count: 1 << 20)
        try ("HOSTNAME=" + padding + "\n" + Self.lease(vendorSpecific: "ANDROID_METERED")).write(
            toFile: leases + "/\(index + 3)", atomically: false, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: leases + "/\(index + 4)", withIntermediateDirectories: true)
        try Self.lease(vendorSpecific: "ANDROID_METERED").write(toFile: leases + "/lease-\(index)", atomically: false, encoding: .utf8)
        let harness = try DaemonHarness(ns, arguments: ["--dhcp-leases", leases])
        defer { harness.shutdown() }
        try await harness.ready()
        func status() throws -> (reason: String?, elapsed: Duration) {
            let start = ContinuousClock.now
            let json = try reachctl(["status", "--json", "--daemon", "--bus-address", harness.address]).json()
            return (json["expensiveReason"] as? String, ContinuousClock.now - start)
        }
        let before = try status()
        #expect(before.reason == "", "no hint taken from the hostile files: \(before)")
        try Self.lease(vendorSpecific: "ANDROID_METERED").write(toFile: leases + "/.tmp", atomically: false, encoding: .utf8)
        #expect(rename(leases + "/.tmp", leases + "/\(index)") == 0)
        try await eventually("metered by the real lease", timeout: .seconds(1), every: .milliseconds(20)) { try status().reason == "dhcp" }
        // Every event in the directory reads it all again, the hostile files too.
        for round in 0..<20 {
            try "".write(toFile: leases + "/.t\(round)", atomically: false, encoding: .utf8)
            #expect(unlink(leases + "/.t\(round)") == 0)
        }
        let after = try status()
        #expect(after.reason == "dhcp" && after.elapsed < .seconds(2), "still answering: \(after)")
    }
}
