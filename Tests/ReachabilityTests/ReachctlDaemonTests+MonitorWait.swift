import Foundation
import Testing
@testable import Reachability

/// `reachctl monitor` and `reachctl wait`, through reachd and in-process: the same suite as
/// `ReachctlDaemonTests`, its scenarios and modes.
extension ReachctlDaemonTests {
    // MARK: monitor

    @Test func monitorThroughReachdPrintsALinePerCarrierFlap() async throws {
        let ns = try Self.scenario()
        let far = try Self.farPeer(of: ns)
        let fixture = try ReachdFixture(namespace: ns)
        let monitor = try ReachctlProcess(["monitor", "--json", "--bus-address", fixture.address])
        defer { _ = monitor.terminate() }
        var lines = try await monitor.waitForLines(1)
        let first = try Self.object(lines[0])
        #expect(first["state"] as? String == "online")
        #expect(first["interfaces"] != nil, "the first line is the full snapshot")

        for round in 0..<3 {
            try far.ip("link set up0p down")
            lines = try await monitor.waitForLines(2 + 2 * round)
            try far.ip("link set up0p up")
            lines = try await monitor.waitForLines(3 + 2 * round)
        }
        try await Task.sleep(for: .milliseconds(300))
        lines = monitor.output
        #expect(lines.count == 7, "one line per carrier change, no noise: \(lines)")
        let changes = try lines.dropFirst().map(Self.object)
        #expect(changes.map { $0["state"] as? String } == ["offline", "online", "offline", "online", "offline", "online"])
        let generations = changes.compactMap { $0["generation"] as? Int }
        #expect(generations == generations.sorted() && Set(generations).count == 6, "generations increase: \(generations)")
        #expect(changes[0]["flags"] as? [String] == ["connectionRequired"])
        #expect((changes[0]["changedInterfaces"] as? [[String: Any]])?.map { $0["name"] as? String } == ["up0"])
        #expect(monitor.terminate() == 0)
    }

    @Test(arguments: Mode.allCases)
    func monitorTargetsPrintsALineWhenATargetChanges(_ mode: Mode) async throws {
        let ns = try Self.scenario()
        let far = try Self.farPeer(of: ns)
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let monitor = try ReachctlProcess(["monitor", "--json", "192.0.2.1", "198.51.100.7"] + Self.source(mode, ns, fixture))
        defer { _ = monitor.terminate() }

        // The first answer of each target.
        var lines = try await monitor.waitForLines(2)
        var answers = try lines.map(Self.object)
        #expect(Set(answers.compactMap { $0["target"] as? String }) == ["192.0.2.1", "198.51.100.7"])
        #expect(answers.allSatisfy { ($0["flags"] as? [String])?.contains("reachable") == true })
        #expect(answers.allSatisfy { $0["interface"] as? String == "up0" && $0["reason"] as? String == "" })
        #expect(answers.allSatisfy { $0["generation"] is Int })
        // The answer's four keys, its generation, and when it was written (UTC, milliseconds).
        #expect(Array(answers[0].keys).count == 6)
        #expect((answers[0]["timestamp"] as? String)?.wholeMatch(of: #/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/#) != nil, "\(answers[0])")

        // Carrier lost: both change.
        try far.ip("link set up0p down")
        lines = try await monitor.waitForLines(4)
        answers = try lines.dropFirst(2).map(Self.object)
        #expect(answers.allSatisfy { $0["reason"] as? String == "linkDown" }, "\(lines)")

        // Back: both change again.
        try far.ip("link set up0p up")
        lines = try await monitor.waitForLines(6)

        // No default route: only the far target changes; the on-link one stays as it was.
        try ns.ip("route del default")
        lines = try await monitor.waitForLines(7)
        let last = try Self.object(lines[6])
        #expect(last["target"] as? String == "198.51.100.7")
        #expect(last["reason"] as? String == "noRoute")

        // A change that leaves both answers alone prints nothing.
        try ns.ip("link set dk0 up")
        try await Task.sleep(for: .milliseconds(300))
        #expect(monitor.output.count == 7, "\(monitor.output)")

        // Text lines say the same.
        let text = try ReachctlProcess(["monitor", "198.51.100.7"] + Self.source(mode, ns, fixture))
        defer { _ = text.terminate() }
        let textLines = try await text.waitForLines(1)
        #expect(textLines[0].hasSuffix("] 198.51.100.7: not reachable: noRoute"), "\(textLines)")
        // Stamped with the local time, as `ip -ts monitor` stamps its lines.
        #expect(textLines[0].firstMatch(of: #/^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d\] /#) != nil, "\(textLines)")
        // --verbose adds the generation and the flags, none when empty, as status writes them.
        let verbose = try ReachctlProcess(["monitor", "--verbose", "198.51.100.7"] + Self.source(mode, ns, fixture))
        defer { _ = verbose.terminate() }
        let verboseLines = try await verbose.waitForLines(1)
        #expect(verboseLines[0].contains("] gen "), "\(verboseLines)")
        #expect(verboseLines[0].hasSuffix("198.51.100.7: not reachable [none]: noRoute"), "\(verboseLines)")
    }

    @Test(arguments: Mode.allCases)
    func monitorRefusesAnInvalidTarget(_ mode: Mode) throws {
        let ns = try Self.scenario()
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let result = try reachctl(["monitor", "192.0.2.999"] + Self.source(mode, ns, fixture))
        #expect(result.status == 255)
        #expect(result.stderr == "reachctl: invalid target: '192.0.2.999' is not an IPv4 or IPv6 address\n")
    }

    // MARK: wait

    @Test(arguments: Mode.allCases)
    func waitReturnsAtOnceWhenTheConditionHolds(_ mode: Mode) throws {
        let ns = try Self.scenario()
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let source = Self.source(mode, ns, fixture)
        var (result, elapsed) = try reachctl(["wait", "--timeout", "20s"] + source, environment: [:])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "online via up0 (virtual)\n")
        #expect(result.stderr == "")
        #expect(elapsed < .seconds(2), "\(elapsed)")

        (result, elapsed) = try reachctl(["wait", "--json", "--target", "192.0.2.1"] + source, environment: [:])
        #expect(result.status == 0)
        let json = try result.json()
        #expect(json["satisfied"] as? Bool == true)
        #expect(json["state"] as? String == "online")
        #expect((json["check"] as? [String: Any])?["interface"] as? String == "up0")
        #expect(elapsed < .seconds(2))

        // A bare veth is not wired: --kind wired never holds here, and says what is missing.
        (result, elapsed) = try reachctl(["wait", "--kind", "wired", "--timeout", "300ms"] + source, environment: [:])
        #expect(result.status == 1)
        #expect(result.stderr == "reachctl: gave up after 300ms waiting for a usable wired link; saw: no usable wired link; online via up0 (virtual)\n")
        #expect(elapsed < .milliseconds(1300))

        (result, _) = try reachctl(["wait", "--target", "bad..name"] + source, environment: [:])
        #expect(result.status == 255)
        #expect(result.stderr.hasPrefix("reachctl: invalid target: "))
    }

    @Test(arguments: Mode.allCases)
    func waitReturnsWhenTheRouteComesUpLater(_ mode: Mode) async throws {
        let ns = try Self.scenario()
        try ns.ip("route del default")
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let source = Self.source(mode, ns, fixture)
        // A long timeout: this test is about returning when the route appears, and on a loaded
        // 2-core machine the test task itself may be woken seconds late.
        let online = try BackgroundReachctl(["wait", "--timeout", "120s"] + source)
        let target = try BackgroundReachctl(["wait", "--timeout", "120s", "--json", "--target", "198.51.100.7"] + source)
        try await Task.sleep(for: .milliseconds(500))
        #expect(online.exitTime == nil && target.exitTime == nil, "nothing holds yet")
        try ns.ip("route add default via 192.0.2.1 dev up0 metric 100")
        let added = ContinuousClock.now

        let (onlineResult, onlineEnded) = try await online.finish()
        #expect(onlineResult.status == 0, "\(onlineResult.stderr)")
        #expect(onlineResult.stdout == "online via up0 (virtual)\n")
        #expect(onlineEnded - added < .seconds(1), "returns as the route appears: \(onlineEnded - added)")
        let (targetResult, targetEnded) = try await target.finish()
        #expect(targetResult.status == 0, "\(targetResult.stderr)")
        #expect(try targetResult.json()["satisfied"] as? Bool == true)
        #expect(((try targetResult.json()["check"]) as? [String: Any])?["flags"] as? [String] == ["reachable"])
        #expect(targetEnded - added < .seconds(1), "\(targetEnded - added)")
    }

    @Test(arguments: Mode.allCases)
    func waitGivesUpAtTheTimeout(_ mode: Mode) async throws {
        let ns = try Self.scenario()
        try ns.ip("route del default")
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let source = Self.source(mode, ns, fixture)
        let (result, elapsed) = try reachctl(["wait", "--timeout", "1s", "--json"] + source, environment: [:])
        #expect(result.status == 1)
        #expect(try result.json()["satisfied"] as? Bool == false)
        #expect(try result.json()["state"] as? String == "local")
        #expect(elapsed >= .seconds(1) && elapsed < .seconds(2), "ends at the timeout, not after: \(elapsed)")

        // A host name whose DNS never answers cannot hold it past the deadline either.
        let (host, hostElapsed) = try reachctl(["wait", "--timeout", "700ms", "--target", "unanswered.example"] + source, environment: [:])
        #expect(host.status == 1)
        #expect(host.stderr.hasPrefix("reachctl: gave up after 700ms waiting for unanswered.example to be reachable; saw: "), "\(host.stderr)")
        #expect(hostElapsed < .milliseconds(1700), "\(hostElapsed)")

        // --from-config: [WaitOnline] gives the timeout and the condition (reachd-wait-online.service),
        // and the one line on stderr says both what was waited for and what was seen.
        let directory = try makeScratchDirectory("reachd-waitonline")
        defer { removeTree(directory) }
        try "[WaitOnline]\nTimeout=600ms\nKind=wired\n".write(toFile: directory + "/reachd.conf", atomically: true, encoding: .utf8)
        let configSource = mode == .daemon ? ["--bus-address", fixture!.address] : source
        let (configured, configuredElapsed) = try reachctl(
            ["wait", "--from-config", "--config-dir", directory] + configSource, environment: [:])
        #expect(configured.status == 1)
        #expect(configured.stderr == "reachctl: gave up after 600ms waiting for a usable wired link; saw: no usable wired link; local\n",
                "\(configured.stderr)")
        #expect(configuredElapsed >= .milliseconds(600) && configuredElapsed < .milliseconds(1600), "\(configuredElapsed)")
        // An option given too wins over the file.
        let (overridden, _) = try reachctl(
            ["wait", "--from-config", "--config-dir", directory, "--timeout", "200ms", "--json"] + configSource, environment: [:])
        #expect(overridden.status == 1)
        #expect(try overridden.json()["satisfied"] as? Bool == false)
        // A bad file is refused by FILE:LINE, as reachd refuses it.
        try "[WaitOnline]\nKind=bridge\n".write(toFile: directory + "/reachd.conf", atomically: true, encoding: .utf8)
        let (refused, _) = try reachctl(["wait", "--from-config", "--config-dir", directory] + configSource, environment: [:])
        #expect(refused.status == 255 && refused.stderr.contains("reachd.conf:2: [WaitOnline] Kind: 'bridge'"), "\(refused.stderr)")
    }
}
