import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Synchronization
import Testing
@testable import Reachability

/// The D-Bus and sd-notify contract of reachd (packaging/org.reachd.Reachability1.xml; reachd(8),
/// "D-BUS INTERFACE" and "ENVIRONMENT"; docs/dbus.md), proven with
/// clients that are not ours (busctl, dbus-send) against the real daemon on a private bus, each
/// test with its own namespace, bus and daemon.
@Suite(rootOnly)
struct DaemonBusTests {
    static let reachable: UInt32 = 1 << 1
    static let connectionRequired: UInt32 = 1 << 2
    static let isLocalAddress: UInt32 = 1 << 16
    static let isDirect: UInt32 = 1 << 17

    /// The namespace reachd watches: one uplink `up0` (192.0.2.2/24, default via 192.0.2.1) whose
    /// veth peer `up0p` lives in a second namespace, `far`, so that `ip -n far link set up0p
    /// down/up` is a carrier flap that changes exactly one link here. IPv6 autoconfiguration is
    /// off on up0, so no link-local address arrives late and nothing changes unless a test says so.
    struct Scenario {
        let ns: TestNamespace
        let far: TestNamespace
        /// The first uplink's name (`up0` unless told): 192.0.2.2/24, gateway 192.0.2.1.
        let uplink: String

        init(_ tag: String = #function, uplink: String = "up0") throws {
            ns = try TestNamespace(tag)
            far = try TestNamespace("far")
            self.uplink = uplink
            try addUplink(uplink, "192.0.2", metric: 100)
        }

        /// A veth `name` to `far` (its peer `nameP` there): NET.2/24 here, NET.1/24 there, and a
        /// default route through NET.1 with `metric`.
        func addUplink(_ name: String, _ net: String, metric: Int) throws {
            try ns.ip("link add \(name) type veth peer name \(name)p")
            try ns.ip("link set \(name)p netns \(far.name)")
            try ns.ip("link set \(name) addrgenmode none")
            try ns.ip("addr add \(net).2/24 dev \(name)")
            try far.ip("addr add \(net).1/24 dev \(name)p")
            try far.ip("link set \(name)p up")
            try ns.ip("link set \(name) up")
            try ns.ip("route add default via \(net).1 dev \(name) metric \(metric)")
        }

        /// The first uplink's carrier, flapped at its far end.
        func carrier(_ on: Bool) throws { try far.ip("link set \(uplink)p \(on ? "up" : "down")") }

        /// up0's ifindex (ip may also print complaints about other namespaces: skip those lines).
        var up0Index: UInt64? {
            let output = (try? ns.ip("-o link show up0")) ?? ""
            let line = output.split(separator: "\n").first { $0.contains(": up0@") }
            return line.flatMap { UInt64($0.prefix { $0 != ":" }) }
        }
    }

    static let online = DaemonHarness.Status(
        flags: reachable, state: "online", primaryInterface: "up0", availableInterfaces: ["up0"], generation: 0)

    /// GetStatus without the generation (which only has to grow).
    static func status(_ client: BusConnection) throws -> DaemonHarness.Status {
        var status = try DaemonHarness.status(client)
        status.generation = 0
        return status
    }

    // MARK: independent clients

    @Test func busctlAndDbusSendQueryTheService() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()

        // busctl introspect: every member with its signature, and the properties' live values.
        let table = try harness.busctl(["introspect", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface])
        #expect(table.status == 0, "\(table.stderr)")
        let rows = table.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        for expected in [
            ".CheckAddress method s ussa{sv} -", ".CheckHost method su usassa{sv} -", ".GetStatus method - a{sv} -",
            ".ListInterfaces method - a(issuas) -", ".Unwatch method o - -", ".Watch method s o -",
            ".AvailableInterfaces property as 1 \"up0\" emits-change", ".Flags property u 2 emits-change",
            ".PrimaryInterface property s \"up0\" emits-change", ".State property s \"online\" emits-change",
            ".Changed signal ust - -",
        ] {
            #expect(rows.contains(expected), "busctl introspect lacks '\(expected)': \(rows)")
        }
        #expect(rows.contains { $0.hasPrefix(".Generation property t ") && $0.hasSuffix(" emits-change") })

        // busctl get-property, several at once.
        let properties = try harness.busctl([
            "get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface,
            "Flags", "State", "PrimaryInterface", "AvailableInterfaces",
        ])
        #expect(properties.stdout.split(separator: "\n") == ["u 2", "s \"online\"", "s \"up0\"", "as 1 \"up0\""], "\(properties)")
        let generationText = try harness.busctl([
            "get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "Generation",
        ]).stdout
        let generation = UInt64(generationText.dropFirst(2).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(generationText.hasPrefix("t ") && generation >= 1, "\(generationText)")

        // busctl call GetStatus: a{sv} with every property, the same values.
        let status = try DaemonHarness.jsonData(try harness.busctlCall("GetStatus"))
        let dictionary = try #require(status.first as? [String: Any], "\(status)")
        func value(_ key: String) -> Any? { (dictionary[key] as? [String: Any])?["data"] }
        #expect(DaemonHarness.jsonNumber(value("Flags")) == 2)
        #expect(value("State") as? String == "online")
        #expect(value("PrimaryInterface") as? String == "up0")
        #expect(value("AvailableInterfaces") as? [String] == ["up0"])
        #expect(DaemonHarness.jsonNumber(value("Generation")) == generation)
        #expect((dictionary["Flags"] as? [String: Any])?["type"] as? String == "u")
        #expect((dictionary["Generation"] as? [String: Any])?["type"] as? String == "t")

        // ListInterfaces: a(issuas), lo and up0 only (up0p lives in the other namespace).
        let interfaces = try #require(try DaemonHarness.jsonData(try harness.busctlCall("ListInterfaces")).first as? [[Any]])
        #expect(interfaces.count == 2, "\(interfaces)")
        if interfaces.count == 2 {
            #expect(DaemonHarness.jsonNumber(interfaces[0][0]) == 1)
            #expect(interfaces[0][1] as? String == "lo")
            #expect(interfaces[0][2] as? String == "loopback")
            #expect(interfaces[0][4] as? [String] == ["127.0.0.1/8", "::1/128"])
            #expect(DaemonHarness.jsonNumber(interfaces[1][0]) == scenario.up0Index)
            #expect(interfaces[1][1] as? String == "up0")
            #expect(interfaces[1][2] as? String == "virtual")
            #expect(DaemonHarness.jsonNumber(interfaces[1][3]) == UInt64(Self.reachable))
            #expect(interfaces[1][4] as? [String] == ["192.0.2.2/24"])
        }
        // GetStatus carries the same list, so that one call reads a generation's whole picture.
        #expect((dictionary["Interfaces"] as? [String: Any])?["type"] as? String == "a(issuas)", "\(dictionary.keys.sorted())")
        let inStatus = try JSONSerialization.data(withJSONObject: value("Interfaces") ?? [], options: .sortedKeys)
        #expect(try inStatus == JSONSerialization.data(withJSONObject: interfaces, options: .sortedKeys))

        // CheckAddress: on-link, via the gateway, the host's own address, no route.
        func checkAddress(_ address: String) throws -> [Any] { try DaemonHarness.jsonData(try harness.busctlCall("CheckAddress", "s", address)) }
        let onLink = try checkAddress("192.0.2.7")
        #expect(DaemonHarness.jsonNumber(onLink[0]) == UInt64(Self.reachable | Self.isDirect))
        #expect(onLink[1] as? String == "up0")
        #expect(onLink[2] as? String == "")
        let viaGateway = try checkAddress("203.0.113.5")
        #expect(DaemonHarness.jsonNumber(viaGateway[0]) == UInt64(Self.reachable))
        #expect(viaGateway[1] as? String == "up0")
        let general = try checkAddress("0.0.0.0")
        #expect(DaemonHarness.jsonNumber(general[0]) == UInt64(Self.reachable))
        let own = try checkAddress("192.0.2.2")
        let ownFlags = UInt32(DaemonHarness.jsonNumber(own[0]) ?? 0)
        #expect(ownFlags & (Self.reachable | Self.isLocalAddress) == Self.reachable | Self.isLocalAddress, "\(own)")
        let noRoute = try checkAddress("2001:db8::1")
        #expect(DaemonHarness.jsonNumber(noRoute[0]) == 0)
        #expect(noRoute[1] as? String == "")
        #expect(noRoute[2] as? String == "noRoute")
        // The trailing details, as busctl decodes the a{sv}: keys only when known.
        func details(_ reply: [Any]) -> [String: String]? {
            (reply.last as? [String: [String: Any]])?.compactMapValues { $0["type"] as? String == "s" ? $0["data"] as? String : nil }
        }
        #expect(onLink.count == 4 && details(onLink) == ["Source": "192.0.2.2"], "\(onLink)")
        #expect(details(viaGateway) == ["Gateway": "192.0.2.1", "Source": "192.0.2.2"], "\(viaGateway)")
        #expect(details(noRoute) == [:], "\(noRoute)")

        // CheckHost with an address literal (no DNS) and with localhost (/etc/hosts).
        let literal = try DaemonHarness.jsonData(try harness.busctlCall("CheckHost", "su", "192.0.2.7", "0"))
        #expect(DaemonHarness.jsonNumber(literal[0]) == UInt64(Self.reachable | Self.isDirect))
        #expect(literal[1] as? String == "up0")
        #expect(literal[2] as? [String] == ["192.0.2.7"])
        #expect(literal[3] as? String == "")
        #expect(literal.count == 5 && details(literal) == ["Source": "192.0.2.2"], "\(literal)")
        let localhost = try DaemonHarness.jsonData(try harness.busctlCall("CheckHost", "su", "localhost", "2000"))
        let localFlags = UInt32(DaemonHarness.jsonNumber(localhost[0]) ?? 0)
        #expect(localFlags & (Self.reachable | Self.isLocalAddress) == Self.reachable | Self.isLocalAddress, "\(localhost)")
        #expect(localhost[1] as? String == "lo")
        #expect((localhost[2] as? [String])?.contains("127.0.0.1") == true, "\(localhost)")
        #expect(localhost[3] as? String == "")

        // dbus-send, a second independent client: a reply, a property, and a documented error name.
        let sent = try DaemonHarness.execute("/usr/bin/dbus-send", [
            "--bus=\(harness.address)", "--print-reply", "--dest=\(DaemonHarness.busName)", DaemonHarness.objectPath,
            "org.reachd.Reachability1.CheckAddress", "string:192.0.2.7",
        ])
        #expect(sent.status == 0, "\(sent)")
        #expect(sent.stdout.contains("uint32 \(Self.reachable | Self.isDirect)") && sent.stdout.contains("string \"up0\""), "\(sent.stdout)")
        let state = try DaemonHarness.execute("/usr/bin/dbus-send", [
            "--bus=\(harness.address)", "--print-reply", "--dest=\(DaemonHarness.busName)", DaemonHarness.objectPath,
            "org.freedesktop.DBus.Properties.Get", "string:\(DaemonHarness.interface)", "string:State",
        ])
        #expect(state.stdout.contains("string \"online\""), "\(state)")
        let refused = try DaemonHarness.execute("/usr/bin/dbus-send", [
            "--bus=\(harness.address)", "--print-reply", "--dest=\(DaemonHarness.busName)", DaemonHarness.objectPath,
            "org.reachd.Reachability1.CheckAddress", "string:1.2.3",
        ])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("Error org.reachd.Reachability1.Error.InvalidTarget: '1.2.3' is a short, octal or single-number IPv4 form"), "\(refused)")
    }

    // MARK: introspection

    @Test func liveIntrospectionEqualsTheShippedXML() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try harness.connect()
        let watchPath = try DaemonHarness.watch(client, "192.0.2.99")
        #expect(watchPath.hasPrefix(DaemonHarness.objectPath + "/watch/"))

        let shippedURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("packaging/org.reachd.Reachability1.xml")
        let shipped = try String(contentsOf: shippedURL, encoding: .utf8)
        let shippedInterfaces = try InterfaceXML.interfaces(in: shipped)
        #expect(shippedInterfaces.keys.sorted() == [DaemonHarness.interface, ReachdContract.pathInterface, DaemonHarness.watchInterface])
        #expect(!InterfaceXML.comments(in: shipped).contains("--"), "'--' is not allowed inside an XML comment")

        let live = try InterfaceXML.interfaces(in: try harness.introspectXML())
        let liveWatch = try InterfaceXML.interfaces(in: try harness.introspectXML(watchPath))
        #expect(live.keys.sorted() == [DaemonHarness.interface])
        #expect(liveWatch.keys.sorted() == [DaemonHarness.watchInterface])
        let service = live[DaemonHarness.interface] ?? []
        let watchInterface = liveWatch[DaemonHarness.watchInterface] ?? []
        #expect(service == shippedInterfaces[DaemonHarness.interface], "live:\n\(service.joined(separator: "\n"))")
        #expect(watchInterface == shippedInterfaces[DaemonHarness.watchInterface], "live:\n\(watchInterface.joined(separator: "\n"))")
        // Whitespace-normalized text as well, attribute order included: the file is the daemon's own output.
        #expect(InterfaceXML.normalizedElement(DaemonHarness.interface, in: try harness.introspectXML())
            == InterfaceXML.normalizedElement(DaemonHarness.interface, in: shipped))
        #expect(InterfaceXML.normalizedElement(DaemonHarness.watchInterface, in: try harness.introspectXML(watchPath))
            == InterfaceXML.normalizedElement(DaemonHarness.watchInterface, in: shipped))
        // A path watch object (WatchPath) likewise.
        let pathReply = try DaemonHarness.call(client, "WatchPath") { message throws(BusError) in
            try PathProperty.appendOptions(Path.Restriction(prohibitedInterfaceTypes: [.cellular]), to: message)
        }
        let pathObject = try DaemonHarness.read(pathReply) { try $0.readObjectPath() }
        let livePath = try InterfaceXML.interfaces(in: try harness.introspectXML(pathObject))
        #expect(livePath.keys.sorted() == [ReachdContract.pathInterface])
        #expect(livePath[ReachdContract.pathInterface] == shippedInterfaces[ReachdContract.pathInterface],
                "live:\n\((livePath[ReachdContract.pathInterface] ?? []).joined(separator: "\n"))")
        #expect(InterfaceXML.normalizedElement(ReachdContract.pathInterface, in: try harness.introspectXML(pathObject))
            == InterfaceXML.normalizedElement(ReachdContract.pathInterface, in: shipped))
    }

    // MARK: Changed

    @Test func carrierFlapSendsOneChangedPerChangeAndNoiseNone() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try harness.connect()
        let start = try DaemonHarness.status(client).generation
        let monitor = try harness.monitor()

        func expectQuiet(_ count: Int, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            try await Task.sleep(for: .milliseconds(300))
            #expect(monitor.changes.count == count, "\(what): \(monitor.changes)", sourceLocation: sourceLocation)
        }
        for round in 0..<3 {
            try scenario.carrier(false)
            try await monitor.wait(for: "Changed after carrier loss \(round)") { $0.compactMap(\.changed).count >= 2 * round + 1 }
            try await expectQuiet(2 * round + 1, "one Changed for carrier loss \(round)")
            try scenario.carrier(true)
            try await monitor.wait(for: "Changed after carrier return \(round)") { $0.compactMap(\.changed).count >= 2 * round + 2 }
            try await expectQuiet(2 * round + 2, "one Changed for carrier return \(round)")
        }
        let flaps = monitor.changes
        let down = Self.connectionRequired, up = Self.reachable
        #expect(flaps.map { $0.flags } == [down, up, down, up, down, up])
        #expect(flaps.allSatisfy { $0.primaryInterface == "up0" })
        #expect(flaps.map { $0.generation } == Array((start + 1)...(start + 6)), "Generation goes up by one per Changed")
        // PropertiesChanged on the service object accompanies each, with the new values.
        let properties = monitor.signals.filter { $0.path == DaemonHarness.objectPath }.compactMap(\.propertiesChanged)
        #expect(properties.count == 6)
        #expect(properties.map { $0.values["State"] as? String } == ["offline", "online", "offline", "online", "offline", "online"])
        #expect(properties.map { DaemonHarness.jsonNumber($0.values["Generation"]) } == (start + 1...start + 6).map { Optional($0) })

        // Netlink noise that changes nothing: no signal at all. (`ip monitor` proves the kernel
        // did send a message for each.)
        let kernel = try ChildProcess("/usr/sbin/ip", ["-n", scenario.ns.name, "monitor", "link", "address", "route"])
        try await Task.sleep(for: .milliseconds(100))
        let signalsBefore = monitor.signals.count
        try scenario.ns.ip("link set up0 mtu 1400")
        try scenario.ns.ip("link set up0 alias foo")
        try scenario.ns.ip("route replace default via 192.0.2.1 dev up0 metric 100")
        try scenario.ns.ip("addr replace 192.0.2.2/24 dev up0")
        try scenario.ns.ip("link set up0 up")
        try await Task.sleep(for: .milliseconds(300))
        #expect(monitor.signals.count == signalsBefore, "noise produced \(monitor.signals.dropFirst(signalsBefore).map(\.member))")
        #expect(kernel.lines.count >= 4, "the kernel's messages for the noise: \(kernel.lines)")
        kernel.kill()
        #expect(try DaemonHarness.status(client).generation == start + 6, "noise must not publish a change either")

        // And the next real change is the very next generation.
        try scenario.carrier(false)
        try await monitor.wait(for: "Changed after the noise") { $0.compactMap(\.changed).count >= 7 }
        #expect(monitor.changes.last?.generation == start + 7)
        #expect(monitor.changes.last?.flags == Self.connectionRequired)
        monitor.stop()
    }

    // MARK: watches

    @Test func watchesOnAnAddressAndAHostFollowTheDefaultRoute() async throws {
        let dns = try DNSScenario(nameserver: DNSScenario.answering)
        let server = try DNSMasqServer(in: dns.server, address: DNSScenario.answering, records: ["far.test": ["203.0.113.10"]])
        defer { withExtendedLifetime(server) {} }
        let harness = try DaemonHarness(dns.client, resolvConf: dns.resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()
        let monitor = try harness.monitor()
        let client = try harness.connect()
        func watch(_ target: String) throws -> String {
            try DaemonHarness.watch(client, target)
        }
        func watchState(_ path: String) throws -> (flags: UInt32, interface: String, reason: String) {
            (
                try DaemonHarness.property(client, "Flags", path: path, interface: DaemonHarness.watchInterface),
                try DaemonHarness.property(client, "Interface", path: path, interface: DaemonHarness.watchInterface),
                try DaemonHarness.property(client, "Reason", path: path, interface: DaemonHarness.watchInterface)
            )
        }
        let address = try watch("203.0.113.7")
        let host = try watch("far.test")
        #expect(address != host)
        #expect(try DaemonHarness.property(client, "Target", path: host, interface: DaemonHarness.watchInterface) as String == "far.test")
        let addressState = try watchState(address)
        #expect(addressState.flags == Self.reachable && addressState.interface == "up0" && addressState.reason == "", "\(addressState)")
        // The host's first answer comes from DNS: PropertiesChanged once it is in.
        try await monitor.wait(for: "the host watch's first answer") { signals in
            signals.contains { $0.path == host && DaemonHarness.jsonNumber($0.propertiesChanged?.values["Flags"]) == UInt64(Self.reachable) }
        }
        let hostState = try watchState(host)
        #expect(hostState.flags == Self.reachable && hostState.interface == "up0" && hostState.reason == "", "\(hostState)")
        #expect(server.queries(for: "far.test") >= 1)

        func watchChanges(_ path: String, after mark: Int) -> [[String: Any]] {
            monitor.signals.dropFirst(mark).filter { $0.path == path }.compactMap { signal in
                guard let changed = signal.propertiesChanged, changed.interface == DaemonHarness.watchInterface else { return nil }
                return changed.values
            }
        }
        // Cut the default route: both watches say so, once each, with the reason.
        var mark = monitor.signals.count
        try dns.client.ip("route del default")
        try await monitor.wait(for: "both watches lose their route") { _ in
            !watchChanges(address, after: mark).isEmpty && !watchChanges(host, after: mark).isEmpty
        }
        try await Task.sleep(for: .milliseconds(300))
        for path in [address, host] {
            let changes = watchChanges(path, after: mark)
            #expect(changes.count == 1, "\(path): \(changes)")
            #expect(DaemonHarness.jsonNumber(changes.first?["Flags"]) == 0)
            #expect(changes.first?["Interface"] as? String == "")
            #expect(changes.first?["Reason"] as? String == "noRoute")
            let state = try watchState(path)
            #expect(state.flags == 0 && state.interface == "" && state.reason == "noRoute", "\(path): \(state)")
        }
        #expect(monitor.changes.contains { $0.flags == 0 && $0.primaryInterface == "" }, "Changed for the host as well")

        // The route back: reachable again, once each.
        mark = monitor.signals.count
        try dns.client.ip("route add default via 192.0.2.1")
        try await monitor.wait(for: "the address watch reachable again") { _ in !watchChanges(address, after: mark).isEmpty }
        try await Task.sleep(for: .milliseconds(300))
        func expectReachableAgain(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let changes = watchChanges(path, after: mark)
            #expect(changes.count == 1, "\(path): \(changes)", sourceLocation: sourceLocation)
            #expect(DaemonHarness.jsonNumber(changes.first?["Flags"]) == UInt64(Self.reachable), sourceLocation: sourceLocation)
            #expect(changes.first?["Interface"] as? String == "up0", sourceLocation: sourceLocation)
            #expect(changes.first?["Reason"] as? String == "", sourceLocation: sourceLocation)
            let state = try watchState(path)
            #expect(state.flags == Self.reachable && state.interface == "up0" && state.reason == "", "\(path): \(state)", sourceLocation: sourceLocation)
        }
        try expectReachableAgain(address)
        // The host watch's answer after the cut came from the cache, synchronously (before
        // checkHost returned): the watch must still be evaluated again on the next change.
        try await monitor.wait(for: "the host watch reachable again", timeout: .seconds(1)) { _ in !watchChanges(host, after: mark).isEmpty }
        try expectReachableAgain(host)
        // What CheckHost answers now is what the watch should say.
        let now = try DaemonHarness.jsonData(try harness.busctlCall("CheckHost", "su", "far.test", "0"))
        #expect(DaemonHarness.jsonNumber(now.first) == UInt64(Self.reachable), "\(now)")
        monitor.stop()
    }

    @Test func aWatchDiesWithItsClient() async throws {
        let scenario = try Scenario()
        // Host lookups go to a black hole, so a host watch is still resolving when its client leaves.
        let blackHole = try DNSBlackHole(in: scenario.far, address: "192.0.2.1")
        defer { withExtendedLifetime(blackHole) {} }
        let resolvConf = FileManager.default.temporaryDirectory.appendingPathComponent("resolv-\(scenario.ns.name).conf").path
        try "nameserver 192.0.2.1\noptions timeout:5 attempts:1\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: resolvConf) }
        let harness = try DaemonHarness(scenario.ns, resolvConf: resolvConf)
        defer { harness.shutdown() }
        try await harness.ready()

        // A check that waited for DNS says how long reachd held it: at least its deadline.
        let timedOut = try DaemonHarness.jsonData(try harness.busctlCall("CheckHost", "su", "slow.test", "300"))
        #expect(timedOut.count == 5 && timedOut[3] as? String == "dnsTimeout", "\(timedOut)")
        let elapsed = ((timedOut.last as? [String: [String: Any]])?["ElapsedUSec"]).flatMap { entry in
            entry["type"] as? String == "t" ? DaemonHarness.jsonNumber(entry["data"]) : nil
        }
        #expect(elapsed.map { $0 >= 300_000 } == true, "ElapsedUSec in \(timedOut)")

        func answers(_ path: String) throws -> Bool {
            let output = try harness.busctl(["get-property", DaemonHarness.busName, path, DaemonHarness.watchInterface, "Target"])
            if output.status == 0 { return true }
            #expect(output.stderr.contains("Unknown object"), "\(output)")
            return false
        }
        func gone(_ path: String) async throws {
            let deadline = ContinuousClock.now + .seconds(3)
            while try answers(path) {
                guard ContinuousClock.now < deadline else { throw TimedOut(what: "\(path) to disappear") }
                try await Task.sleep(for: .milliseconds(10))
            }
        }

        // Our own client holds a watch: busctl sees it; once the client's connection closes it is gone.
        var client: BusConnection? = try harness.connect()
        let held = try DaemonHarness.watch(client!, "192.0.2.98")
        let target = try harness.busctl(["get-property", DaemonHarness.busName, held, DaemonHarness.watchInterface, "Target", "Flags", "Interface"])
        #expect(target.stdout.split(separator: "\n") == ["s \"192.0.2.98\"", "u \(Self.reachable | Self.isDirect)", "s \"up0\""], "\(target)")
        client = nil
        try await gone(held)

        // busctl calls Watch and exits: its watches go with it (an address, and a host whose
        // lookup is still in flight).
        for target in ["192.0.2.97", "slow.test"] {
            let output = try harness.busctlCall("Watch", "s", target)
            let path = try #require(try DaemonHarness.jsonData(output).first as? String, "\(output)")
            #expect(path.hasPrefix(DaemonHarness.objectPath + "/watch/"))
            try await gone(path)
        }
        // The daemon lives on and still tracks new clients.
        #expect(try Self.status(try harness.connect()) == Self.online)
        let introspection = try harness.introspectXML()
        #expect(!introspection.contains("<node name=\"watch\"/>"), "no watch objects left: \(introspection)")
    }

    @Test func watchLimitsAndOwnership() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns, config: "[Limits]\nMaxWatchesPerClient=2\nMaxWatches=3\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let alice = try harness.connect("alice")
        let bob = try harness.connect("bob")
        func watch(_ client: BusConnection, _ target: String) throws -> String {
            try DaemonHarness.watch(client, target)
        }
        func watchError(_ client: BusConnection, _ target: String) -> BusError? {
            DaemonHarness.callError(client, "Watch") { message throws(BusError) in try message.append(target) }
        }
        func unwatchError(_ client: BusConnection, _ path: String) -> BusError? {
            DaemonHarness.callError(client, "Unwatch") { message throws(BusError) in try message.append(objectPath: path) }
        }
        let first = try watch(alice, "192.0.2.10")
        _ = try watch(alice, "192.0.2.11")
        let perClient = watchError(alice, "192.0.2.12")
        #expect(perClient?.name == "org.reachd.Reachability1.Error.LimitExceeded")
        #expect(perClient?.message.contains("MaxWatchesPerClient=2") == true, "\(String(describing: perClient))")

        // Someone else's watch: AccessDenied, and the watch stays.
        let denied = unwatchError(bob, first)
        #expect(denied?.name == "org.freedesktop.DBus.Error.AccessDenied")
        #expect(denied?.message.contains(first) == true, "\(String(describing: denied))")
        #expect(try DaemonHarness.property(bob, "Target", path: first, interface: DaemonHarness.watchInterface) as String == "192.0.2.10")
        let byDbusSend = try DaemonHarness.execute("/usr/bin/dbus-send", [
            "--bus=\(harness.address)", "--print-reply", "--dest=\(DaemonHarness.busName)", DaemonHarness.objectPath,
            "org.reachd.Reachability1.Unwatch", "objpath:\(first)",
        ])
        #expect(byDbusSend.status != 0)
        #expect(byDbusSend.stderr.contains("Error org.freedesktop.DBus.Error.AccessDenied"), "\(byDbusSend)")

        // The global limit: bob may hold two, but only one fits.
        _ = try watch(bob, "192.0.2.13")
        let total = watchError(bob, "192.0.2.14")
        #expect(total?.name == "org.reachd.Reachability1.Error.LimitExceeded")
        #expect(total?.message.contains("MaxWatches=3") == true, "\(String(describing: total))")
        // An invalid target is refused before any limit is counted.
        #expect(watchError(bob, "a..b")?.name == "org.reachd.Reachability1.Error.InvalidTarget")

        // The owner's Unwatch works: the object is gone, and the slot is free again.
        #expect(unwatchError(alice, first) == nil)
        let afterwards = DaemonHarness.callError(bob, "Get", path: first, interface: "org.freedesktop.DBus.Properties") { message throws(BusError) in
            try message.append(DaemonHarness.watchInterface)
            try message.append("Target")
        }
        #expect(afterwards?.name == "org.freedesktop.DBus.Error.UnknownObject", "\(String(describing: afterwards))")
        #expect(unwatchError(alice, first)?.name == "org.freedesktop.DBus.Error.UnknownObject")
        #expect(try watch(alice, "192.0.2.15").hasPrefix(DaemonHarness.objectPath + "/watch/"))
    }

    // MARK: hostile callers

    @Test func hostileCallsGetErrorsThatNameTheProblem() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try harness.connect("hostile")
        let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        let invalidTarget = "org.reachd.Reachability1.Error.InvalidTarget"

        func expectError(
            _ member: String, _ name: String, _ fragments: [String], path: String = DaemonHarness.objectPath,
            sourceLocation: SourceLocation = #_sourceLocation, _ build: (BusMessage) throws(BusError) -> Void
        ) {
            let error = DaemonHarness.callError(client, member, path: path, build)
            #expect(error?.name == name, "\(member): \(String(describing: error))", sourceLocation: sourceLocation)
            for fragment in fragments {
                #expect(error?.message.contains(fragment) == true, "\(member): '\(fragment)' not in \(String(describing: error?.message.prefix(200)))", sourceLocation: sourceLocation)
            }
            #expect((error?.message.utf8.count ?? 0) < 1024, "\(member): a message of \(error?.message.utf8.count ?? 0) bytes", sourceLocation: sourceLocation)
        }

        // Wrong signatures: sd-bus refuses them against the vtable, naming both.
        expectError("CheckAddress", invalidArgs, ["'u'", "CheckAddress", "expecting 's'"]) { message throws(BusError) in try message.append(UInt32(5)) }
        expectError("CheckHost", invalidArgs, ["'ss'", "expecting 'su'"]) { message throws(BusError) in
            try message.append("a")
            try message.append("b")
        }
        expectError("CheckHost", invalidArgs, ["'s'", "expecting 'su'"]) { message throws(BusError) in try message.append("example.test") }
        expectError("Watch", invalidArgs, ["expecting 's'"]) { _ in }
        expectError("Unwatch", invalidArgs, ["'s'", "expecting 'o'"]) { message throws(BusError) in try message.append("/org/reachd/Reachability1/watch/1") }
        expectError("GetStatus", invalidArgs, ["'s'"]) { message throws(BusError) in try message.append("extra") }
        let byBusctl = try harness.busctl(["call", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "CheckAddress", "u", "5"])
        #expect(byBusctl.status != 0 && byBusctl.stderr.contains("Invalid arguments 'u'"), "\(byBusctl)")

        // 60 KB strings (within the call's 64 KiB): refused as they are read, naming the argument
        // and its bound, quoting an excerpt (issue 35).
        let big = String(repeating: "a", count: 60_000)
        expectError("CheckAddress", invalidTarget, ["address is 60000 bytes, at most 64", "'…(60000 bytes)"]) { message throws(BusError) in try message.append(big) }
        expectError("CheckHost", invalidTarget, ["host is 60000 bytes, at most 254"]) { message throws(BusError) in
            try message.append(big)
            try message.append(UInt32(0))
        }
        expectError("Watch", invalidTarget, ["target is 60000 bytes, at most 254"]) { message throws(BusError) in try message.append(big) }
        let bigDots = String(repeating: "1.", count: 30_000)
        expectError("CheckHost", invalidTarget, ["60000 bytes"]) { message throws(BusError) in
            try message.append(bigDots)
            try message.append(UInt32(0))
        }
        // A call past 64 KiB: refused from its size before any argument is read (issue 48).
        expectError("CheckAddress", "org.freedesktop.DBus.Error.LimitsExceeded", ["the call is 100", "bytes, at most 65536"]) { message throws(BusError) in
            try message.append(String(repeating: "a", count: 100_000))
        }
        // A 250-byte name with a bad character: the error names the character and its position...
        let bigSpace = "a b" + String(repeating: "a", count: 247)
        let spaced = DaemonHarness.callError(client, "CheckHost") { message throws(BusError) in
            try message.append(bigSpace)
            try message.append(UInt32(0))
        }
        #expect(spaced?.name == invalidTarget)
        #expect(spaced?.message.contains("invalid character ' ' at position 2") == true)
        // ...without echoing the whole name back.
        #expect((spaced?.message.utf8.count ?? 0) < 200, "a message of \(spaced?.message.utf8.count ?? 0) bytes")

        // Invalid host names, for CheckHost and Watch alike.
        let longName = String(repeating: "b", count: 300)
        let cases: [(host: String, fragments: [String])] = [
            ("a..b", ["'a..b'", "empty label"]),
            ("a b", ["invalid character ' '", "position 2"]),
            (longName, ["300 bytes", "at most 254"]),
            (String(repeating: "c", count: 64) + ".test", ["is 64 characters, at most 63"]),
            ("-a.test", ["'-a'", "begins with '-'"]),
            ("exämple.test", ["invalid character 'ä'"]),
            ("", ["empty"]),
            ("1.2.3", ["'1.2.3' is a short, octal or single-number IPv4 form", "127.0.0.1"]),
        ]
        for (host, fragments) in cases {
            expectError("CheckHost", invalidTarget, fragments) { message throws(BusError) in
                try message.append(host)
                try message.append(UInt32(0))
            }
            expectError("Watch", invalidTarget, fragments) { message throws(BusError) in try message.append(host) }
        }
        expectError("CheckAddress", invalidTarget, ["empty target"]) { message throws(BusError) in try message.append("") }
        expectError("CheckAddress", invalidTarget, ["'example.test' is not an IPv4 or IPv6 address"]) { message throws(BusError) in try message.append("example.test") }
        expectError("CheckAddress", invalidTarget, ["invalid scope"]) { message throws(BusError) in try message.append("fe80::1%") }
        expectError("CheckHost", invalidArgs, ["timeout_ms 300001", "maximum of 300000"]) { message throws(BusError) in
            try message.append("example.test")
            try message.append(UInt32(300_001))
        }
        expectError("Frobnicate", "org.freedesktop.DBus.Error.UnknownMethod", ["Frobnicate"]) { _ in }
        expectError("Unwatch", "org.freedesktop.DBus.Error.UnknownObject", ["/org/reachd/Reachability1/watch/424242"]) { message throws(BusError) in
            try message.append(objectPath: "/org/reachd/Reachability1/watch/424242")
        }
        let setProperty = DaemonHarness.callError(client, "Set", interface: "org.freedesktop.DBus.Properties") { message throws(BusError) in
            try message.append(DaemonHarness.interface)
            try message.append("State")
            try message.open("v", "s")
            try message.append("online")
            try message.close()
        }
        #expect(setProperty?.name == "org.freedesktop.DBus.Error.PropertyReadOnly", "\(String(describing: setProperty))")

        // After all that: alive and right.
        #expect(try Self.status(client) == Self.online)
        #expect(harness.daemon?.isRunning == true)
    }

    @Test func twoThousandCallsAreAllAnsweredWhileSlowLookupsPend() async throws {
        let scenario = try Scenario()
        let blackHole = try DNSBlackHole(in: scenario.far, address: "192.0.2.1")
        defer { withExtendedLifetime(blackHole) {} }
        let resolvConf = FileManager.default.temporaryDirectory.appendingPathComponent("resolv-\(scenario.ns.name).conf").path
        try "nameserver 192.0.2.1\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: resolvConf) }
        // Twenty lookups timing out in a row are stall evidence (Android's DNS rule), which would
        // rightly mark the path stalled mid-test; this test is about answers, not that verdict.
        let harness = try DaemonHarness(scenario.ns, config: "[Stall]\nDetect=no\n", resolvConf: resolvConf)
        defer { harness.shutdown() }
        try await harness.ready()
        let address = harness.address

        // Twenty host checks held by the black hole until their 1.5 s deadline...
        let slow = try (0..<20).map { index in
            try ChildProcess("/usr/bin/busctl", [
                "--address=\(address)", "--json=short", "call", DaemonHarness.busName, DaemonHarness.objectPath,
                DaemonHarness.interface, "CheckHost", "su", "slow\(index).test", "1500",
            ])
        }
        let slowStarted = ContinuousClock.now

        // ...while four clients make 500 calls each, one after another as fast as they are answered.
        final class Tally: Sendable {
            let answered = Atomic<Int>(0)
            let finished = Atomic<Int>(0)
            let failures = Mutex<[String]>([])
            let slowest = Mutex<Duration>(.zero)
        }
        let tally = Tally()
        for worker in 0..<4 {
            let thread = Thread {
                defer { tally.finished.add(1, ordering: .releasing) }
                let client: BusConnection
                do { client = try BusConnection(.address(address), description: "flood\(worker)") } catch {
                    tally.failures.withLock { $0.append("connect: \(error)") }
                    return
                }
                for call in 0..<500 {
                    let began = ContinuousClock.now
                    do {
                        switch call % 5 {
                        case 0:
                            let status = try DaemonHarness.status(client)
                            guard status.state == "online", status.primaryInterface == "up0" else { throw CommandFailed(command: "GetStatus", status: 0, output: "\(status)") }
                        case 1:
                            let reply = try DaemonHarness.call(client, "CheckAddress") { message throws(BusError) in try message.append("192.0.2.\(call % 250 + 3)") }
                            guard try DaemonHarness.read(reply, { try $0.readUInt32() }) == Self.reachable | Self.isDirect else { throw CommandFailed(command: "CheckAddress", status: 0, output: "") }
                        case 2:
                            let error = DaemonHarness.callError(client, "CheckAddress") { message throws(BusError) in try message.append("not-an-address-\(call)") }
                            guard error?.name == "org.reachd.Reachability1.Error.InvalidTarget" else { throw CommandFailed(command: "CheckAddress invalid", status: 0, output: "\(String(describing: error))") }
                        case 3:
                            let reply = try DaemonHarness.call(client, "CheckHost") { message throws(BusError) in
                                try message.append("203.0.113.\(call % 250 + 1)")
                                try message.append(UInt32(0))
                            }
                            guard try DaemonHarness.read(reply, { try $0.readUInt32() }) == Self.reachable else { throw CommandFailed(command: "CheckHost literal", status: 0, output: "") }
                        default:
                            guard try DaemonHarness.property(client, "PrimaryInterface") as String == "up0" else { throw CommandFailed(command: "Get", status: 0, output: "") }
                        }
                        tally.answered.add(1, ordering: .relaxed)
                    } catch {
                        tally.failures.withLock { $0.append("worker \(worker) call \(call): \(error)") }
                    }
                    let took = ContinuousClock.now - began
                    tally.slowest.withLock { $0 = max($0, took) }
                }
            }
            thread.start()
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while tally.finished.load(ordering: .acquiring) < 4 {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "2000 calls: \(tally.answered.load(ordering: .relaxed)) answered") }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(tally.failures.withLock { $0 }.isEmpty, "\(tally.failures.withLock { $0.prefix(5) })")
        #expect(tally.answered.load(ordering: .relaxed) == 2000)
        // A call never waited for the black hole (whose checks take 1.5 s).
        #expect(tally.slowest.withLock { $0 } < .seconds(1), "slowest call: \(tally.slowest.withLock { $0 })")

        // The slow checks end at their deadline with a normal answer: dnsTimeout.
        for child in slow {
            let status = try await child.exit(timeout: .seconds(10))
            #expect(status == 0, "\(child.errorLines)")
            let data = try DaemonHarness.jsonData(DaemonHarness.Output(status: status ?? -1, stdout: child.output, stderr: child.errorOutput))
            #expect(DaemonHarness.jsonNumber(data.first) == 0 && data.count == 5 && data[3] as? String == "dnsTimeout", "\(data)")
        }
        #expect(ContinuousClock.now - slowStarted >= .milliseconds(1400))

        // Alive, right, and still publishing changes.
        let client = try harness.connect()
        let status = try DaemonHarness.status(client)
        #expect(Self.status(of: status) == Self.online)
        let monitor = try harness.monitor()
        try scenario.carrier(false)
        try await monitor.wait(for: "Changed after the flood") { !$0.compactMap(\.changed).isEmpty }
        #expect(monitor.changes.first?.generation == status.generation + 1)
        #expect(monitor.changes.first?.flags == Self.connectionRequired)
        monitor.stop()
    }

    static func status(of status: DaemonHarness.Status) -> DaemonHarness.Status {
        var status = status
        status.generation = 0
        return status
    }

    // MARK: sd-notify

    @Test func notifyReadyAfterSyncThenStatusAndWatchdog() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns, environment: ["WATCHDOG_USEC": "200000"])
        defer { harness.shutdown() }
        let (readyIndex, ready) = try await harness.notify.wait(for: "READY=1", timeout: .seconds(10)) { $0.fields["READY"] == "1" }
        // The name is owned by the time READY arrives, and READY carries the synced state.
        let owner = try harness.busctl(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", "s", DaemonHarness.busName])
        #expect(owner.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "b true", "\(owner)")
        let status = try #require(ready.fields["STATUS"], "READY without STATUS: \(ready.text)")
        #expect(status.contains("up0"), "READY before the netlink sync? STATUS=\(status)")
        let before = harness.notify.datagrams.prefix(readyIndex).map(\.text)
        #expect(before.allSatisfy { $0 == "WATCHDOG=1" }, "before READY: \(before)")
        try await harness.ready()

        // STATUS= on a change, and back.
        var mark = harness.notify.datagrams.count
        try scenario.carrier(false)
        let lost = try await harness.notify.wait(for: "STATUS after carrier loss", from: mark) { $0.fields["STATUS"] != nil }
        #expect(lost.datagram.fields["STATUS"]?.hasPrefix("offline") == true, "\(lost.datagram.text)")
        #expect(lost.datagram.fields["STATUS"]?.contains("up0") == true, "\(lost.datagram.text)")
        mark = lost.index + 1
        try scenario.carrier(true)
        let back = try await harness.notify.wait(for: "STATUS after carrier return", from: mark) { $0.fields["STATUS"] != nil }
        #expect(back.datagram.fields["STATUS"] == "online via up0 (virtual)", "\(back.datagram.text)")

        // WATCHDOG=1 from the loop, well inside WATCHDOG_USEC=200000 (sd-event pings at 1/2 to 3/4 of it).
        let window = ContinuousClock.now
        try await Task.sleep(for: .seconds(1))
        let pings = harness.notify.datagrams.filter { $0.text == "WATCHDOG=1" && $0.time >= window }.map(\.time)
        #expect(pings.count >= 5, "\(pings.count) WATCHDOG=1 in one second")
        let gaps = zip(pings.dropFirst(), pings).map { $0 - $1 }.sorted()
        if !gaps.isEmpty {
            #expect(gaps[gaps.count / 2] < .milliseconds(200), "median gap \(gaps[gaps.count / 2])")
            #expect(gaps.last! < .milliseconds(400), "longest gap \(gaps.last!)")
        }
        #expect(harness.notify.datagrams.allSatisfy { !$0.text.contains("STOPPING") && !$0.text.contains("ERRNO") })
    }

    @Test func notifyReloadOnSIGHUPKeepsTheOldConfigurationWhenTheNewOneIsBad() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns, config: "[Limits]\nMaxWatchesPerClient=1\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = try #require(harness.daemon)
        func watches(allowed expected: Int) throws {
            let client = try harness.connect()
            for index in 0..<expected {
                _ = try DaemonHarness.call(client, "Watch") { message throws(BusError) in try message.append("192.0.2.\(20 + index)") }
            }
            let refused = DaemonHarness.callError(client, "Watch") { message throws(BusError) in try message.append("192.0.2.99") }
            #expect(refused?.message.contains("MaxWatchesPerClient=\(expected)") == true, "\(String(describing: refused))")
        }
        try watches(allowed: 1)

        func monotonicMicroseconds() -> UInt64 {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        }
        func reload() async throws -> (reloading: DaemonHarness.NotifySocket.Datagram, ready: DaemonHarness.NotifySocket.Datagram) {
            let mark = harness.notify.datagrams.count
            let sent = monotonicMicroseconds()
            daemon.signal(SIGHUP)
            let reloading = try await harness.notify.wait(for: "RELOADING=1", from: mark) { $0.fields["RELOADING"] == "1" }
            let usec = UInt64(reloading.datagram.fields["MONOTONIC_USEC"] ?? "") ?? 0
            #expect(usec >= sent && usec <= monotonicMicroseconds(), "MONOTONIC_USEC=\(usec), signal at \(sent)")
            let ready = try await harness.notify.wait(for: "READY=1 after RELOADING=1", from: reloading.index + 1) { $0.fields["READY"] == "1" }
            return (reloading.datagram, ready.datagram)
        }

        // A good new configuration: RELOADING=1, READY=1, and it takes effect.
        try harness.writeConfig("[Limits]\nMaxWatchesPerClient=2\n")
        let good = try await reload()
        #expect(good.ready.fields["STATUS"] == "online via up0 (virtual)", "\(good.ready.text)")
        try watches(allowed: 2)

        // A bad one: READY=1 again, STATUS says it was refused and where, and the old one stays.
        try harness.writeConfig("[Limits]\nMaxWatchesPerClient=2\nthis is not a setting\n")
        let bad = try await reload()
        let status = bad.ready.fields["STATUS"] ?? ""
        #expect(status.hasPrefix("online via up0 (virtual)"), "\(status)")
        #expect(status.contains("refused") && status.contains("reachd.conf:3"), "\(status)")
        // reachd logs before it notifies, but our reader of its stderr may lag a little.
        #expect(throws: Never.self) { try daemon.waitForErrorLine(containing: "reachd.conf:3", timeout: .seconds(2)) }
        #expect(daemon.isRunning)
        #expect(try Self.status(try harness.connect()) == Self.online)
        try watches(allowed: 2)
    }

    @Test func sigtermSendsStoppingAndExitsZero() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = try #require(harness.daemon)
        let mark = harness.notify.datagrams.count
        daemon.signal(SIGTERM)
        try await harness.notify.wait(for: "STOPPING=1", from: mark) { $0.fields["STOPPING"] == "1" }
        let status = try await daemon.exit(timeout: .seconds(5))
        #expect(status == 0, "exit \(String(describing: status)); \(daemon.errorLines)")
        #expect(!daemon.terminatedBySignal)
        let owner = try harness.busctl(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", "s", DaemonHarness.busName])
        #expect(owner.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "b false", "\(owner)")
    }

    /// Watches whose client is still connected at SIGTERM are freed all the same: neither their
    /// bus registration nor their shared target keeps them alive past the daemon.
    @Test func watchesStillServedAtStopAreFreed() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns, verbose: true)
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try harness.connect()
        // Two on one target (one shared answer), one on another.
        for target in ["192.0.2.10", "192.0.2.10", "192.0.2.11"] { _ = try DaemonHarness.watch(client, target) }
        let daemon = try #require(harness.daemon)
        try daemon.waitForErrorLine(containing: "watch \(DaemonHarness.objectPath)/watch/3 on", timeout: .seconds(5))
        daemon.signal(SIGTERM)
        let status = try await daemon.exit(timeout: .seconds(5))
        #expect(status == 0, "exit \(String(describing: status)); \(daemon.errorLines)")
        let counts = daemon.errorLines.filter { $0.contains("watch objects alive at exit:") }
        #expect(counts.count == 1 && counts[0].hasSuffix("alive at exit: 0"), "\(daemon.errorLines)")
    }

    @Test func losingTheBusExitsNonZero() async throws {
        let scenario = try Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = try #require(harness.daemon)
        harness.bus.kill()
        let status = try await daemon.exit(timeout: .seconds(5))
        #expect(status != nil && status != 0, "exit \(String(describing: status)); \(daemon.errorLines)")
        #expect(!daemon.terminatedBySignal, "reachd must exit by itself, not crash")
        #expect(daemon.errorLines.contains { $0.contains("lost the bus: the connection was closed by the other end") }, "\(daemon.errorLines)")
    }
}

extension DaemonBusTests {
    /// The `<interface>` elements of introspection XML, canonicalized: one line per element start
    /// (attributes sorted) and end, so whitespace and attribute order do not matter.
    enum InterfaceXML {
        final class Collector: NSObject, XMLParserDelegate {
            var interfaces: [String: [String]] = [:]
            var comments: [String] = []
            private var current: String?

            func parser(
                _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String]
            ) {
                if elementName == "interface", let name = attributes["name"], name.hasPrefix("org.reachd.") {
                    current = name
                    interfaces[name] = []
                }
                guard let current else { return }
                let text = attributes.sorted { $0.key < $1.key }.map { " \($0.key)=\"\($0.value)\"" }.joined()
                interfaces[current, default: []].append("<\(elementName)\(text)>")
            }

            func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
                guard let name = current else { return }
                interfaces[name, default: []].append("</\(elementName)>")
                if elementName == "interface" { current = nil }
            }

            func parser(_ parser: XMLParser, foundComment comment: String) { comments.append(comment) }
        }

        struct Invalid: Error, CustomStringConvertible {
            var description: String
        }

        static func parse(_ xml: String) throws -> Collector {
            let parser = XMLParser(data: Data(xml.utf8))
            parser.shouldResolveExternalEntities = false
            let collector = Collector()
            parser.delegate = collector
            guard parser.parse() else {
                throw Invalid(description: "not well-formed XML: \(String(describing: parser.parserError)) at line \(parser.lineNumber)")
            }
            return collector
        }

        static func interfaces(in xml: String) throws -> [String: [String]] { try parse(xml).interfaces }

        static func comments(in xml: String) -> String { ((try? parse(xml))?.comments ?? []).joined(separator: "\n") }

        /// The text of `<interface name="NAME">...</interface>` with comments removed and all
        /// whitespace between tags dropped (and runs of it inside tags made one space).
        static func normalizedElement(_ name: String, in xml: String) -> String? {
            var text = xml
            while let open = text.range(of: "<!--"), let close = text.range(of: "-->", range: open.upperBound..<text.endIndex) {
                text.removeSubrange(open.lowerBound..<close.upperBound)
            }
            guard let start = text.range(of: "<interface name=\"\(name)\">"),
                let end = text.range(of: "</interface>", range: start.upperBound..<text.endIndex)
            else { return nil }
            let element = text[start.lowerBound..<end.upperBound]
            var result = ""
            var pendingSpace = false
            for character in element {
                if character.isWhitespace {
                    pendingSpace = true
                    continue
                }
                if pendingSpace, let last = result.last, last != ">", character != "<", character != ">", character != "/" {
                    result.append(" ")
                }
                pendingSpace = false
                result.append(character)
            }
            return result
        }
    }
}
