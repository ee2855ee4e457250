import Testing
@testable import Reachability

/// issue 43: one way to keep a snapshot current (`applying(_:)`), and one way to tell what
/// moved between two snapshots no change links (`ReachabilityChange(from:to:)`): each undoes
/// the other.
struct SnapshotApplyingTests {
    static let eth0 = InterfaceStatus(index: 2, name: "eth0", kind: .wired, flags: [.reachable, .isWired], addresses: [IPPrefix("192.0.2.2/24")!])
    static let wlan0 = InterfaceStatus(index: 3, name: "wlan0", kind: .wifi, flags: [.isWiFi], addresses: [])
    static let vpn = InterfaceStatus(
        index: 9, name: "tun0", kind: .vpn, flags: [.reachable, .isVPN], addresses: [IPPrefix("10.8.0.2/32")!], expensiveReason: .configuration,
        networkID: "n1")

    static let before = ReachabilitySnapshot(
        generation: 4, host: HostStatus(flags: [.reachable], state: .online, primaryInterface: "eth0", availableInterfaces: ["eth0"]),
        interfaces: [eth0, wlan0], stallEvidence: StallEvidence())

    @Test func applyingReplacesAddsAndRemovesByIndexAndKeepsTheStallEvidence() {
        var up = Self.wlan0
        up.flags.insert(.reachable)
        let host = HostStatus(flags: [.reachable, .isVPN], state: .online, primaryInterface: "tun0", availableInterfaces: ["tun0", "wlan0"])
        let change = ReachabilityChange(
            generation: 5, host: host, hostChanged: true, changedInterfaces: [up, Self.vpn], removedInterfaces: [Self.eth0])
        let after = Self.before.applying(change)
        #expect(after == ReachabilitySnapshot(generation: 5, host: host, interfaces: [up, Self.vpn], stallEvidence: StallEvidence()))
    }

    @Test func aDiffAppliedToTheOldSnapshotGivesTheNewOne() {
        let new = ReachabilitySnapshot(
            generation: 9, host: HostStatus(flags: [.reachable, .isVPN], state: .online, primaryInterface: "tun0"), interfaces: [Self.wlan0, Self.vpn])
        let change = ReachabilityChange(from: Self.before, to: new)
        #expect(change.generation == 9 && change.hostChanged)
        #expect(change.changedInterfaces == [Self.vpn] && change.removedInterfaces == [Self.eth0])
        #expect(change.hostChange?.changed.contains(.primary) == true)
        var expected = new
        expected.stallEvidence = Self.before.stallEvidence
        #expect(Self.before.applying(change) == expected)
        #expect(ReachabilityChange(from: new, to: new).isEmpty)
    }

    @Test func aDiffKeepsWhatThePublisherDescribedInOrder() {
        let described = [HostChange(changed: [.sourceAddress], rebind: true), HostChange(changed: [.dns], rebind: false)]
        let change = ReachabilityChange(from: Self.before, to: Self.before, described: described)
        #expect(change.hostChanged && change.hostChange == HostChange(changed: [.sourceAddress, .dns], rebind: true))
    }
}
