import Testing
@testable import Reachability

/// issue 35: values routers announce are taken only when strictly valid. A captive-portal URI
/// (RFC 8910) is an https URI by RFC 3986's grammar; a NAT64 prefix (RFC 8781) has one of RFC
/// 6052's lengths and overlaps neither special ranges nor the link's own prefixes. Anything else
/// is dropped, and said once per router.
@Suite struct AnnouncementValidationTests {
    static func portal(_ uri: String) -> Result<String, AnnouncementRefusal> {
        AnnouncedPortal.uri(fromOptionValue: Array(uri.utf8) + [0, 0, 0])
    }

    @Test(arguments: [
        "https://portal.example/api?session=42",
        "HTTPS://Portal.Example:8443/a/b;c=d?x=1&y=%2F#frag",
        "https://192.0.2.1/",
        "https://[2001:db8::1]:443/capport",
        "https://portal.example",
        "https://a-b_c~d.example/!$&'()*+,;=:@/?/?",
        "https://xn--caf-dma.example/",
        "urn:ietf:params:capport:unrestricted",
    ])
    func strictHTTPSURIsAreTaken(_ uri: String) throws {
        #expect(try Self.portal(uri).get() == uri)
    }

    @Test(arguments: [
        ("https://portal.example/\"x\"", "the character '\"'"),
        ("https://portal.example/<script>", "the character '<'"),
        ("https://portal.example/a>b", "the character '>'"),
        ("https://portal.example/`id`", "the character '`'"),
        ("https://portal.example/a\\b", "the character '\\'"),
        ("https://portal.example/a|b", "the character '|'"),
        ("https://portal.example/{x}", "the character '{'"),
        ("https://portal.example/a^b", "the character '^'"),
        ("https://@/", "a user name"),
        ("https://bank.example@evil.example/", "a user name"),
        ("https:///path", "an empty host"),
        ("https://:443/", "an empty host"),
        ("https://portal.example/%zz", "'%' not followed by two hex digits"),
        ("https://portal.example/%4", "'%' not followed by two hex digits"),
        ("https://por%tal.example/", "in the host"),
        ("https://portal.example:99999/", "an invalid port"),
        ("https://portal.example:44a/", "an invalid port"),
        ("https://[2001:db8::1/", "without ']'"),
        ("https://[192.0.2.1]/", "an invalid IPv6 literal"),
        ("https://[fe80::1%25eth0]/", "an invalid IPv6 literal"),
        ("https://[2001:db8::1]x/", "between ']' and the port"),
        ("https://portal.example/#a#b", "a second '#'"),
        ("http://portal.example/", "not an https URI"),
        ("javascript:alert(1)", "not an https URI"),
        ("https:relative", "not an https URI"),
        ("https://portal.example/\u{202E}", "not printable ASCII"),
        ("https://portal.example/ space", "not printable ASCII"),
    ])
    func anythingElseIsRefusedSayingWhy(_ uri: String, _ why: String) {
        guard case let .failure(refusal) = Self.portal(uri) else {
            Issue.record("\(uri) was taken")
            return
        }
        #expect(refusal.reason.contains(why), "\(uri): \(refusal.reason)")
    }

    @Test func aURIAtTheOptionsLimitIsTakenAndNoneLonger() {
        let path = String(repeating: "a", count: AnnouncedPortal.maximumLength - "https://p.example/".count)
        #expect((try? Self.portal("https://p.example/" + path).get()) != nil)
        #expect((try? AnnouncedPortal.uri(fromOptionValue: Array(("https://p.example/" + path + "a").utf8)).get()) == nil)
    }

    static func prefix(_ text: String) -> IPPrefix { IPPrefix(text)! }

    @Test(arguments: ["64:ff9b::/96", "2001:db8:64::/64", "2001:db9::/32", "2001:db8:100::/40", "2001:db8:122:300::/56", "2001:db8:122::/48"])
    func nat64PrefixesOfRFC6052sLengthsAreTaken(_ text: String) {
        #expect(AnnouncedNat64Prefix.refusal(of: Self.prefix(text), onLink: [Self.prefix("2001:db8:1::5/64")]) == nil, "\(text)")
    }

    @Test(arguments: [
        ("::/96", "::/96"),
        ("::/32", "::/96"),
        ("::ffff:0:0/96", "IPv4-mapped"),
        ("ff02::/96", "multicast"),
        ("ff00::/32", "multicast"),
        ("fe80::/64", "link-local"),
        ("febf:ffff::/32", "link-local"),
        ("2001:db8:1::/96", "the link's own prefix 2001:db8:1::/64"),
        ("2001:db8:1::/64", "the link's own prefix 2001:db8:1::/64"),
        ("2001:db8::/32", "the link's own prefix 2001:db8:1::/64"),
        ("2001:db8:2::/80", "length 32, 40, 48, 56, 64 or 96"),
        ("192.0.2.0/32", "length 32, 40, 48, 56, 64 or 96"),
    ])
    func nat64PrefixesNoHostMayUseAreRefusedSayingWhy(_ text: String, _ why: String) {
        let reason = AnnouncedNat64Prefix.refusal(of: Self.prefix(text), onLink: [Self.prefix("2001:db8:1::5/64")])
        #expect(reason?.contains(why) == true, "\(text): \(String(describing: reason))")
    }

    /// In the Engine, where every announcement enters: the link's addresses and on-link routes
    /// of the same batch count, and the refusal waits for the adapter's journal.
    @Test func theEngineDropsANat64PrefixOverlappingTheLinksOwnAndKeepsTheRefusal() throws {
        var state = NetworkState()
        let link = Link(
            index: 2, name: "eth0", flags: [.up, .running, .lowerUp, LinkFlags(rawValue: 0x2), LinkFlags(rawValue: 0x1000)],
            hardwareType: Link.hardwareEther, operState: .up)
        let router = IPAddress("fe80::1")!
        func announce(_ text: String) -> NetworkEvent {
            .nat64Prefix(AnnouncedNat64Prefix(interfaceIndex: 2, router: router, prefix: Self.prefix(text), lifetime: .seconds(600)), received: .now)
        }
        let onLinkRoute = Route(destination: Self.prefix("2001:db8:7::/64"), metric: 256, nextHops: [NextHop(gateway: nil, interfaceIndex: 2)])
        _ = state.apply([
            .link(link, device: DeviceFacts()),
            .address(Address(interfaceIndex: 2, prefix: Self.prefix("2001:db8:1::5/64"), flags: AddressFlags(rawValue: 0x80))),
            .route(onLinkRoute, replace: false),
            announce("2001:db8:1::/96"), announce("2001:db8:7::/96"), announce("ff02::/96"),
        ])
        #expect(state.announcements.routers[2]?.prefixes.isEmpty ?? true)
        let refused = state.takeRefusedAnnouncements()
        #expect(refused.map(\.value) == ["2001:db8:1::/96", "2001:db8:7::/96", "ff02::/96"])
        #expect(refused.allSatisfy { $0.option == .nat64Prefix && $0.router == router && $0.interfaceIndex == 2 })
        #expect(refused[1].description.contains("overlaps the link's own prefix 2001:db8:7::/64"), "\(refused[1])")
        #expect(state.takeRefusedAnnouncements().isEmpty, "taken once")
        _ = state.apply([announce("64:ff9b::/96")])
        #expect(state.announcements.routers[2]?.prefixes[router]?.announced.prefix == Self.prefix("64:ff9b::/96"))
        // A state nobody drains holds a bounded number.
        _ = state.apply(Array(repeating: announce("::/96"), count: 100))
        #expect(state.takeRefusedAnnouncements().count == Announcements.refusalsKept)
    }

    @Test func aRefusalIsSaidWithAnInertExcerpt() {
        let refusal = RefusedAnnouncement(
            option: .captivePortal, interfaceIndex: 3, router: IPAddress("fe80::1"), value: "https://x/\u{202E}" + String(repeating: "a", count: 500),
            reason: "a byte that is not printable ASCII")
        #expect(refusal.description.hasPrefix("ignoring the captive-portal URI 'https://x/\\u{202e}aaa"), "\(refusal)")
        #expect(refusal.description.contains("…(513 bytes) announced by fe80::1 on link 3: a byte that is not printable ASCII; said once per router"))
    }
}
