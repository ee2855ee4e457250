import Testing
@testable import Reachability

/// The network's name (`HostStatus.networkID`): SipHash-2-4 of the gateway's link-layer address
/// and the prefix, keyed by the host's secret. The same on one network across an address
/// renewal, different on another network or under another host's key, never before ARP has
/// resolved the gateway (so it never changes when it does).
@Suite struct NetworkIdentityTests {
    static let mac: [UInt8] = [0x02, 0x00, 0x5e, 0x10, 0x00, 0x01]
    static let key = NetworkKey(k0: 0x0706_0504_0302_0100, k1: 0x0f0e_0d0c_0b0a_0908)

    @Test func sipHashMatchesTheReferenceVectors() {
        // The reference implementation's vectors: key 00..0f, messages 00..(n-1).
        #expect(NetworkIdentity.sipHash24([], key: Self.key) == 0x726f_db47_dd0e_0e31)
        #expect(NetworkIdentity.sipHash24(Array(0..<15), key: Self.key) == 0xa129_ca61_49be_45e5)
        #expect(NetworkIdentity.sipHash24(Array(0..<8), key: Self.key) == 0x93f5_f579_9a93_2462)
    }

    static func online(address: String = "192.0.2.10", gateway: String = "192.0.2.1", key: NetworkKey = key) -> NetworkState {
        var state = NetworkState()
        state.networkKey = key
        _ = state.apply([
            .link(Fact.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Fact.v4(2, address)),
            .route(Fact.defaultV4(via: gateway, dev: 2), replace: false),
        ])
        return state
    }

    static func resolved(_ state: inout NetworkState, _ mac: [UInt8] = mac, gateway: String = "192.0.2.1") -> ReachabilityChange? {
        state.apply([.neighbour(Neighbour(interfaceIndex: 2, address: Fact.ip(gateway), state: .reachable, linkLayerAddress: mac))])
    }

    @Test func theNameComesWithTheGatewaysAddressAndStaysThroughARenewal() throws {
        var state = Self.online()
        #expect(state.host.state == .online && state.host.networkID == "", "not before ARP resolved the gateway")
        let change = try #require(Self.resolved(&state))
        let name = change.host.networkID
        #expect(name.count == 16 && name.allSatisfy(\.isHexDigit), "\(name)")
        #expect(change.host.state == .online)
        // STALE, then FAILED (no address given): the name stays as it was.
        _ = state.apply([.neighbour(Neighbour(interfaceIndex: 2, address: Fact.ip("192.0.2.1"), state: .stale))])
        #expect(state.host.networkID == name)
        // A renewal that gives another address in the same prefix: the same network.
        var renewed = Self.online(address: "192.0.2.77")
        _ = Self.resolved(&renewed)
        #expect(renewed.host.networkID == name)
    }

    @Test func anotherRouterAnotherPrefixOrAnotherHostsKeyIsAnotherName() {
        var home = Self.online()
        _ = Self.resolved(&home)
        var otherRouter = Self.online()
        _ = Self.resolved(&otherRouter, [0x02, 0, 0x5e, 0x10, 0, 0x02])
        var otherPrefix = Self.online(address: "198.51.100.10", gateway: "198.51.100.1")
        _ = Self.resolved(&otherPrefix, gateway: "198.51.100.1")
        var otherHost = Self.online(key: NetworkKey(k0: 1, k1: 2))
        _ = Self.resolved(&otherHost)
        let names = [home, otherRouter, otherPrefix, otherHost].map(\.host.networkID)
        #expect(Set(names).count == 4 && !names.contains(""), "\(names)")
    }

    @Test func offlineThereIsNoName() {
        var state = Self.online()
        _ = Self.resolved(&state)
        _ = state.apply([.routeRemoved(Fact.defaultV4(via: "192.0.2.1", dev: 2))])
        #expect(state.host.state != .online && state.host.networkID == "")
    }

    @Test func eachInterfaceCarriesTheNameOfItsNetwork_theHostsIsItsPrimarys() {
        var state = Self.online()
        #expect(state.interface(index: 2)?.networkID == "")
        _ = Self.resolved(&state)
        let name = state.host.networkID
        #expect(!name.isEmpty && state.interface(index: 2)?.networkID == name)
        // An IPv6 default route beside it (another gateway, another prefix): the network keeps
        // the name its IPv4 gateway gives it, whichever family the host's path takes.
        _ = state.apply([
            .address(Fact.v6(2, "2001:db8::10")),
            .route(Fact.defaultV6(via: "fe80::1", dev: 2), replace: false),
            .neighbour(Neighbour(interfaceIndex: 2, address: Fact.ip("fe80::1"), state: .reachable, linkLayerAddress: [2, 0, 0, 0, 0, 9])),
        ])
        #expect(state.host.networkID == name && state.interface(index: 2)?.networkID == name)
    }

    @Test func aNetworkRule_winsOverTheInterfaceRules_onThatNetworkOnly_atOnceOnReload() throws {
        var state = Self.online()
        _ = Self.resolved(&state)
        let name = state.host.networkID
        #expect(!state.host.flags.contains(.isExpensive))
        // An interface rule says unmetered, the network's rule says metered: the network wins.
        let rules = [InterfaceRule(pattern: "eth*", metered: false)]
        let reclassified = state.reclassify(with: Classifier(rules: rules, networks: [NetworkRule(id: name, metered: true, constrained: true)]))
        let change = try #require(reclassified)
        #expect(change.host.flags.contains(.isExpensive) && change.host.flags.contains(.isConstrained))
        #expect(change.host.expensiveReason == .configuration)
        #expect(state.interface(index: 2)?.flags.contains(.isExpensive) == true)
        // Another network (another router on the same link, found when the kernel resolved the
        // gateway afresh after the old one failed): the rule does not follow the link.
        _ = state.apply([.neighbour(Neighbour(interfaceIndex: 2, address: Fact.ip("192.0.2.1"), state: .failed))])
        _ = Self.resolved(&state, [0x02, 0, 0x5e, 0x10, 0, 0x02])
        #expect(state.host.networkID != name && !state.host.flags.contains(.isExpensive))
        // A rule for a network nobody is attached to changes nothing.
        var other = Self.online()
        _ = Self.resolved(&other)
        #expect(other.reclassify(with: Classifier(networks: [NetworkRule(id: "0123456789abcdef", metered: true)])) == nil)
    }
}
