import Testing
@testable import Reachability

/// Fixtures shared by the output tests: a laptop on Wi-Fi with a cellular modem and an unplugged NIC.
private enum Fixture {
    static func prefix(_ text: String, _ length: UInt8) -> IPPrefix {
        IPPrefix(IPAddress(text)!, length: length)
    }

    static let loopback = InterfaceStatus(
        index: 1, name: "lo", kind: .loopback, flags: [.reachable],
        addresses: [prefix("127.0.0.1", 8), prefix("::1", 128)])
    static let eth0 = InterfaceStatus(
        index: 2, name: "eth0", kind: .wired, flags: [.connectionRequired, .isWired], addresses: [])
    static let wlan0 = InterfaceStatus(
        index: 3, name: "wlan0", kind: .wifi, flags: [.reachable, .isWiFi],
        addresses: [prefix("192.0.2.5", 24), prefix("2001:db8::5", 64), prefix("fe80::1", 64)])
    static let wwan0 = InterfaceStatus(
        index: 12, name: "wwan0", kind: .cellular, flags: [.reachable, .isWWAN, .isExpensive],
        addresses: [prefix("198.51.100.7", 30)])

    static let host = HostStatus(
        flags: [.reachable, .isWiFi], state: .online, primaryInterface: "wlan0",
        availableInterfaces: ["wlan0", "wwan0"])

    static let snapshot = ReachabilitySnapshot(generation: 7, host: host, interfaces: [loopback, eth0, wlan0, wwan0])
}

@Suite("Snapshot and change JSON")
struct SnapshotJSONTests {
    @Test("an interface has index, name, kind, flags and addresses in that order")
    func interface() {
        let json = Fixture.wlan0.json
        #expect(json.keys == ["index", "name", "kind", "flags", "addresses", "stalled", "expensiveReason"])
        #expect(json["index"] == .int(3))
        #expect(json["name"] == "wlan0")
        #expect(json["kind"] == "wifi")
        #expect(json["flags"]?.stringArrayValue == ["reachable", "isWiFi"])
        #expect(json["addresses"]?.stringArrayValue == ["192.0.2.5/24", "2001:db8::5/64", "fe80::1/64"])
        #expect(
            Fixture.wwan0.json.serialized()
                == #"{"index":12,"name":"wwan0","kind":"cellular","flags":["reachable","isWWAN","isExpensive"],"addresses":["198.51.100.7/30"],"stalled":false,"expensiveReason":""}"#
        )
    }

    @Test("an interface without flags or addresses has empty arrays, not null")
    func emptyInterface() {
        let bare = InterfaceStatus(index: 9, name: "dummy0", kind: .other, flags: [], addresses: [])
        #expect(bare.json.serialized() == #"{"index":9,"name":"dummy0","kind":"other","flags":[],"addresses":[],"stalled":false,"expensiveReason":""}"#)
    }

    @Test("flags list names in documented order, unnamed bits as hex")
    func flagNames() {
        let flags: ReachabilityFlags = [.isWiFi, .transientConnection, .reachable, .isDirect, ReachabilityFlags(rawValue: 1 << 30)]
        #expect(flags.json.stringArrayValue == ["transientConnection", "reachable", "isDirect", "isWiFi", "0x40000000"])
    }

    @Test("a snapshot has the documented keys in the documented order")
    func snapshot() {
        let json = Fixture.snapshot.json
        #expect(json.keys == ["flags", "state", "primaryInterface", "availableInterfaces", "underlyingInterface", "connectivity", "portal", "announcedPortal", "nat64Prefix", "nat64Router", "nat64Interface", "validatedInterfaces", "stalled", "expensiveReason", "supportsIPv4", "supportsIPv6", "supportsDNS", "gateways", "reason", "generation", "interfaces"])
        #expect(json["flags"]?.stringArrayValue == ["reachable", "isWiFi"])
        #expect(json["state"] == "online")
        #expect(json["primaryInterface"] == "wlan0")
        #expect(json["availableInterfaces"]?.stringArrayValue == ["wlan0", "wwan0"])
        #expect(json["generation"] == .uint(7))
        #expect(json["interfaces"]?.arrayValue?.count == 4)
        #expect(json["interfaces"]?[0] == Fixture.loopback.json)
        #expect(json["interfaces"]?[3]?["name"] == "wwan0")
        #expect(json.serialized().hasPrefix(#"{"flags":["reachable","isWiFi"],"state":"online","primaryInterface":"wlan0","availableInterfaces":["wlan0","wwan0"],"underlyingInterface":"","connectivity":"unknown","portal":"","announcedPortal":"","nat64Prefix":"","nat64Router":"","nat64Interface":"","validatedInterfaces":[],"stalled":false,"expensiveReason":"","supportsIPv4":false,"supportsIPv6":false,"supportsDNS":false,"gateways":[],"reason":"","generation":7,"interfaces":[{"index":1,"name":"lo""#))
    }

    @Test("an offline snapshot keeps every key: empty primary, empty lists")
    func offlineSnapshot() {
        let snapshot = ReachabilitySnapshot(generation: 0, host: HostStatus(), interfaces: [])
        #expect(
            snapshot.json.serialized()
                == #"{"flags":[],"state":"offline","primaryInterface":"","availableInterfaces":[],"underlyingInterface":"","connectivity":"unknown","portal":"","announcedPortal":"","nat64Prefix":"","nat64Router":"","nat64Interface":"","validatedInterfaces":[],"stalled":false,"expensiveReason":"","supportsIPv4":false,"supportsIPv6":false,"supportsDNS":false,"gateways":[],"reason":"noRoute","generation":0,"interfaces":[]}"#
        )
    }

    @Test("a generation above Int64.max survives")
    func bigGeneration() {
        let snapshot = ReachabilitySnapshot(generation: .max, host: HostStatus(), interfaces: [])
        #expect(snapshot.json.serialized().contains(#""generation":18446744073709551615,"#))
    }

    @Test("a change has the host keys, generation, changed interfaces in full and removed ones by name")
    func change() {
        let change = ReachabilityChange(
            generation: 8,
            host: HostStatus(flags: [.reachable, .isWired], state: .online, primaryInterface: "eth0", availableInterfaces: ["eth0", "wlan0"]),
            hostChanged: true,
            changedInterfaces: [Fixture.eth0, Fixture.wlan0],
            removedInterfaces: [Fixture.wwan0])
        let json = change.json
        #expect(
            json.keys == [
                "flags", "state", "primaryInterface", "availableInterfaces", "underlyingInterface", "connectivity", "portal", "announcedPortal", "nat64Prefix", "nat64Router", "nat64Interface", "validatedInterfaces", "stalled", "expensiveReason", "supportsIPv4", "supportsIPv6", "supportsDNS", "gateways", "reason", "generation", "changedInterfaces",
                "removedInterfaces",
            ])
        #expect(json["flags"]?.stringArrayValue == ["reachable", "isWired"])
        #expect(json["state"] == "online")
        #expect(json["primaryInterface"] == "eth0")
        #expect(json["availableInterfaces"]?.stringArrayValue == ["eth0", "wlan0"])
        #expect(json["generation"] == .uint(8))
        #expect(json["changedInterfaces"] == .array([Fixture.eth0.json, Fixture.wlan0.json]))
        #expect(json["removedInterfaces"]?.stringArrayValue == ["wwan0"])
    }

    @Test("names with quotes or control characters stay valid JSON")
    func awkwardName() {
        let odd = InterfaceStatus(index: 4, name: "we\"ird\u{1}", kind: .virtual, flags: [], addresses: [])
        #expect(odd.json.serialized().contains(#""name":"we\"ird\u0001""#))
    }
}

@Suite("Status text")
struct StatusTextTests {
    @Test("status shows state with primary and kind, flags, available interfaces and generation")
    func status() {
        #expect(
            renderStatus(Fixture.snapshot) == """
                State: online via wlan0 (wifi)
                Flags: reachable|isWiFi
                Available: wlan0, wwan0
                Generation: 7
                """)
    }

    @Test("the interfaces the probe found the internet through, and a portal a router announced, get lines of their own")
    func announcedPortal() {
        var snapshot = Fixture.snapshot
        snapshot.host.announcedPortal = "https://portal.example/api"
        snapshot.host.validatedInterfaces = ["wwan0"]
        #expect(
            renderStatus(snapshot) == """
                State: online via wlan0 (wifi)
                Flags: reachable|isWiFi
                Available: wlan0, wwan0
                Internet via: wwan0
                Announced portal: https://portal.example/api
                Generation: 7
                """)
    }

    @Test("a NAT64 prefix a router announced gets a line with the router and link, and its JSON keys")
    func nat64Prefix() throws {
        var snapshot = Fixture.snapshot
        let prefix = try #require(IPAddress("64:ff9b::"))
        let router = try #require(IPAddress("fe80::1"))
        snapshot.host.nat64Prefix = Nat64Prefix(prefix: IPPrefix(prefix, length: 96), router: router, interfaceName: "wlan0")
        #expect(renderStatus(snapshot).contains("\nNAT64: 64:ff9b::/96 (announced by fe80::1 on wlan0)\n"), "\(renderStatus(snapshot))")
        #expect(snapshot.json.serialized().contains(#""nat64Prefix":"64:ff9b::/96","nat64Router":"fe80::1","nat64Interface":"wlan0""#))
        #expect(!renderStatus(Fixture.snapshot).contains("NAT64"))
    }

    @Test("offline status says none for empty flags and lists")
    func offline() {
        let snapshot = ReachabilitySnapshot(generation: 0, host: HostStatus(), interfaces: [Fixture.loopback])
        #expect(
            renderStatus(snapshot) == """
                State: offline
                Flags: none
                Available: none
                Reason: noRoute
                Generation: 0
                """)
    }

    @Test("a default route through a link that is not ready is named as such")
    func deadPrimary() {
        let host = HostStatus(flags: [.connectionRequired, .isWired], state: .local, primaryInterface: "eth0", availableInterfaces: ["wlan0"])
        let snapshot = ReachabilitySnapshot(generation: 3, host: host, interfaces: [Fixture.eth0, Fixture.wlan0])
        #expect(renderStatus(snapshot).hasPrefix("State: local, default route via eth0 (wired) not ready\nFlags: connectionRequired|isWired\nAvailable: wlan0\n"))
    }

    @Test("the primary's kind comes from host flags when the interface is not listed")
    func kindFromFlags() {
        let vpn = HostStatus(flags: [.reachable, .transientConnection, .isVPN, .isWiFi], state: .online, primaryInterface: "wg0")
        #expect(renderSummary(vpn) == "online via wg0 (vpn)")
        let unknown = HostStatus(flags: [.reachable], state: .online, primaryInterface: "x0")
        #expect(renderSummary(unknown) == "online via x0")
    }

    @Test("radios switched off are named when they are why the host is offline")
    func radiosOff() {
        let wlan0 = InterfaceStatus(index: 3, name: "wlan0", kind: .wifi, flags: [.radioOff, .isWiFi], addresses: [])
        let wwan0 = InterfaceStatus(index: 4, name: "wwan0", kind: .cellular, flags: [.radioOff, .isWWAN, .isExpensive], addresses: [])
        let off = HostStatus(state: .offline, pathFacts: PathFacts(reason: .radioOff))
        #expect(renderSummary(off, interfaces: [Fixture.eth0, wlan0, wwan0]) == "offline: wlan0 (wifi, radio off), wwan0 (cellular, radio off)")
        #expect(renderSummary(off) == "offline, radio off", "a change that lists none of them")
        var dead = HostStatus(flags: [.connectionRequired, .isWired], state: .offline, primaryInterface: "eth0")
        dead.pathFacts.reason = .radioOff
        #expect(renderSummary(dead, interfaces: [Fixture.eth0, wlan0]) == "offline, default route via eth0 (wired) not ready; wlan0 (wifi, radio off)")
        // Another reason: a radio that is off is not named (it is not why).
        #expect(renderSummary(HostStatus(state: .offline), interfaces: [wlan0]) == "offline")
    }
}

@Suite("Interface table")
struct InterfaceTableTests {
    @Test("columns are aligned on the widest cell, INDEX right-aligned, extra addresses on continuation lines")
    func table() {
        let expected = """
            INDEX  NAME   KIND      FLAGS                         ADDRESSES
                1  lo     loopback  reachable                     127.0.0.1/8
                                                                  ::1/128
                2  eth0   wired     connectionRequired|isWired    -
                3  wlan0  wifi      reachable|isWiFi              192.0.2.5/24
                                                                  2001:db8::5/64
                                                                  fe80::1/64
               12  wwan0  cellular  reachable|isWWAN|isExpensive  198.51.100.7/30
            """
        #expect(renderInterfaces(Fixture.snapshot) == expected)
    }

    @Test("every row starts its ADDRESSES column at the same offset, and no line ends in a space")
    func alignment() throws {
        let lines = renderInterfaces(Fixture.snapshot).split(separator: "\n").map(String.init)
        let header = try #require(lines.first)
        let range = try #require(header.firstRange(of: "ADDRESSES"))
        let column = header.distance(from: header.startIndex, to: range.lowerBound)
        for line in lines {
            #expect(line.last != " ", "\(line)")
            #expect(line.count > column, "\(line)")
            let before = line.prefix(column)
            #expect(before.hasSuffix("  "), "\(line)")
            #expect(line.dropFirst(column).first != " ", "\(line)")
        }
        #expect(lines.count == 8)
    }

    @Test("a long name widens its column for every row")
    func wideName() {
        let long = InterfaceStatus(index: 100, name: "enx00e04c680001", kind: .wired, flags: [], addresses: [])
        let lines = renderInterfaceTable([Fixture.eth0, long]).split(separator: "\n").map(String.init)
        #expect(lines == [
            "INDEX  NAME             KIND   FLAGS                       ADDRESSES",
            "    2  eth0             wired  connectionRequired|isWired  -",
            "  100  enx00e04c680001  wired  -                           -",
        ])
    }

    @Test("an empty list renders just the header")
    func empty() {
        #expect(renderInterfaceTable([]) == "INDEX  NAME  KIND  FLAGS  ADDRESSES")
    }
}

@Suite("Change lines")
struct ChangeTextTests {
    @Test("a change line has generation, host summary and flags, then each changed and removed interface")
    func change() {
        let change = ReachabilityChange(
            generation: 8,
            host: HostStatus(flags: [.reachable, .isWired], state: .online, primaryInterface: "eth0", availableInterfaces: ["eth0"]),
            hostChanged: true,
            changedInterfaces: [
                InterfaceStatus(index: 2, name: "eth0", kind: .wired, flags: [.reachable, .isWired], addresses: []),
                InterfaceStatus(index: 5, name: "eth1", kind: .wired, flags: [.connectionRequired, .isWired], addresses: []),
            ],
            removedInterfaces: [Fixture.wwan0])
        #expect(
            renderChange(change)
                == "gen 8: online via eth0 (wired) [reachable|isWired]; eth0: reachable|isWired; eth1: connectionRequired|isWired; wwan0: removed"
        )
    }

    @Test("a change that leaves the host offline says so with empty flags")
    func offline() {
        let change = ReachabilityChange(
            generation: 9, host: HostStatus(), hostChanged: true, changedInterfaces: [], removedInterfaces: [Fixture.wlan0])
        #expect(renderChange(change) == "gen 9: offline []; wlan0: removed")
    }

    @Test("the primary's kind is taken from host flags when the primary did not change")
    func primaryUnchanged() {
        let change = ReachabilityChange(
            generation: 10, host: Fixture.host, hostChanged: false,
            changedInterfaces: [Fixture.eth0], removedInterfaces: [])
        #expect(renderChange(change) == "gen 10: online via wlan0 (wifi) [reachable|isWiFi]; eth0: connectionRequired|isWired")
    }
}
