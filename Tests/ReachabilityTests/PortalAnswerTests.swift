import Testing
@testable import Reachability
@testable import ReachabilityConnectivity

/// The captive-portal API's answer (RFC 8908) read strictly, dhclient's leases read without
/// trust, and the Engine's session: pure, no root.
@Suite struct PortalAnswerTests {
    static func parse(_ text: String) -> Result<PortalAPIReply, PortalAPIRefusal> { PortalAPIReply.parse(Array(text.utf8)) }

    @Test func everyMemberTheRFCNamesIsRead() throws {
        let reply = try Self.parse(#"""
            {"captive": false, "user-portal-url": "https://login.example/p?x=1", "venue-info-url": "https://venue.example/",
             "seconds-remaining": 326, "bytes-remaining": 65536, "can-extend-session": true, "other": {"a": [1, 2.5e3, null]}}
            """#).get()
        #expect(reply == PortalAPIReply(
            captive: false, userPortalURL: "https://login.example/p?x=1", venueInfoURL: "https://venue.example/", secondsRemaining: 326,
            bytesRemaining: 65536, canExtendSession: true))
        #expect(try Self.parse(#"{"captive":true}"#).get() == PortalAPIReply(captive: true))
    }

    @Test(arguments: [
        (#"{}"#, "no \"captive\""),
        (#"{"captive": "false"}"#, "\"captive\" is not a boolean"),
        (#"{"captive": false, "seconds-remaining": -1}"#, "\"seconds-remaining\" is not a whole number"),
        (#"{"captive": false, "seconds-remaining": 1.5}"#, "\"seconds-remaining\" is not a whole number"),
        (#"{"captive": false, "bytes-remaining": 99999999999999999999}"#, "\"bytes-remaining\" is not a whole number"),
        (#"{"captive": false, "can-extend-session": 1}"#, "\"can-extend-session\" is not a boolean"),
        (#"{"captive": true, "user-portal-url": "http://login.example/"}"#, "not an https URI"),
        (#"{"captive": true, "user-portal-url": "javascript:alert(1)"}"#, "not an https URI"),
        (#"{"captive": true, "user-portal-url": "https://bank.example@evil.example/"}"#, "a user name"),
        (#"{"captive": true, "user-portal-url": "https://login.example/\u001b[31m"}"#, "not printable ASCII"),
        (#"{"captive": true, "venue-info-url": "https://venue.example/\u202e"}"#, "not printable ASCII"),
        (#"{"captive": true, "captive": false}"#, "twice"),
        (#"{"captive": true"#, "not JSON"),
        (#"{"captive": true} x"#, "bytes after the object"),
        (#"[{"captive": true}]"#, "not a JSON object"),
        (#"{"captive": tru}"#, "not JSON"),
        (#"{"captive": false, "x": 01}"#, "not JSON"),
        (#"{"captive": false, "x": "\ud800"}"#, "lone surrogate"),
        ("{\"captive\": false, \"x\": \"a\tb\"}", "control character"),
    ]) func aStrictReaderRefusesWithAReason(_ text: String, _ reason: String) {
        guard case let .failure(refusal) = Self.parse(text) else {
            Issue.record("taken: \(text)")
            return
        }
        #expect(refusal.reason.contains(reason), "\(text): \(refusal.reason)")
    }

    @Test func nestingPastTheBoundIsRefusedNotRecursedInto() {
        let deep = #"{"captive": false, "x": "# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}"
        guard case let .failure(refusal) = Self.parse(deep) else {
            Issue.record("taken")
            return
        }
        #expect(refusal.reason.contains("nested deeper"))
    }

    /// Garbage never traps: random bytes and every prefix of a good answer.
    @Test func garbageIsRefusedNeverTrapped() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = PortalAPIReply.parse([UInt8(ascii: "{")] + bytes)
        }
        let good = Array(#"{"captive": false, "user-portal-url": "https://a.example/", "seconds-remaining": 5, "x": ["\u00e9", {}]}"#.utf8)
        for end in 0..<good.count { if case .success = PortalAPIReply.parse(Array(good[..<end])) { Issue.record("a prefix taken") } }
        #expect((try? PortalAPIReply.parse(good).get()) != nil)
    }

    @Test func dhclientsLastLeaseOfEachInterfaceAndFamilyCounts() {
        let text = """
            lease {
              interface "eth0";
              option default-url "https://old.example/api";
            }
            lease6 {
              interface "eth0";
              ia-na 1a:2b:3c:4d {
                iaaddr 2001:db8::5 {
                  starts 1;
                }
              }
              option dhcp6.v6-captive-portal "https://six.example/api";
            }
            lease {
              interface "eth0";
              option v4-captive-portal "https://new.example/api";
            }
            lease {
              interface "wlan0";
              option default-url "https://wlan.example/api";
            }
            lease {
              interface "wlan0";
              fixed-address 192.0.2.9;
            }
            lease {
              interface "eth1";
              option default-url "http://plain.example/";
            }

            """
        let read = DHCPClientLeases.portals(inLeaseFile: Array(text.utf8))
        #expect(Set(read.portals) == [
            DHCPPortal(interfaceName: "eth0", uri: "https://new.example/api", source: .dhcpv4),
            DHCPPortal(interfaceName: "eth0", uri: "https://six.example/api", source: .dhcpv6),
        ], "wlan0's last lease carries none")
        #expect(read.refusals.count == 1 && read.refusals[0].contains("'eth1'") && read.refusals[0].contains("http://plain.example/"), "\(read.refusals)")
    }

    @Test func leaseGarbageNeverTraps() {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["lease {", "lease6 {", "}", "{", "interface \"", "\"", "option default-url \"", "\n", ";", "https://x/"]
        for _ in 0..<2000 {
            let text = (0..<Int.random(in: 0..<30, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            _ = DHCPClientLeases.portals(inLeaseFile: Array(text.utf8))
        }
    }

    /// GLib and Qt read the NetworkManager subset: the API's captive is its PORTAL (2), at SITE (60).
    @Test func gLibAndQtSeeTheAPIsCaptiveAsNetworkManagersPortal() {
        var host = HostStatus(flags: [.reachable, .isWired], state: .online, primaryInterface: "eth0", availableInterfaces: ["eth0"])
        #expect(NetworkManagerValues(host: host, interfaces: []).connectivity == NetworkManagerValues.connectivityFull)
        host.portalSession = PortalSession(captive: true, loginURL: "https://login.example/")
        let values = NetworkManagerValues(host: host, interfaces: [])
        #expect(values.connectivity == NetworkManagerValues.connectivityPortal && values.state == NetworkManagerValues.stateConnectedSite)
    }

    /// The Engine: a DHCP portal on the primary link, then its API's answer, then the lead time.
    @Test func theSessionFollowsTheAPIsAnswerAndTheClock() throws {
        var state = try ExpensiveReasonTests.uplink()
        _ = state.apply([.dhcpPortals([DHCPPortal(interfaceName: "eth0", uri: "https://api.example/", source: .dhcpv4)])])
        #expect(state.host.announcedPortal == "https://api.example/")
        #expect(state.snapshot.interfaces.first { $0.name == "eth0" }?.portalSource == .dhcpv4)
        let now = ContinuousClock.now
        let answer = PortalAnswer(
            interfaceIndex: 2, api: "https://api.example/", session: PortalSession(captive: false, ends: 1), endingAt: now + .seconds(10))
        _ = state.apply([.portalAnswer(index: 2, api: "https://api.example/", answer)])
        #expect(state.host.portalSession.ends == 1 && !state.host.portalSession.ending)
        #expect(state.nextExpiry == now + .seconds(10))
        #expect(HostCondition.noPortal.failure(in: state.snapshot) == nil)
        _ = state.apply([.clock(now + .seconds(10))])
        #expect(state.host.portalSession.ending)
        #expect(HostCondition.noPortal.failure(in: state.snapshot)?.contains("lead time") == true)
        // An answer for a URI the link no longer announces is not shown.
        _ = state.apply([.portalAnswer(index: 2, api: "https://other.example/", answer)])
        #expect(state.host.portalSession == .none)
        _ = state.apply([.dhcpPortals([])])
        #expect(state.host.announcedPortal == "")
    }

    /// Where the probe has no verdict (off by default, and quiet while the API answers), the
    /// API's captive is the host's connectivity: portal at the API's login page, so Connectivity,
    /// the status line and `is internet` agree with the network. A probe's own verdict stands.
    @Test func theAPIsCaptiveIsTheConnectivityWhereTheProbeHasNone() throws {
        var state = try ExpensiveReasonTests.uplink()
        _ = state.apply([.dhcpPortals([DHCPPortal(interfaceName: "eth0", uri: "https://api.example/", source: .dhcpv4)])])
        #expect(state.host.connectivity.verdict == .unknown)
        let captive = PortalAnswer(
            interfaceIndex: 2, api: "https://api.example/", session: PortalSession(captive: true, loginURL: "https://login.example/"),
            endingAt: nil)
        _ = state.apply([.portalAnswer(index: 2, api: "https://api.example/", captive)])
        #expect(state.host.connectivity.verdict == .portal && state.host.connectivity.portal == "https://login.example/", "\(state.host.connectivity)")
        #expect(state.host.flags.contains(.interventionRequired))
        #expect(HostCondition.internet.failure(in: state.snapshot)?.contains("captive") == true)
        // The probe's verdict, when there is one, is what the host shows.
        _ = state.apply([.connectivity(ConnectivityStatus(verdict: .full))])
        #expect(state.host.connectivity.verdict == .full)
        _ = state.apply([.connectivity(.unknown)])
        let free = PortalAnswer(interfaceIndex: 2, api: "https://api.example/", session: PortalSession(captive: false), endingAt: nil)
        _ = state.apply([.portalAnswer(index: 2, api: "https://api.example/", free)])
        #expect(state.host.connectivity.verdict == .unknown && !state.host.flags.contains(.interventionRequired))
    }
}
