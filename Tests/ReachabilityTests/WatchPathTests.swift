import Foundation
import Synchronization
import Testing
@testable import Reachability

/// issue 25: subscribers choose kinds. reachd's `WatchPath` objects, `reachctl status/monitor
/// --kind/--not-kind`, and `PathMonitor` through reachd, against the real kernel: veths are
/// classified by rule (`pm?` wired, `pw?` Wi-Fi; their peers stay virtual).
@Suite(rootOnly)
struct WatchPathTests {
    static let config = "[Interface]\nName=pm?\nKind=wired\n[Interface]\nName=pw?\nKind=wifi\n"
    static let rules = [InterfaceRule(pattern: "pm?", kind: .wired), InterfaceRule(pattern: "pw?", kind: .wifi)]

    /// A namespace online through the wired `pm0`, its peer `pm0p` in a namespace of its own (so
    /// flapping it changes nothing but pm0's carrier), and reachd on a private bus.
    static func scenario(_ tag: String = #function, config extra: String = "") throws -> (TestNamespace, far: TestNamespace, DaemonHarness) {
        let ns = try TestNamespace(tag)
        try KernelMonitorTests.uplink(ns, "pm0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let far = try TestNamespace("far" + tag)
        try ns.ip("link set pm0p netns \(far.name)")
        try far.ip("link set pm0p up")
        let harness = try DaemonHarness(ns, config: config + extra)
        try harness.waitUntilServing()
        return (ns, far, harness)
    }

    /// The path `restriction` sees in `ns`, derived in-process by the library.
    static func inProcess(_ ns: TestNamespace, _ restriction: Path.Restriction) throws -> Path {
        // The nameservers reachd reads (this machine's), so that supportsDNS agrees too.
        let monitor = try ns.monitor(rules: rules, resolvConf: "/etc/resolv.conf")
        defer { monitor.stop() }
        return Path(snapshot: monitor.snapshot, restriction: restriction)
    }

    static func client(_ harness: DaemonHarness) throws -> ReachabilityClient {
        try ReachabilityClient(bus: .address(harness.address), timeout: .seconds(5))
    }

    /// Dispatches `client`'s events until `condition` holds for the answer of `object`.
    static func wait(_ client: ReachabilityClient, _ object: String, _ what: String, _ condition: (Path) -> Bool) throws -> [Path] {
        var seen: [Path] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while !(client.answer(ofPath: object).map(condition) ?? false) {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "\(what): \(seen)") }
            for case let .path(path, value) in try client.nextEvents(timeout: .milliseconds(100)) where path == object { seen.append(value) }
        }
        return seen
    }

    @Test func watchPathAnswersTheRestrictedPathAndChangesOnlyWithIt() async throws {
        let (ns, far, harness) = try Self.scenario()
        let client = try Self.client(harness)
        let wired = Path.Restriction(requiredInterfaceType: .wired)
        let wifi = Path.Restriction(requiredInterfaceType: .wifi)
        let wiredObject = try client.watchPath(wired)
        let wifiObject = try client.watchPath(wifi)
        #expect(wiredObject.hasPrefix(ReachdContract.watchPathNamespace + "/"))

        let satisfied = try #require(client.answer(ofPath: wiredObject))
        #expect(satisfied.status == .satisfied && satisfied.primaryInterface == "pm0" && satisfied.flags.contains(.isWired), "\(satisfied)")
        #expect(satisfied.gateways == [IPAddress("192.0.2.1")!] && satisfied.supportsIPv4)
        #expect(satisfied == (try Self.inProcess(ns, wired)), "through reachd as in-process")
        let noWiFi = try #require(client.answer(ofPath: wifiObject))
        #expect(noWiFi == Path(status: .unsatisfied, state: .offline, unsatisfiedReason: .noRoute), "\(noWiFi)")

        // Independent readers (any D-Bus client) see the restriction and the values.
        let bus = try harness.connect()
        #expect(try DaemonHarness.property(bus, "RequiredKind", path: wiredObject, interface: ReachdContract.pathInterface) == "wired")
        #expect(try DaemonHarness.property(bus, "Status", path: wiredObject, interface: ReachdContract.pathInterface) == "satisfied")
        #expect(try DaemonHarness.property(bus, "Flags", path: wiredObject, interface: ReachdContract.pathInterface) == satisfied.flags.rawValue)

        // Carrier lost: the wired path changes (once), the Wi-Fi one says nothing.
        try far.ip("link set pm0p down")
        var seen = try Self.wait(client, wiredObject, "carrier lost") { $0.status == .unsatisfied }
        let lost = try #require(client.answer(ofPath: wiredObject))
        #expect(lost.unsatisfiedReason == .linkDown && lost.flags == [.connectionRequired], "\(lost)")
        #expect(lost == (try Self.inProcess(ns, wired)))
        try far.ip("link set pm0p up")
        seen += try Self.wait(client, wiredObject, "carrier back") { $0.status == .satisfied }
        #expect(client.answer(ofPath: wiredObject) == satisfied)
        for case let .path(path, value) in try client.nextEvents(timeout: .milliseconds(300)) { seen.append(value); #expect(path != wifiObject) }
        #expect(seen.map(\.status) == [.unsatisfied, .satisfied], "one change each way: \(seen)")
        #expect(client.answer(ofPath: wifiObject) == noWiFi)
    }

    @Test func badOptionsAreRefusedByName() throws {
        let (_, _, harness) = try Self.scenario()
        let bus = try harness.connect()
        func refusal(_ key: String, _ signature: String, _ value: (BusMessage) throws(BusError) -> Void) -> BusError? {
            DaemonHarness.callError(bus, "WatchPath") { message throws(BusError) in
                try message.open("a", "{sv}")
                try message.appendEntry(key, signature, value)
                try message.close()
            }
        }
        let unknownKind = refusal("RequiredKind", "s") { message throws(BusError) in try message.append("wify") }
        #expect(unknownKind?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(unknownKind?.message.contains("'wify'") == true, "\(String(describing: unknownKind))")
        let unknownProhibited = refusal("ProhibitedKinds", "as") { message throws(BusError) in try message.append(["wifi", "modem"]) }
        #expect(unknownProhibited?.message.contains("'modem'") == true, "\(String(describing: unknownProhibited))")
        let wrongType = refusal("RequiredKind", "u") { message throws(BusError) in try message.append(UInt32(1)) }
        #expect(wrongType?.message.contains("RequiredKind") == true, "\(String(describing: wrongType))")
        let unknownKey = refusal("Kind", "s") { message throws(BusError) in try message.append("wifi") }
        #expect(unknownKey?.message.contains("'Kind'") == true, "\(String(describing: unknownKey))")
        // issue 35: contradictory options are refused naming both; a kind prohibited twice is fine.
        let contradictory = DaemonHarness.callError(bus, "WatchPath") { message throws(BusError) in
            try message.open("a", "{sv}")
            try message.appendEntry("RequiredKind", "s") { entry throws(BusError) in try entry.append("wifi") }
            try message.appendEntry("ProhibitedKinds", "as") { entry throws(BusError) in try entry.append(["vpn", "wifi"]) }
            try message.close()
        }
        #expect(contradictory?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(contradictory?.message.contains("kind 'wifi' is both required (RequiredKind") == true, "\(String(describing: contradictory))")
        #expect(contradictory?.message.contains("ProhibitedKinds") == true)
        #expect(refusal("ProhibitedKinds", "as") { message throws(BusError) in try message.append(["vpn", "vpn"]) } == nil)
        let twice = DaemonHarness.callError(bus, "WatchPath") { message throws(BusError) in
            try message.open("a", "{sv}")
            for _ in 0..<2 { try message.appendEntry("RequiredKind", "s") { entry throws(BusError) in try entry.append("wifi") } }
            try message.close()
        }
        #expect(twice?.message == "option RequiredKind is given twice", "\(String(describing: twice))")
        // Bounds (ReachdContract.Bound), named with the limit; a hostile kind name is quoted as
        // a short escaped excerpt.
        let many = refusal("ProhibitedKinds", "as") { message throws(BusError) in try message.append(Array(repeating: "vpn", count: 33)) }
        #expect(many?.message == "ProhibitedKinds has more than 32 entries, the most reachd takes", "\(String(describing: many))")
        #expect(refusal("ProhibitedKinds", "as") { message throws(BusError) in try message.append(Array(repeating: "vpn", count: 32)) } == nil)
        // 60,000 bytes: within the call's 64 KiB, so the argument's own bound refuses it.
        let hostile = "\u{202E}" + String(repeating: "x", count: 60_000)
        let long = refusal("RequiredKind", "s") { message throws(BusError) in try message.append(hostile) }
        #expect(long?.message == "RequiredKind is 60003 bytes, at most 32: '\\u{202e}\(String(repeating: "x", count: 63))'…(60003 bytes)",
            "\(String(describing: long))")
        let bidi = refusal("RequiredKind", "s") { message throws(BusError) in try message.append("wi\u{202E}fi") }
        #expect(bidi?.message.contains("'wi\\u{202e}fi'") == true, "\(String(describing: bidi))")
        let longKey = refusal(String(repeating: "k", count: 65), "s") { message throws(BusError) in try message.append("wifi") }
        #expect(longKey?.message.hasPrefix("an option key is 65 bytes, at most 64") == true, "\(String(describing: longKey))")
        // An empty option set is the host's own path.
        #expect(DaemonHarness.callError(bus, "WatchPath") { message throws(BusError) in
            try message.open("a", "{sv}")
            try message.close()
        } == nil)
    }

    @Test func pathWatchesCountAsWatchesAndDieWithTheirClient() async throws {
        let (_, _, harness) = try Self.scenario(config: "[Limits]\nMaxWatchesPerClient=2\n")
        let client = try Self.client(harness)
        _ = try client.watch("192.0.2.1")
        let first = try client.watchPath(Path.Restriction(prohibitedInterfaceTypes: [.cellular]))
        #expect(throws: BusError.self) { try client.watchPath(Path.Restriction(requiredInterfaceType: .wifi)) }
        try client.unwatch(first)
        _ = try client.watchPath(Path.Restriction(requiredInterfaceType: .wifi))

        // A client that goes takes its path watches along.
        let other = try harness.connect()
        let object: String
        do {
            let bus = try harness.connect()
            let reply = try DaemonHarness.call(bus, "WatchPath") { message throws(BusError) in
                try PathProperty.appendOptions(Path.Restriction(requiredInterfaceType: .wired), to: message)
            }
            object = try DaemonHarness.read(reply) { try $0.readObjectPath() }
            #expect(try DaemonHarness.property(other, "RequiredKind", path: object, interface: ReachdContract.pathInterface) == "wired")
        }
        try await eventually("the path watch went with its client") {
            (try? DaemonHarness.property(other, "RequiredKind", path: object, interface: ReachdContract.pathInterface) as String) == nil
        }
    }
}
