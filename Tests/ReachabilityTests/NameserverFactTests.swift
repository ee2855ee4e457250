import Foundation
import Testing
@testable import Reachability

/// The parts without a daemon: the nameservers read (systemd-resolved's stub rule, a file
/// without servers), the Engine's loopback rule, and `Constrained=` parsed like `Metered=`.
struct NameserverFactTests {
    static func ip(_ text: String) -> IPAddress { IPAddress(text)! }

    /// An Ethernet link with carrier (UP, BROADCAST, RUNNING, MULTICAST, LOWER_UP).
    static func ethernet(_ index: Int32, _ name: String) -> Link {
        Link(index: index, name: name, flags: [.up, LinkFlags(rawValue: 0x1002), .running, .lowerUp], hardwareType: Link.hardwareEther, operState: .up)
    }

    /// A main-table route through link 2.
    static func route(_ destination: String, _ length: UInt8, via gateway: String?) -> Route {
        Route(destination: IPPrefix(ip(destination), length: length), metric: 0, nextHops: [NextHop(gateway: gateway.map(ip), interfaceIndex: 2)])
    }

    static func file(_ directory: String, _ name: String, _ text: String) throws -> String {
        let path = directory + "/" + name
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    @Test func resolvedsStubIsReplacedByItsUpstreamListWhenThereIsOne() throws {
        let directory = try makeScratchDirectory("nsfact")
        defer { removeTree(directory) }
        let stub = try Self.file(directory, "stub-resolv.conf", "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n")
        let upstream = directory + "/resolv.conf"
        // No upstream list (another local resolver): the stub stays.
        #expect(NameserverWatch(path: stub, upstreamPath: upstream).nameservers() == [IPAddress("127.0.0.53")!])
        // One that names no server (c-ares would say 127.0.0.1): the stub stays.
        _ = try Self.file(directory, "resolv.conf", "# no DNS servers known\n")
        #expect(NameserverWatch(path: stub, upstreamPath: upstream).nameservers() == [IPAddress("127.0.0.53")!])
        _ = try Self.file(directory, "resolv.conf", "nameserver 192.0.2.53\nnameserver 2001:db8::53\n")
        #expect(NameserverWatch(path: stub, upstreamPath: upstream).nameservers() == [IPAddress("192.0.2.53")!, IPAddress("2001:db8::53")!])
        // A server beside the stub is not resolved's stub alone: the file is taken as it is.
        let mixed = try Self.file(directory, "mixed.conf", "nameserver 127.0.0.53\nnameserver 198.51.100.53\n")
        #expect(NameserverWatch(path: mixed, upstreamPath: upstream).nameservers() == [IPAddress("127.0.0.53")!, IPAddress("198.51.100.53")!])
        // No nameserver line, or no file: none configured.
        let empty = try Self.file(directory, "empty.conf", "search example.com\n# nameserver 192.0.2.9\n")
        #expect(NameserverWatch(path: empty, upstreamPath: upstream).nameservers() == [])
        #expect(NameserverWatch(path: directory + "/missing", upstreamPath: upstream).nameservers() == [])
    }

    @Test func aStubOnLoopbackCountsWhileOnlineAndARouteOnlyThroughAReadyLink() throws {
        var state = NetworkState()
        _ = state.apply([
            .link(Self.ethernet(2, "eth0"), device: DeviceFacts()),
            .address(Address(interfaceIndex: 2, prefix: IPPrefix(Self.ip("192.0.2.2"), length: 24), scope: 0, flags: AddressFlags(rawValue: 0x80))),
            .route(Self.route("192.0.2.0", 24, via: nil), replace: false),
        ])
        let onLink = Self.route("192.0.2.0", 24, via: nil)
        // Not online (no default route): a server on the link counts, the stub does not.
        var change = state.apply([.nameservers([NameserverRoute(address: Self.ip("127.0.0.53"), route: nil)])])
        // The servers are part of the host's answer (`HostAddressing`): a change naming only them.
        #expect(change?.hostChange?.changed == [.dns])
        #expect(change?.host.pathFacts.supportsDNS == false)
        #expect(!state.host.pathFacts.supportsDNS)
        change = state.apply([.nameservers([NameserverRoute(address: Self.ip("192.0.2.53"), route: onLink)])])
        #expect(change?.host.pathFacts.supportsDNS == true)
        // No route, or a blocking one: not routable.
        _ = state.apply([.nameservers([NameserverRoute(address: Self.ip("198.51.100.53"), route: nil)])])
        #expect(!state.host.pathFacts.supportsDNS)
        // Online: the stub counts.
        _ = state.apply([
            .route(Self.route("0.0.0.0", 0, via: "192.0.2.1"), replace: false),
            .nameservers([NameserverRoute(address: Self.ip("127.0.0.53"), route: nil)]),
        ])
        #expect(state.host.state == .online)
        #expect(state.host.pathFacts.supportsDNS)
        // The same server list again changes nothing.
        #expect(state.apply([.nameservers([NameserverRoute(address: Self.ip("127.0.0.53"), route: nil)])]) == nil)
    }

    @Test func constrainedIsParsedLikeMeteredAndNamesABadValue() throws {
        var configuration = Configuration.default
        let errors = Configuration.parse(
            "[Interface]\nName=wlan*\nConstrained=yes\n[Interface]\nName=eth0\nConstrained=sometimes\n", file: "test.conf",
            into: &configuration
        ).map(\.description)
        // The bad value leaves eth0's rule with nothing to set, so it is dropped.
        #expect(configuration.rules == [InterfaceRule(pattern: "wlan*", constrained: true)])
        #expect(errors == ["test.conf:6: [Interface] Constrained: invalid boolean 'sometimes'; expected yes, no, true, false, on, off, 1 or 0"])
        let classifier = Classifier(rules: configuration.rules)
        #expect(classifier.classify(Self.ethernet(3, "wlan0"), device: DeviceFacts()).isConstrained)
        #expect(!classifier.classify(Self.ethernet(4, "eth0"), device: DeviceFacts()).isConstrained)
        #expect(configuration.mergedText.contains("Constrained=yes"), "\(configuration.mergedText)")
    }

    /// Without inotify, resolv.conf's changes are found by comparing its identity whenever the
    /// kernel wakes the core: a rename over it and a rewrite in place are seen, a look with no
    /// change is not.
    @Test func withoutInotifyAChangeIsSeenByIdentityAndNoChangeIsNot() throws {
        let directory = try makeScratchDirectory("nsidentity")
        defer { removeTree(directory) }
        let path = try Self.file(directory, "resolv.conf", "nameserver 192.0.2.53\n")
        let watch = NameserverWatch(path: path, upstreamPath: nil)
        _ = watch.changedSinceLastLook()
        #expect(!watch.changedSinceLastLook(), "nothing changed")
        _ = try Self.file(directory, "resolv.conf.new", "nameserver 198.51.100.53\n")
        #expect(rename(directory + "/resolv.conf.new", path) == 0)
        #expect(watch.changedSinceLastLook(), "renamed over")
        #expect(!watch.changedSinceLastLook())
        _ = try Self.file(directory, "resolv.conf", "nameserver 203.0.113.53\nnameserver 203.0.113.54\n")
        #expect(watch.changedSinceLastLook(), "rewritten in place")
        #expect(unlink(path) == 0)
        #expect(watch.changedSinceLastLook(), "removed")
        #expect(!watch.changedSinceLastLook())
    }
}
