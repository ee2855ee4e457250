import Testing
@testable import Reachability

/// issue 12: `[WaitOnline]` (what reachd-wait-online.service waits for) and `[Compatibility]`
/// (the opt-in NetworkManager surface), parsed and refused like every other key.
@Suite("Configuration: [WaitOnline] and [Compatibility]")
struct WaitOnlineConfigurationTests {
    static func parsed(_ text: String) -> (Configuration, [String]) {
        var configuration = Configuration.default
        let errors = Configuration.parse(text, file: "test.conf", into: &configuration)
        return (configuration, errors.map(\.description))
    }

    @Test func defaultsWaitHalfAMinuteForOnlineAndClaimNothing() {
        let defaults = Configuration.default
        #expect(defaults.waitOnlineTimeout == .seconds(30))
        #expect(defaults.waitOnlineTarget == nil && defaults.waitOnlineKind == nil)
        #expect(defaults.networkManagerCompatibility == false)
    }

    @Test func valuesAreTaken() {
        let (configuration, errors) = Self.parsed("""
            [WaitOnline]
            Timeout=90s
            Target=[2001:db8::1]
            Kind=Cellular
            [Compatibility]
            NetworkManager=yes
            """)
        #expect(errors == [])
        #expect(configuration.waitOnlineTimeout == .seconds(90))
        #expect(configuration.waitOnlineTarget == "[2001:db8::1]")
        #expect(configuration.waitOnlineKind == .cellular)
        #expect(configuration.networkManagerCompatibility)
        #expect(configuration.mergedText.contains("\n[WaitOnline]\nTimeout=90s\nTarget=[2001:db8::1]\nKind=cellular\n\n[Compatibility]\nNetworkManager=yes\n"),
                "\(configuration.mergedText)")
    }

    @Test(arguments: [
        ("[WaitOnline]\nTimeout=50ms\n", "test.conf:2: [WaitOnline] Timeout: duration '50ms' is out of range: must be from 100ms to 1440m"),
        ("[WaitOnline]\nKind=bridge\n",
         "test.conf:2: [WaitOnline] Kind: 'bridge' is not a kind of link that carries an uplink; expected one of wired, wifi, cellular, vpn"),
        ("[WaitOnline]\nTarget=bad..name\n", "test.conf:2: [WaitOnline] Target: "),
        ("[WaitOnline]\nTarget=127.1\n", "test.conf:2: [WaitOnline] Target: '127.1' is a short"),
        ("[Compatibility]\nNetworkManager=maybe\n",
         "test.conf:2: [Compatibility] NetworkManager: invalid boolean 'maybe'; expected yes, no, true, false, on, off, 1 or 0"),
        ("[Compatibility]\nNetworkManger=yes\n", "test.conf:2: [Compatibility] NetworkManger: unknown key; did you mean 'NetworkManager'?"),
        ("[WaitOnline]\nTarget=\n", "test.conf:2: [WaitOnline] Target: empty value; give an address or a host name or remove the line"),
    ])
    func aBadValueIsRefusedByName(_ text: String, _ message: String) {
        let (_, errors) = Self.parsed(text)
        #expect(errors.count == 1 && errors[0].hasPrefix(message), "\(errors)")
        if text.contains("bad..name") { #expect(errors.first?.contains("bad..name") == true) }
    }
}
