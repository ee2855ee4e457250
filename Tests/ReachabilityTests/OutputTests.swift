import Foundation
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
    @Test("an interface has index, name, kind, state, flags and addresses in that order")
    func interface() {
        let json = Fixture.wlan0.json
        #expect(json.keys == ["index", "name", "kind", "state", "flags", "addresses", "stalled", "expensiveReason", "networkID", "portal", "portalSource"])
        #expect(json["state"] == .string("ready"))
        #expect(json["index"] == .int(3))
        #expect(json["name"] == "wlan0")
        #expect(json["kind"] == "wifi")
        #expect(json["flags"]?.stringArrayValue == ["reachable", "isWiFi"])
        #expect(json["addresses"]?.stringArrayValue == ["192.0.2.5/24", "2001:db8::5/64", "fe80::1/64"])
        #expect(
            Fixture.wwan0.json.serialized()
                == #"{"index":12,"name":"wwan0","kind":"cellular","state":"ready","flags":["reachable","isWWAN","isExpensive"],"addresses":["198.51.100.7/30"],"stalled":false,"expensiveReason":"","networkID":"","portal":"","portalSource":""}"#
        )
    }

    @Test("an interface without flags or addresses has empty arrays, not null")
    func emptyInterface() {
        let bare = InterfaceStatus(index: 9, name: "dummy0", kind: .other, flags: [], addresses: [])
        #expect(bare.json.serialized() == #"{"index":9,"name":"dummy0","kind":"other","state":"down","flags":[],"addresses":[],"stalled":false,"expensiveReason":"","networkID":"","portal":"","portalSource":""}"#)
    }

    @Test("flags list names in documented order, unnamed bits as hex")
    func flagNames() {
        let flags: ReachabilityFlags = [.isWiFi, .transientConnection, .reachable, .isDirect, ReachabilityFlags(rawValue: 1 << 30)]
        #expect(flags.json.stringArrayValue == ["transientConnection", "reachable", "isDirect", "isWiFi", "0x40000000"])
    }

    @Test("a snapshot has the documented keys in the documented order")
    func snapshot() {
        let json = Fixture.snapshot.json
        #expect(json.keys == ["flags", "state", "primaryInterface", "availableInterfaces", "underlyingInterface", "connectivity", "portal", "announcedPortal", "portalSession", "nat64Prefix", "nat64Router", "nat64Interface", "validatedInterfaces", "stalled", "expensiveReason", "networkID", "supportsIPv4", "supportsIPv6", "supportsDNS", "nameservers", "gateways", "reason", "generation", "interfaces"])
        #expect(json["flags"]?.stringArrayValue == ["reachable", "isWiFi"])
        #expect(json["state"] == "online")
        #expect(json["primaryInterface"] == "wlan0")
        #expect(json["availableInterfaces"]?.stringArrayValue == ["wlan0", "wwan0"])
        #expect(json["generation"] == .uint(7))
        #expect(json["interfaces"]?.arrayValue?.count == 4)
        #expect(json["interfaces"]?[0] == Fixture.loopback.json)
        #expect(json["interfaces"]?[3]?["name"] == "wwan0")
        #expect(json.serialized().hasPrefix(#"{"flags":["reachable","isWiFi"],"state":"online","primaryInterface":"wlan0","availableInterfaces":["wlan0","wwan0"],"underlyingInterface":"","connectivity":"unknown","portal":"","announcedPortal":"","portalSession":{"captive":false,"loginURL":"","venueURL":"","ends":0,"bytesRemaining":-1,"canExtend":false,"ending":false},"nat64Prefix":"","nat64Router":"","nat64Interface":"","validatedInterfaces":[],"stalled":false,"expensiveReason":"","networkID":"","supportsIPv4":false,"supportsIPv6":false,"supportsDNS":false,"nameservers":[],"gateways":[],"reason":"","generation":7,"interfaces":[{"index":1,"name":"lo""#))
    }

    @Test("an offline snapshot keeps every key: empty primary, empty lists")
    func offlineSnapshot() {
        let snapshot = ReachabilitySnapshot(generation: 0, host: HostStatus(), interfaces: [])
        #expect(
            snapshot.json.serialized()
                == #"{"flags":[],"state":"offline","primaryInterface":"","availableInterfaces":[],"underlyingInterface":"","connectivity":"unknown","portal":"","announcedPortal":"","portalSession":{"captive":false,"loginURL":"","venueURL":"","ends":0,"bytesRemaining":-1,"canExtend":false,"ending":false},"nat64Prefix":"","nat64Router":"","nat64Interface":"","validatedInterfaces":[],"stalled":false,"expensiveReason":"","networkID":"","supportsIPv4":false,"supportsIPv6":false,"supportsDNS":false,"nameservers":[],"gateways":[],"reason":"noRoute","generation":0,"interfaces":[]}"#
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
                "flags", "state", "primaryInterface", "availableInterfaces", "underlyingInterface", "connectivity", "portal", "announcedPortal", "portalSession", "nat64Prefix", "nat64Router", "nat64Interface", "validatedInterfaces", "stalled", "expensiveReason", "networkID", "supportsIPv4", "supportsIPv6", "supportsDNS", "nameservers", "gateways", "reason", "generation", "changedInterfaces",
                "removedInterfaces", "changed", "rebind",
            ])
        // No description given (a change from an older source): nothing named, no rebind.
        #expect(json["changed"]?.stringArrayValue == [])
        #expect(json["rebind"] == .bool(false))
        var described = change
        described.hostChange = HostChange(changed: [.sourceAddress, .primary], rebind: true)
        #expect(described.json["changed"]?.stringArrayValue == ["primary", "sourceAddress"])
        #expect(described.json["rebind"] == .bool(true))
        #expect(renderChange(described).contains("(rebind); eth0 (wired): "), "\(renderChange(described))")
        #expect(renderChange(described, style: TextStyle(verbose: true)).contains("(rebind) {primary,sourceAddress}; "))
        #expect(!renderChange(change).contains("rebind"))
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
    @Test("status shows state with primary and kind, available interfaces and DNS in words; flags and generation only verbose")
    func status() {
        #expect(
            renderStatus(Fixture.snapshot) == """
                State: online via wlan0 (wifi)
                Available: wlan0, wwan0
                DNS: no nameserver routable
                """)
        #expect(
            renderStatus(Fixture.snapshot, style: TextStyle(verbose: true)) == """
                State: online via wlan0 (wifi)
                Flags: reachable|isWiFi
                Available: wlan0, wwan0
                DNS: no nameserver routable
                Generation: 7
                """)
    }

    @Test("DNS has a line of its own, never read as DNS through the gateway")
    func dnsApartFromThePath() throws {
        var snapshot = Fixture.snapshot
        snapshot.host.pathFacts = PathFacts(supportsIPv4: true, gateways: [try #require(IPAddress("10.61.0.1"))], supportsDNS: true)
        let text = renderStatus(snapshot)
        #expect(text.contains("\nPath: IPv4 via 10.61.0.1\nDNS: a nameserver is routable"), "\(text)")
    }

    /// issue 42: with DNS timeouts behind a stall, the State line and the DNS line tell one
    /// story: routable, but the lookups timed out; never "reachable" beside "5 DNS timeouts".
    @Test("the DNS line and the stall agree")
    func dnsAndStallAgree() throws {
        var snapshot = Fixture.snapshot
        snapshot.host.pathFacts = PathFacts(supportsIPv4: true, gateways: [try #require(IPAddress("10.61.0.1"))], supportsDNS: true)
        snapshot.host.stalled = true
        var evidence = StallEvidence()
        evidence.dnsTimeouts = 5
        snapshot.stallEvidence = evidence
        let text = renderStatus(snapshot)
        #expect(text.hasPrefix("State: online via wlan0 (wifi), but traffic is stalled: 5 DNS timeouts in a row\n"), "\(text)")
        #expect(text.contains("\nDNS: a nameserver is routable, but 5 lookups in a row timed out"), "\(text)")
        #expect(!text.contains("reachable"), "\(text)")

        // The servers named, each with what is known of it (issue 42).
        snapshot.host.pathFacts.nameservers = [try #require(IPAddress("203.0.113.53")), try #require(IPAddress("10.9.9.9"))]
        snapshot.host.pathFacts.routableNameservers = [try #require(IPAddress("203.0.113.53"))]
        evidence.nameserverSilent = true
        snapshot.stallEvidence = evidence
        let named = renderStatus(snapshot)
        #expect(
            named.hasSuffix("\nDNS: 203.0.113.53 routable; 10.9.9.9 not routable, but 5 lookups in a row timed out, and reachd's own queries went unanswered"),
            "\(named)")
        snapshot.host.pathFacts.nameservers.append(try #require(IPAddress("203.0.113.54")))
        snapshot.host.pathFacts.routableNameservers.append(try #require(IPAddress("203.0.113.54")))
        snapshot.stallEvidence = nil
        snapshot.host.stalled = false
        #expect(renderStatus(snapshot).hasSuffix("\nDNS: 203.0.113.53 and 203.0.113.54 routable; 10.9.9.9 not routable"), "\(renderStatus(snapshot))")
    }

    @Test("colour paints the state words only, green online, yellow degraded, red offline")
    func colour() {
        let colour = TextStyle(colour: true)
        #expect(renderStatus(Fixture.snapshot, style: colour).hasPrefix("State: \u{1B}[32monline\u{1B}[0m via wlan0 (wifi)\n"))
        var stalled = Fixture.snapshot
        stalled.host.stalled = true
        #expect(renderSummary(stalled.host, interfaces: [], style: colour).hasPrefix("\u{1B}[33monline\u{1B}[0m via wlan0"))
        let offline = ReachabilitySnapshot(generation: 0, host: HostStatus(), interfaces: [])
        #expect(renderStatus(offline, style: colour).hasPrefix("State: \u{1B}[31moffline\u{1B}[0m\n"))
        // Without colour, not a single escape.
        #expect(!renderStatus(Fixture.snapshot).contains("\u{1B}"))
    }

    @Test("colour follows --no-color, NO_COLOR (non-empty), TERM and the terminal")
    func colourChoice() {
        let terminal = ["TERM": "xterm-256color"]
        #expect(TextStyle.wantsColour(refused: false, environment: terminal, isTerminal: true))
        #expect(!TextStyle.wantsColour(refused: true, environment: terminal, isTerminal: true))
        #expect(!TextStyle.wantsColour(refused: false, environment: terminal, isTerminal: false))
        #expect(!TextStyle.wantsColour(refused: false, environment: terminal.merging(["NO_COLOR": "1"]) { $1 }, isTerminal: true))
        #expect(TextStyle.wantsColour(refused: false, environment: terminal.merging(["NO_COLOR": ""]) { $1 }, isTerminal: true),
                "no-color.org: an empty NO_COLOR does not count")
        #expect(!TextStyle.wantsColour(refused: false, environment: ["TERM": "dumb"], isTerminal: true))
        #expect(!TextStyle.wantsColour(refused: false, environment: [:], isTerminal: true))
    }

    @Test("the interfaces the probe found the internet through, and a portal a router announced, get lines of their own")
    func announcedPortal() {
        var snapshot = Fixture.snapshot
        snapshot.host.announcedPortal = "https://portal.example/api"
        snapshot.host.validatedInterfaces = ["wwan0"]
        #expect(
            renderStatus(snapshot) == """
                State: online via wlan0 (wifi)
                Available: wlan0, wwan0
                Internet via: wwan0
                Announced portal: https://portal.example/api
                DNS: no nameserver routable
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
            renderStatus(snapshot, style: TextStyle(verbose: true)) == """
                State: offline
                Flags: none
                Available: none
                DNS: no nameserver routable
                Reason: noRoute
                Generation: 0
                """)
    }

    @Test("a default route through a link that is not ready is named as such")
    func deadPrimary() {
        let host = HostStatus(flags: [.connectionRequired, .isWired], state: .local, primaryInterface: "eth0", availableInterfaces: ["wlan0"])
        let snapshot = ReachabilitySnapshot(generation: 3, host: host, interfaces: [Fixture.eth0, Fixture.wlan0])
        #expect(renderStatus(snapshot).hasPrefix("State: local, default route via eth0 (wired) not ready\nAvailable: wlan0\n"))
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
            INDEX  NAME   KIND      STATE           ADDRESSES
                1  lo     loopback  ready           127.0.0.1/8
                                                    ::1/128
                2  eth0   wired     not ready       -
                3  wlan0  wifi      ready           192.0.2.5/24
                                                    2001:db8::5/64
                                                    fe80::1/64
               12  wwan0  cellular  ready, metered  198.51.100.7/30
            """
        #expect(renderInterfaces(Fixture.snapshot) == expected)
    }

    @Test("--verbose adds Apple's flags and the network's name in columns of their own; --no-legend drops the header")
    func verboseAndLegend() {
        var wwan0 = Fixture.wwan0
        wwan0.networkID = "0123456789abcdef"
        let lines = renderInterfaceTable([Fixture.eth0, wwan0], style: TextStyle(verbose: true)).split(separator: "\n").map(String.init)
        #expect(lines == [
            "INDEX  NAME   KIND      STATE           FLAGS                         NETWORK           ADDRESSES",
            "    2  eth0   wired     not ready       connectionRequired|isWired    -                 -",
            "   12  wwan0  cellular  ready, metered  reachable|isWWAN|isExpensive  0123456789abcdef  198.51.100.7/30",
        ])
        let bare = renderInterfaceTable([Fixture.eth0, Fixture.wwan0], legend: false)
        #expect(bare == """
                2  eth0   wired     not ready       -
               12  wwan0  cellular  ready, metered  198.51.100.7/30
            """)
        #expect(renderInterfaceTable([], legend: false) == "")
    }

    @Test("colour never moves a column: widths are measured on the words")
    func colouredColumns() {
        let plain = renderInterfaces(Fixture.snapshot)
        let coloured = renderInterfaces(Fixture.snapshot, style: TextStyle(colour: true))
        let stripped = coloured.replacing("\u{1B}[32m", with: "").replacing("\u{1B}[33m", with: "").replacing("\u{1B}[0m", with: "")
        #expect(stripped == plain)
        #expect(coloured.contains("\u{1B}[33mnot ready\u{1B}[0m"))
    }

    @Test("the state words: ready, not ready, radio off, down, and what a person acts on")
    func stateWords() {
        #expect(renderInterfaceState([.reachable, .isWired], .plain) == "ready")
        #expect(renderInterfaceState([.connectionRequired, .isWired], .plain) == "not ready")
        #expect(renderInterfaceState([.radioOff, .isWiFi], .plain) == "radio off")
        #expect(renderInterfaceState([.isWired], .plain) == "down")
        #expect(renderInterfaceState([.reachable, .stalled, .isConstrained], .plain) == "ready, stalled, constrained")
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
            "INDEX  NAME             KIND   STATE      ADDRESSES",
            "    2  eth0             wired  not ready  -",
            "  100  enx00e04c680001  wired  down       -",
        ])
    }

    @Test("an empty list renders just the header")
    func empty() {
        #expect(renderInterfaceTable([]) == "INDEX  NAME  KIND  STATE  ADDRESSES")
    }
}

@Suite("Change lines")
struct ChangeTextTests {
    @Test("a change line has the host summary, then each changed and removed interface with its kind; verbose adds generation and flags")
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
        #expect(renderChange(change) == "online via eth0 (wired); eth0 (wired): ready; eth1 (wired): not ready; wwan0 (cellular): removed")
        #expect(
            renderChange(change, style: TextStyle(verbose: true))
                == "gen 8: online via eth0 (wired) [reachable|isWired]; eth0 (wired): ready [reachable|isWired]; "
                + "eth1 (wired): not ready [connectionRequired|isWired]; wwan0 (cellular): removed"
        )
    }

    @Test("a change that leaves the host offline says so and why, with empty flags written as status writes them")
    func offline() {
        let change = ReachabilityChange(
            generation: 9, host: HostStatus(), hostChanged: true, changedInterfaces: [], removedInterfaces: [Fixture.wlan0])
        #expect(renderChange(change) == "offline: noRoute; wlan0 (wifi): removed")
        #expect(renderChange(change, style: TextStyle(verbose: true)) == "gen 9: offline: noRoute [none]; wlan0 (wifi): removed")
    }

    @Test("the primary's kind is taken from host flags when the primary did not change")
    func primaryUnchanged() {
        let change = ReachabilityChange(
            generation: 10, host: Fixture.host, hostChanged: false,
            changedInterfaces: [Fixture.eth0], removedInterfaces: [])
        #expect(renderChange(change) == "online via wlan0 (wifi); eth0 (wired): not ready")
        // From the interfaces known so far when the flags name no kind.
        var bare = Fixture.host
        bare.flags = [.reachable]
        let known = ReachabilityChange(generation: 11, host: bare, hostChanged: true, changedInterfaces: [], removedInterfaces: [])
        #expect(renderChange(known) == "online via wlan0")
        #expect(renderChange(known, known: [Fixture.wlan0]) == "online via wlan0 (wifi)")
    }
}

@Suite("Path lines")
struct PathTextTests {
    @Test("a path line speaks words; --verbose adds Apple's flags, none when empty")
    func pathLine() {
        let wifi = Path.Restriction(requiredInterfaceType: .wifi, prohibitedInterfaceTypes: [])
        let satisfied = Path(
            status: .satisfied, flags: [.reachable, .isWiFi],
            availableInterfaces: [Path.Interface(name: "wlan0", index: 3, kind: .wifi)], supportsIPv4: true)
        #expect(renderPath(satisfied, wifi) == "kind wifi: satisfied via wlan0 (wifi), IPv4")
        #expect(renderPath(satisfied, wifi, style: TextStyle(verbose: true)) == "kind wifi: satisfied via wlan0 (wifi) [reachable|isWiFi], IPv4")
        let unsatisfied = Path(status: .unsatisfied, unsatisfiedReason: .linkDown)
        #expect(renderPath(unsatisfied, wifi) == "kind wifi: unsatisfied (offline): linkDown")
        #expect(renderPath(unsatisfied, wifi, style: TextStyle(verbose: true)) == "kind wifi: unsatisfied (offline) [none]: linkDown")
        #expect(renderPath(unsatisfied, wifi, style: TextStyle(colour: true)).hasPrefix("kind wifi: \u{1B}[31munsatisfied\u{1B}[0m"))
    }
}

@Suite("Timestamps")
struct TimestampTests {
    @Test("ISO 8601 with milliseconds: UTC with Z for JSON, local time with its offset for text")
    func formats() {
        // 2026-11-27T16:40:01.007Z
        let time = Timestamp(seconds: 1_795_797_601, milliseconds: 7)
        #expect(time.utc == "2026-11-27T16:40:01.007Z")
        // The local form: the wall clock of its zone, then that zone's offset.
        var seconds = time_t(time.seconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        #expect(time.format(parts, offset: 0) == "2026-11-27T16:40:01.007+00:00")
        #expect(time.format(parts, offset: -(5 * 3600 + 30 * 60)) == "2026-11-27T16:40:01.007-05:30")
        #expect(Timestamp(seconds: 0, milliseconds: 999).format(parts, offset: 3600).hasSuffix(".999+01:00"))
        #expect(time.local.wholeMatch(of: #/2026-11-2[6-8]T\d\d:\d\d:01\.007[+-]\d\d:\d\d/#) != nil, "\(time.local)")
    }

    @Test("now is now")
    func now() {
        let before = Int(Date().timeIntervalSince1970)
        let now = Timestamp.now()
        #expect(abs(now.seconds - before) <= 1)
        #expect((0..<1000).contains(now.milliseconds))
    }
}
