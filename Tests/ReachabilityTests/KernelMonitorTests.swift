import Foundation
import Testing
@testable import Reachability

/// The monitor against the real kernel, each test in a network namespace of its own.
@Suite(rootOnly)
struct KernelMonitorTests {
    @Test func carrierFlapOnVethPeer() async throws {
        let ns = try TestNamespace()
        try Self.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 0)
        let monitor = try ns.monitor()
        let recorder = await UpdateRecorder(monitor)
        #expect(recorder.first.host.state == .online)
        #expect(recorder.first.host.primaryInterface == "up0")
        #expect(recorder.first.host.flags == [.reachable])  // a veth is virtual: no kind flag
        #expect(recorder.first.interface("up0")?.flags == [.reachable])

        try ns.ip("link set up0p down")
        let down = try await recorder.wait(for: "carrier loss") { $0.host.state != .online }
        #expect(down.host.flags == [.connectionRequired])
        #expect(down.host.primaryInterface == "up0")
        #expect(down.host.availableInterfaces == [])
        #expect(down.changedInterfaces.first { $0.name == "up0" }?.flags == [.connectionRequired])

        try ns.ip("link set up0p up")
        let up = try await recorder.wait(for: "carrier back") { $0.host.state == .online && $0.generation > down.generation }
        #expect(up.host.flags == [.reachable])
        #expect(up.host.availableInterfaces == ["up0"])
        try await Task.sleep(for: .milliseconds(200))
        // One change per real transition of the host: down, then up; no noise. (The peer's own
        // admin state changes are real changes of another interface, reported separately.)
        #expect(recorder.changes.filter(\.hostChanged).count == 2, "changes: \(recorder.changes)")
        #expect(recorder.changes.allSatisfy { !$0.changedInterfaces.isEmpty || $0.hostChanged })
    }
}

extension KernelMonitorTests {
    /// Two veths with a live peer each: `name` gets `address`, and a default route via `gateway`.
    static func uplink(_ ns: TestNamespace, _ name: String, _ address: String, gateway: String, metric: Int) throws {
        try ns.ip("link add \(name) type veth peer name \(name)p")
        try ns.ip("addr add \(address) dev \(name)")
        try ns.ip("link set \(name)p up")
        try ns.ip("link set \(name) up")
        try ns.ip("route add default via \(gateway) dev \(name) metric \(metric)")
        try ns.waitForCarrier(name)
    }

    @Test func addressesAndDefaultRoutesIPv4AndIPv6() async throws {
        let ns = try TestNamespace()
        try ns.ip("link add v6a type veth peer name v6ap")
        try ns.ip("link set v6ap up")
        try ns.ip("link set v6a up")
        let monitor = try ns.monitor()
        let recorder = await UpdateRecorder(monitor)
        #expect(recorder.first.host.state != .online)

        // An IPv6-only network is online.
        try ns.ip("-6 addr add 2001:db8::2/64 dev v6a nodad")
        try ns.ip("-6 route add default via 2001:db8::1 dev v6a")
        var change = try await recorder.wait(for: "IPv6 default route") { $0.host.state == .online }
        #expect(change.host.primaryInterface == "v6a")
        #expect(monitor.snapshot.interface("v6a")?.addresses.contains(IPPrefix(IPAddress("2001:db8::2")!, length: 64)) == true)

        try ns.ip("-6 route del default via 2001:db8::1 dev v6a")
        // Not merely local: the kernel's router probe of 2001:db8::1 (nobody has it) may have
        // failed meanwhile, which makes the host local through v6a (gatewayUnreachable) first.
        change = try await recorder.wait(for: "IPv6 default route gone") { $0.host.state == .local && $0.host.primaryInterface == "" }
        #expect(change.host.flags == [])
        #expect(change.host.primaryInterface == "")

        try ns.ip("addr add 192.0.2.2/24 dev v6a")
        try await eventually(monitor, "IPv4 address listed") {
            $0.interface("v6a")?.addresses.first == IPPrefix(IPAddress("192.0.2.2")!, length: 24)
        }
        try ns.ip("route add default via 192.0.2.1")
        change = try await recorder.wait(for: "IPv4 default route") { $0.host.state == .online }
        #expect(change.host.primaryInterface == "v6a")

        // Removing the last IPv4 address makes the kernel drop the link's IPv4 routes silently.
        try ns.ip("addr del 192.0.2.2/24 dev v6a")
        change = try await recorder.wait(for: "IPv4 address gone") { $0.host.state == .local && $0.generation > change.generation }
        // The kernel may say the routes' end and the address's in two reads: the host goes local
        // with the first, the address goes with the second.
        try await eventually(monitor, "IPv4 address gone from the snapshot") {
            $0.interface("v6a")?.addresses.contains { $0.address.family == .ipv4 } == false
        }
        try await expectMatchesFreshDump(monitor, ns)
    }

    @Test func twoUplinksPrimaryIsKernelChoiceAvailableByKindPriority() async throws {
        let ns = try TestNamespace()
        let rules = [InterfaceRule(pattern: "eth*", kind: .wired), InterfaceRule(pattern: "wl*", kind: .wifi)]
        try Self.uplink(ns, "eth0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 600)
        try Self.uplink(ns, "wl0", "198.51.100.2/24", gateway: "198.51.100.1", metric: 100)
        let monitor = try ns.monitor(rules: rules)
        let recorder = await UpdateRecorder(monitor)
        // The kernel takes the lower metric (Wi-Fi here); our order prefers wired.
        #expect(recorder.first.host.primaryInterface == "wl0")
        #expect(recorder.first.host.flags == [.reachable, .isWiFi])
        #expect(recorder.first.host.availableInterfaces == ["eth0", "wl0"])
        #expect(recorder.first.interface("eth0")?.kind == .wired)
        #expect(recorder.first.interface("wl0")?.flags == [.reachable, .isWiFi])

        // Wi-Fi loses carrier: the kernel keeps using its route (marked linkdown), so the truth is
        // "not online, connection required via wl0", while eth0 stays available.
        try ns.ip("link set wl0p down")
        let change = try await recorder.wait(for: "Wi-Fi carrier loss") { !$0.host.flags.contains(.reachable) }
        #expect(change.host.flags == [.connectionRequired, .isWiFi])
        #expect(change.host.primaryInterface == "wl0")
        #expect(change.host.availableInterfaces == ["eth0"])

        // Wi-Fi down entirely: its route goes, wired takes over.
        try ns.ip("link set wl0 down")
        let wired = try await recorder.wait(for: "wired takes over") { $0.host.primaryInterface == "eth0" }
        #expect(wired.host.flags == [.reachable, .isWired])
        #expect(wired.host.state == .online)
        try await expectMatchesFreshDump(monitor, ns, rules: rules)
    }

    @Test func bridgeWithSubnetRouteOnlyNeverMakesHostOnline() async throws {
        let ns = try TestNamespace()
        // docker0-like: a bridge with its own subnet and a container's veth as port.
        try ns.ip("link add dk0 type bridge")
        try ns.ip("addr add 172.17.0.1/16 dev dk0")
        try ns.ip("link add vp0 type veth peer name vp0p")
        try ns.ip("link set vp0 master dk0")
        try ns.ip("link set vp0p up")
        try ns.ip("link set vp0 up")
        try ns.ip("link set dk0 up")
        let monitor = try ns.monitor()
        let snapshot = try await eventually(monitor, "bridge ready") { $0.interface("dk0")?.flags.contains(.reachable) == true }
        #expect(snapshot.host.state == .local)
        #expect(snapshot.host.flags == [])
        #expect(snapshot.host.primaryInterface == "")
        #expect(snapshot.host.availableInterfaces == [])
        #expect(snapshot.interface("dk0")?.kind == .bridge)  // its only port is virtual

        // The container case: a veth that carries the default route does make it online.
        try Self.uplink(ns, "eth0", "10.0.3.2/24", gateway: "10.0.3.1", metric: 0)
        let online = try await eventually(monitor, "container uplink") { $0.host.state == .online }
        #expect(online.host.primaryInterface == "eth0")
        #expect(online.host.availableInterfaces == ["eth0"])
    }

    @Test func bridgeTakesKindFromWiredPort() async throws {
        let ns = try TestNamespace()
        let rules = [InterfaceRule(pattern: "en*", kind: .wired)]
        try ns.ip("link add br0 type bridge")
        try ns.ip("link add en1 type veth peer name en1p")
        try ns.ip("link set en1 master br0")
        let monitor = try ns.monitor(rules: rules)
        try await eventually(monitor, "br0 wired") { $0.interface("br0")?.kind == .wired }
        try ns.ip("link set en1 nomaster")
        try await eventually(monitor, "br0 back to bridge") { $0.interface("br0")?.kind == .bridge }
    }

    @Test func tunWithDefaultRouteIsTransientVPN() async throws {
        let ns = try TestNamespace()
        try ns.ip("tuntap add dev tun0 mode tun")
        let holder = try TunHolder(name: "tun0", in: ns)
        try ns.ip("addr add 10.8.0.2/24 dev tun0")
        try ns.ip("link set tun0 up")
        try ns.ip("route add default dev tun0")
        let monitor = try ns.monitor()
        let snapshot = try await eventually(monitor, "VPN online") { $0.host.state == .online }
        #expect(snapshot.host.flags == [.transientConnection, .reachable, .isVPN])
        #expect(snapshot.host.primaryInterface == "tun0")
        #expect(snapshot.interface("tun0")?.kind == .vpn)
        _ = holder
    }

    @Test func configuredWiFiAndCellularOnVeths() async throws {
        let ns = try TestNamespace()
        let rules = [
            InterfaceRule(pattern: "wlan*", kind: .wifi),
            InterfaceRule(pattern: "wwan*", kind: .cellular),
            InterfaceRule(pattern: "tether*", kind: .wifi, metered: true),
        ]
        try Self.uplink(ns, "wwan0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 700)
        try Self.uplink(ns, "wlan0", "198.51.100.2/24", gateway: "198.51.100.1", metric: 600)
        try Self.uplink(ns, "tether0", "203.0.113.2/24", gateway: "203.0.113.1", metric: 650)
        let monitor = try ns.monitor(rules: rules)
        let snapshot = monitor.snapshot
        #expect(snapshot.interface("wwan0")?.flags == [.reachable, .isWWAN, .isExpensive])
        #expect(snapshot.interface("wlan0")?.flags == [.reachable, .isWiFi])
        #expect(snapshot.interface("tether0")?.flags == [.reachable, .isWiFi, .isExpensive])
        #expect(snapshot.host.primaryInterface == "wlan0")
        #expect(snapshot.host.availableInterfaces == ["wlan0", "tether0", "wwan0"])

        try ns.ip("link set wlan0 down")
        let cellular = try await eventually(monitor, "tether takes over") { $0.host.primaryInterface == "tether0" }
        #expect(cellular.host.flags == [.reachable, .isWiFi, .isExpensive])
    }
}
