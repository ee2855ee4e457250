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
}
