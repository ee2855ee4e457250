import Foundation
import Testing
@testable import Reachability

/// issue 42: per-link questions, as networkctl has them: `reachctl status IFACE...` and
/// `reachctl interfaces IFACE...` (names and shell patterns), `state` per interface in JSON,
/// and a reason on every monitor line that is not online. From reachd and in-process.
@Suite(rootOnly)
struct PerLinkTests {
    typealias Mode = ReachctlDaemonTests.Mode

    /// ReachctlDaemonTests' scenario: up0 online (its peer up0p beside it, up without an address:
    /// not ready), the bridge dk0 with an address, never set up (down). up0p's own fe80:: address
    /// goes first: once its DAD ends a link-local address is usable and the link ready (issue
    /// 42), so the link was not ready only while the test ran within DAD's second or so (a loaded
    /// main pass found it ready).
    static func scenario(_ tag: String = #function) throws -> TestNamespace {
        let ns = try ReachctlDaemonTests.scenario(tag)
        try ns.ip("-6 addr flush dev up0p scope link")
        return ns
    }

    static func names(_ result: CommandResult) throws -> [String] {
        (try result.json()["interfaces"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    }

    @Test(arguments: Mode.allCases)
    func statusOfNamedLinks(_ mode: Mode) async throws {
        let ns = try Self.scenario()
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let source = ReachctlDaemonTests.source(mode, ns, fixture)

        let up = try reachctl(["status", "up0"] + source)
        #expect(up.status == 0, "\(up)")
        #expect(up.stdout.hasPrefix("up0 (virtual): ready\nAddresses: 192.0.2.2/24, 2001:db8::2/64"), "\(up.stdout)")
        #expect(up.stdout.contains("\nDefault route: primary (the host is online via up0)\n"), "\(up.stdout)")

        // Two links, one not ready: both shown, exit 1.
        let both = try reachctl(["status", "up0", "dk0"] + source)
        #expect(both.status == 1, "\(both)")
        #expect(both.stdout.contains("\n\ndk0 (bridge): down\nAddresses: 172.17.0.1/16\nDefault route: none\n"), "\(both.stdout)")

        let missing = try reachctl(["status", "nosuch0"] + source)
        #expect(missing.status == 1 && missing.stdout == "", "\(missing)")
        #expect(missing.stderr == "reachctl: no interface matches 'nosuch0'\n", "\(missing.stderr)")

        // A pattern, in JSON: up0p is up without an address, so not every link is ready.
        let json = try reachctl(["status", "up*", "--json"] + source)
        #expect(json.status == 1, "\(json)")
        #expect(try Self.names(json) == ["up0p", "up0"])
        #expect((try json.json()["interfaces"] as? [[String: Any]])?.map { $0["state"] as? String } == ["not ready", "ready"])
        #expect(try reachctl(["status", "up?", "--json"] + source).status == 0)

        let mixed = try reachctl(["status", "up0", "--kind", "wired"] + source)
        #expect(mixed.status == 255 && mixed.stderr.contains("by name or by kind"), "\(mixed)")
    }

    @Test(arguments: Mode.allCases)
    func interfacesTakeNamesAndPatterns(_ mode: Mode) async throws {
        let ns = try Self.scenario()
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let source = ReachctlDaemonTests.source(mode, ns, fixture)

        let all = try reachctl(["interfaces", "--json"] + source)
        let states = Dictionary(uniqueKeysWithValues: (try all.json()["interfaces"] as? [[String: Any]] ?? []).map {
            ($0["name"] as? String ?? "", $0["state"] as? String ?? "")
        })
        #expect(states["up0"] == "ready" && states["up0p"] == "not ready" && states["dk0"] == "down" && states["lo"] == "ready", "\(states)")
        // The JSON state is the text's STATE column.
        let table = try reachctl(["interfaces", "--no-legend"] + source)
        for line in table.stdout.split(separator: "\n") where line.hasPrefix(" ") && line.split(separator: " ").count >= 4 {
            let cells = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let state = states[cells[1]] else { continue }
            #expect(line.contains("  \(state)  "), "\(line) has the JSON's \(state)")
        }

        let pattern = try reachctl(["interfaces", "up*", "--no-legend"] + source)
        #expect(pattern.status == 0, "\(pattern)")
        // Typed step by step: as one expression it took the type checker 17 s.
        let named: [String] = pattern.stdout.split(separator: "\n").compactMap { line -> String? in
            line.split(separator: " ").dropFirst().first.map(String.init)
        }
        #expect(named.filter { !$0.contains(":") && !$0.contains("/") } == ["up0p", "up0"], "\(pattern.stdout)")
        let two = try reachctl(["interfaces", "lo", "dk?", "--json"] + source)
        #expect(try Self.names(two) == ["lo", "dk0"], "\(two.stdout)")
        let none = try reachctl(["interfaces", "lo", "zz*"] + source)
        #expect(none.status == 1 && none.stderr == "reachctl: no interface matches 'zz*'\n", "\(none)")
        #expect(none.stdout.contains("  lo  "), "what matched is listed: \(none.stdout)")
    }

    /// The default routes go: the host turns local, and the monitor line says why.
    @Test(arguments: Mode.allCases)
    func monitorLinesThatAreNotOnlineSayWhy(_ mode: Mode) async throws {
        let ns = try ReachctlDaemonTests.scenario()
        try ns.ip("-6 route add default via 2001:db8::1 dev up0")
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let monitor = try ReachctlProcess(["monitor"] + ReachctlDaemonTests.source(mode, ns, fixture))
        defer { _ = monitor.terminate() }
        _ = try await monitor.waitForLines(1)
        try ns.ip("route del default")
        try ns.ip("-6 route del default")
        try await eventually("a local line: \(monitor.output)") { monitor.output.contains { $0.contains("] local") } }
        for line in monitor.output where !line.contains("] online") {
            #expect(line.contains("] local: noRoute") || line.contains("] offline: "), "\(line)")
        }
    }
}
