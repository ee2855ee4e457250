import Foundation
import Synchronization
import Testing
@testable import Reachability

/// issue 25, part 3: `PathMonitor`, NWPathMonitor's AsyncSequence, against the real kernel. veths
/// are classified by rule (`pm?` wired, `pw?` Wi-Fi; their peers stay virtual), so kinds can be
/// required and prohibited.
@Suite(rootOnly)
struct PathMonitorTests {
    static let rules = [InterfaceRule(pattern: "pm?", kind: .wired), InterfaceRule(pattern: "pw?", kind: .wifi)]
    static let gateway = IPAddress("192.0.2.1")!

    /// Iterates a path monitor as a program would, in a task of its own, and keeps every path.
    final class PathRecorder: Sendable {
        final class Paths: Sendable { let list = Mutex<[Path]>([]) }
        let paths = Paths()
        let task: Task<Void, Never>

        init(_ monitor: PathMonitor) {
            let paths = self.paths
            task = Task { for await path in monitor { paths.list.withLock { $0.append(path) } } }
        }

        deinit { task.cancel() }

        var all: [Path] { paths.list.withLock { $0 } }

        /// Waits until the latest path satisfies `condition`.
        func wait(for what: String, _ condition: @escaping (Path) -> Bool) async throws {
            try await eventually("\(what): \(all)") { all.last.map(condition) ?? false }
        }
    }

    @Test func wiredUplinkIsSatisfied_andUnsatisfiedWhenWiredIsProhibited() async throws {
        let ns = try TestNamespace()
        let monitor = try ns.monitor(rules: Self.rules)
        let any = PathRecorder(PathMonitor(monitor: monitor))
        try await any.wait(for: "nothing yet") { $0.status == .unsatisfied && $0.unsatisfiedReason == .noRoute }

        try KernelMonitorTests.uplink(ns, "pm0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let expected = Path(
            status: .satisfied, flags: [.reachable, .isWired], availableInterfaces: [Path.Interface(name: "pm0", index: 0, kind: .wired)],
            supportsIPv4: true, gateways: [Self.gateway])
        try await any.wait(for: "wired uplink") { Self.sameIgnoringIndex($0, expected) }
        #expect(any.all.last?.usesInterfaceType(.wired) == true)

        let noWired = PathMonitor(monitor: monitor, prohibitedInterfaceTypes: [.wired])
        #expect(noWired.askPath() == Path(status: .unsatisfied, unsatisfiedReason: .noRoute))
        #expect(noWired.currentPath == Path(status: .unsatisfied), "not started: nothing delivered yet, as Apple's")
        let recorder = PathRecorder(noWired)
        try await recorder.wait(for: "wired prohibited") { $0 == Path(status: .unsatisfied, unsatisfiedReason: .noRoute) }
        #expect(recorder.all.allSatisfy { $0.status == .unsatisfied }, "\(recorder.all)")
        withExtendedLifetime(monitor) {}
    }

    @Test func carrierLossIsUnsatisfiedThenSatisfiedAgain() async throws {
        let ns = try TestNamespace()
        let monitor = try ns.monitor(rules: Self.rules)
        try KernelMonitorTests.uplink(ns, "pm0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let recorder = PathRecorder(PathMonitor(monitor: monitor, requiredInterfaceType: .wired))
        try await recorder.wait(for: "wired uplink") { $0.status == .satisfied }

        try ns.ip("link set pm0p down")
        try await recorder.wait(for: "carrier lost") { $0.status == .unsatisfied && $0.unsatisfiedReason == .linkDown }
        try ns.ip("link set pm0p up")
        try await recorder.wait(for: "carrier back") { $0.status == .satisfied && $0.gateways == [Self.gateway] }

        // Every delivery is a change of the path.
        let paths = recorder.all
        #expect(zip(paths, paths.dropFirst()).allSatisfy { $0 != $1 }, "\(paths)")
        #expect(paths.map(\.status) == [.satisfied, .unsatisfied, .satisfied], "\(paths)")
        withExtendedLifetime(monitor) {}
    }

    @Test func requiredWiFiMonitorIgnoresChangesOfWiredLinks() async throws {
        let ns = try TestNamespace()
        let monitor = try ns.monitor(rules: Self.rules)
        // Wi-Fi is the kernel's choice (lower metric), so the wired link's changes leave it alone.
        try KernelMonitorTests.uplink(ns, "pw0", "198.51.100.2/24", gateway: "198.51.100.1", metric: 50)
        try KernelMonitorTests.uplink(ns, "pm0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let any = PathRecorder(PathMonitor(monitor: monitor))
        let wifi = PathRecorder(PathMonitor(monitor: monitor, requiredInterfaceType: .wifi))
        try await any.wait(for: "both uplinks") { $0.availableInterfaces.count == 2 }
        try await wifi.wait(for: "Wi-Fi") { $0.status == .satisfied && $0.availableInterfaces.map(\.name) == ["pw0"] }
        #expect(wifi.all.last?.gateways == [IPAddress("198.51.100.1")!])
        #expect(wifi.all.last?.usesInterfaceType(.wired) == false)

        try ns.ip("link set pm0p down")
        try await any.wait(for: "wired gone") { $0.availableInterfaces.map(\.name) == ["pw0"] }
        try ns.ip("link set pm0p up")
        try await any.wait(for: "wired back") { $0.availableInterfaces.count == 2 }
        try ns.ip("addr add 192.0.2.3/24 dev pm0")
        // Its IPv6 link-local address comes and goes on its own: look for this one, not a count.
        try await eventually(monitor, "second wired address") {
            $0.interface("pm0")?.addresses.contains { $0.address == IPAddress("192.0.2.3")! } == true
        }
        // The unrestricted monitor saw the wired link go and come back; the Wi-Fi one, given time
        // to take every change its own task was sent, saw nothing.
        try await Task.sleep(for: .milliseconds(300))
        #expect(any.all.count >= 3, "\(any.all)")
        #expect(wifi.all.count == 1, "\(wifi.all)")
        withExtendedLifetime(monitor) {}
    }

    static func sameIgnoringIndex(_ a: Path, _ b: Path) -> Bool {
        var a = a
        for i in a.availableInterfaces.indices { a.availableInterfaces[i].index = 0 }
        return a == b
    }
}

/// The derivation alone, no kernel: what a restriction does to one host answer.
struct PathDerivationTests {
    static let wired = InterfaceStatus(
        index: 2, name: "eth0", kind: .wired, flags: [.reachable, .isWired],
        addresses: [IPPrefix(IPAddress("192.0.2.2")!, length: 24)])
    static let cellular = InterfaceStatus(
        index: 3, name: "wwan0", kind: .cellular, flags: [.reachable, .isWWAN, .isExpensive],
        addresses: [IPPrefix(IPAddress("2001:db8::2")!, length: 64)])
    static let online = HostStatus(
        flags: [.reachable, .isWired], state: .online, primaryInterface: "eth0", availableInterfaces: ["eth0", "wwan0"],
        pathFacts: PathFacts(supportsIPv4: true, gateways: [IPAddress("192.0.2.1")!]))
    static let interfaces = [Int32(2): wired, 3: cellular]

    @Test func unrestrictedIsTheHostsAnswer() {
        let path = Path(host: Self.online, interfaces: Self.interfaces)
        #expect(path.status == .satisfied)
        #expect(path.availableInterfaces.map(\.name) == ["eth0", "wwan0"])
        #expect(path.gateways == [IPAddress("192.0.2.1")!])
        #expect(!path.isExpensive)
        #expect(path.state == .online && path.flags == Self.online.flags && path.primaryInterface == "eth0")
    }

    @Test func aRequiredKindWhoseLinkIsDownIsLinkDownWithConnectionRequired() {
        var down = Self.wired
        down.flags = [.connectionRequired, .isWired]
        var host = Self.online
        host.availableInterfaces = ["wwan0"]
        host.primaryInterface = "wwan0"
        let path = Path(host: host, interfaces: [2: down, 3: Self.cellular], restriction: .init(requiredInterfaceType: .wired))
        #expect(path == Path(status: .unsatisfied, state: .offline, flags: [.connectionRequired], unsatisfiedReason: .linkDown))
    }

    @Test func kindNamesParseAndAnUnknownOneIsNamed() throws {
        #expect(try Path.Restriction.parse(required: "wifi", prohibited: ["vpn", "cellular"]).get()
            == Path.Restriction(requiredInterfaceType: .wifi, prohibitedInterfaceTypes: [.vpn, .cellular]))
        guard case let .failure(error) = Path.Restriction.parse(required: nil, prohibited: ["wired", "modem"]) else {
            Issue.record("modem is no kind")
            return
        }
        #expect(error.description.hasPrefix("unknown interface kind 'modem' (known: loopback, wired, wifi"))
    }

    @Test func prohibitingThePrimaryKindLeavesTheOthers() {
        let path = Path(host: Self.online, interfaces: Self.interfaces, restriction: .init(prohibitedInterfaceTypes: [.wired]))
        // Not the host's primary: the flags are the interface's own.
        #expect(path == Path(
            status: .satisfied, flags: [.reachable, .isWWAN, .isExpensive],
            availableInterfaces: [Path.Interface(name: "wwan0", index: 3, kind: .cellular)],
            isExpensive: true, supportsIPv6: true))
    }

    @Test func aKillSwitchBlocksEveryRestriction() {
        var host = Self.online
        host.state = .local
        host.pathFacts = PathFacts(reason: .policyBlocked)
        let path = Path(host: host, interfaces: Self.interfaces, restriction: .init(requiredInterfaceType: .cellular))
        // The cellular link is ready with an address: local, as the host would say.
        #expect(path == Path(status: .unsatisfied, state: .local, unsatisfiedReason: .policyBlocked))
    }

    @Test func theAnnouncedNat64PrefixIsTheHostPaths_notARestrictedPathsWithoutThePrimary() {
        var host = Self.online
        let prefix = IPPrefix(IPAddress("64:ff9b::")!, length: 96)
        host.nat64Prefix = Nat64Prefix(prefix: prefix, router: IPAddress("fe80::1")!, interfaceName: "eth0")
        #expect(Path(host: host, interfaces: Self.interfaces).nat64Prefix == prefix)
        #expect(Path(host: host, interfaces: Self.interfaces, restriction: .init(requiredInterfaceType: .wired)).nat64Prefix == prefix)
        #expect(Path(host: host, interfaces: Self.interfaces, restriction: .init(prohibitedInterfaceTypes: [.wired])).nat64Prefix == nil)
        #expect(Path(host: Self.online, interfaces: Self.interfaces).nat64Prefix == nil)
    }

    @Test func aRequiredKindThatIsNotThereIsNoRoute() {
        let path = Path(host: Self.online, interfaces: Self.interfaces, restriction: .init(requiredInterfaceType: .wifi))
        #expect(path == Path(status: .unsatisfied, unsatisfiedReason: .noRoute))
    }
}
