import Foundation
import Testing
@testable import Reachability

/// reachctl against a real reachd on a private bus (`--bus-address`), and its in-process fallback.
@Suite(rootOnly)
struct ReachctlDaemonTests {
    /// Where the answers come from: reachd on the fixture's bus, or the library in-process.
    enum Mode: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case daemon, inProcess
        var testDescription: String { rawValue }
    }

    /// A namespace online through `up0` (veth; its peer `up0p` alongside), with IPv6 and a bridge.
    static func scenario(_ tag: String = #function) throws -> TestNamespace {
        let ns = try TestNamespace(tag)
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        try ns.ip("-6 addr add 2001:db8::2/64 dev up0 nodad")
        try ns.ip("link add dk0 type bridge")
        try ns.ip("addr add 172.17.0.1/16 dev dk0")
        return ns
    }

    /// Moves `up0p` into a namespace of its own, so flapping it changes nothing in `ns` but
    /// up0's carrier.
    static func farPeer(of ns: TestNamespace, _ tag: String = #function) throws -> TestNamespace {
        let far = try TestNamespace("far" + tag)
        try ns.ip("link set up0p netns \(far.name)")
        try far.ip("link set up0p up")
        return far
    }

    static func source(_ mode: Mode, _ ns: TestNamespace, _ fixture: ReachdFixture?) -> [String] {
        switch mode {
        case .daemon: ["--bus-address", fixture!.address]
        case .inProcess: ["--netns", ns.name]
        }
    }

    static func object(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    /// A JSON object without the keys given (what legitimately differs between two sources).
    static func comparable(_ json: [String: Any], without keys: Set<String>) -> NSDictionary {
        NSDictionary(dictionary: json.filter { !keys.contains($0.key) })
    }

    // MARK: same answers either way

    @Test func statusInterfacesAndChecksAreTheSameWithAndWithoutReachd() async throws {
        let ns = try Self.scenario()
        // up0's link-local address is tentative until DAD ends (about a second): the source the
        // kernel picks for fe80::1%up0 changes then, and the two answers would be asked on
        // either side of it.
        // So is up0p's, its only address link-local: such a link is ready once that address is
        // usable (issue 42), and the two sources would be asked on either side of its DAD too.
        try await eventually("addresses still tentative: \((try? ns.ip("-6 addr show tentative")) ?? "?")",
                             every: .milliseconds(50)) {
            try ns.ip("-6 addr show tentative").isEmpty
        }
        let fixture = try ReachdFixture(namespace: ns)
        let viaDaemon = ["--bus-address", fixture.address]
        let inProcess = ["--netns", ns.name]

        for command in [["status", "--json"], ["interfaces", "--json"]] {
            let daemon = try reachctl(command + viaDaemon)
            let local = try reachctl(command + inProcess)
            #expect(daemon.status == 0 && local.status == 0, "\(command): \(daemon.stderr) \(local.stderr)")
            #expect(daemon.stderr == "", "no fallback notice when reachd answers: \(daemon.stderr)")
            #expect(local.stderr == "")
            // Generations count each source's own history; everything else is the same truth.
            #expect(
                Self.comparable(try daemon.json(), without: ["generation"])
                    == Self.comparable(try local.json(), without: ["generation"]),
                "\(command)\n daemon: \(daemon.stdout)\n in-process: \(local.stdout)")
        }
        let text = try reachctl(["status"] + viaDaemon)
        #expect(text.stdout.hasPrefix("State: online via up0 (virtual)\nAvailable: up0\n"), "\(text.stdout)")
        let verbose = try reachctl(["status", "--verbose"] + viaDaemon)
        #expect(verbose.stdout.hasPrefix("State: online via up0 (virtual)\nFlags: reachable\nAvailable: up0\n"), "\(verbose.stdout)")

        // Every field, gateway, source and message included: the D-Bus replies carry them too.
        let targets = [
            "192.0.2.1", "198.51.100.7", "0.0.0.0", "::", "127.0.0.1", "192.0.2.2", "2001:db8::1",
            "2001:db8:ffff::1", "fe80::1%up0", "::ffff:198.51.100.7", "localhost",
        ]
        for target in targets {
            let daemon = try reachctl(["check", "--json", target] + viaDaemon)
            let local = try reachctl(["check", "--json", target] + inProcess)
            #expect(daemon.status == local.status, "\(target): \(daemon.stdout) \(daemon.stderr) / \(local.stdout)")
            #expect(daemon.stderr == "")
            #expect(
                Self.comparable(try daemon.json(), without: []) == Self.comparable(try local.json(), without: []),
                "\(target): daemon \(daemon.stdout) in-process \(local.stdout)")
        }
        #expect(try reachctl(["check", "--json", "2001:db8:ffff::1"] + viaDaemon).json()["reason"] as? String == "noRoute")

        // An invalid target: the same message and exit status 255 either way, text and JSON.
        for target in ["192.0.2.999", "fe80::1%nosuchlink", "bad..name"] {
            let daemon = try reachctl(["check", target] + viaDaemon)
            let local = try reachctl(["check", target] + inProcess)
            #expect(daemon.status == 255 && local.status == 255)
            #expect(daemon.stderr == local.stderr, "\(target)")
            #expect(daemon.stderr.hasPrefix("reachctl: invalid target: "))
            let json = try reachctl(["check", "--json", target] + viaDaemon)
            #expect(json.status == 255)
            #expect(try json.json()["reason"] as? String == "invalidTarget")
            #expect(try json.json()["message"] as? String == (try reachctl(["check", "--json", target] + inProcess).json()["message"] as? String))
        }
    }

    @Test func theEnvironmentNamesTheBusToo() throws {
        let ns = try Self.scenario()
        let fixture = try ReachdFixture(namespace: ns)
        let (result, _) = try reachctl(["status", "--json", "--daemon"], environment: ["REACHCTL_BUS_ADDRESS": fixture.address])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "")
        #expect(try result.json()["primaryInterface"] as? String == "up0")
    }

    // MARK: without reachd

    @Test func daemonRequiredFailsWithTheReasonWhenNoReachdAnswers() throws {
        let missing = "unix:path=/nonexistent-\(getpid())/bus"
        let noBus = try reachctl(["status", "--daemon", "--bus-address", missing])
        #expect(noBus.status == 255)
        #expect(noBus.stdout == "")
        #expect(
            noBus.stderr == "reachctl: reachd is not available: cannot connect to the bus at \(missing): No such file or directory\n")

        // A bus without reachd on it.
        let fixture = try ReachdFixture(namespace: nil)
        for command in [["status"], ["interfaces"], ["check", "192.0.2.1"], ["monitor"], ["wait", "--timeout", "5s"]] {
            let (result, elapsed) = try reachctl(command + ["--daemon", "--bus-address", fixture.address], environment: [:])
            #expect(result.status == 255, "\(command)")
            #expect(
                result.stderr == "reachctl: reachd is not available: org.reachd.Reachability1 is not on the bus at \(fixture.address)\n",
                "\(command)")
            #expect(elapsed < .seconds(2), "\(command) fails at once")
        }

        // --netns is in-process by definition: asking for the daemon too is a usage error.
        let ns = try TestNamespace()
        let both = try reachctl(["status", "--daemon", "--netns", ns.name])
        #expect(both.status == 255)
        #expect(both.stderr.contains("--netns"))
    }

    @Test func fallbackAnswersInProcessAndSaysSoOnce() throws {
        // No bus at all.
        let missing = "unix:path=/nonexistent-\(getpid())/bus"
        let status = try reachctl(["status", "--json", "--bus-address", missing])
        #expect(status.stderr == "reachctl: reachd is not running (cannot connect to the bus at \(missing): No such file or directory); answering in-process\n")
        #expect(status.status == 0 || status.status == 1)
        #expect(try status.json()["state"] != nil, "the answer still comes, in-process")

        // A bus without reachd: the same answers as in-process, with the notice.
        let fixture = try ReachdFixture(namespace: nil)
        let notice = "reachctl: reachd is not running (org.reachd.Reachability1 is not on the bus at \(fixture.address)); answering in-process\n"
        let check = try reachctl(["check", "--json", "127.0.0.1", "--bus-address", fixture.address])
        #expect(check.status == 0)
        #expect(check.stderr == notice)
        #expect(try check.json()["interface"] as? String == "lo")
        let (viaEnvironment, _) = try reachctl(["interfaces"], environment: ["REACHCTL_BUS_ADDRESS": fixture.address])
        #expect(viaEnvironment.stderr == notice)
        #expect(viaEnvironment.stdout.contains("loopback"))

        // --netns never asks reachd, so it has nothing to say about it.
        let ns = try Self.scenario()
        let quiet = try reachctl(["status", "--netns", ns.name])
        #expect(quiet.stderr == "")
        #expect(quiet.status == 0)
    }

    @Test func aReachdThatDoesNotAnswerCostsOnlyTheProbeTimeout() throws {
        let ns = try Self.scenario()
        let fixture = try ReachdFixture(namespace: ns)
        fixture.freeze(true)
        defer { fixture.freeze(false) }
        let (result, elapsed) = try reachctl(["status", "--json", "--bus-address", fixture.address], environment: [:])
        #expect(result.stderr == "reachctl: reachd is not running (no answer on the bus at \(fixture.address) within 500ms); answering in-process\n")
        #expect(elapsed < .milliseconds(1500), "\(elapsed)")
        #expect(try result.json()["state"] != nil)
        let (required, _) = try reachctl(["status", "--daemon", "--bus-address", fixture.address], environment: [:])
        #expect(required.status == 255)
        #expect(required.stderr.hasPrefix("reachctl: reachd is not available: no answer on the bus at"))
    }

    // MARK: the client library

    @Test func clientReadsWhatTheMonitorKnowsAndHearsChanges() async throws {
        let ns = try Self.scenario()
        let far = try Self.farPeer(of: ns)
        let fixture = try ReachdFixture(namespace: ns)
        let client = try ReachabilityClient(bus: .address(fixture.address))
        // The resolv.conf reachd reads too (supportsDNS).
        let monitor = try ns.monitor(sysfsRoot: "/sys", resolvConf: HostResolver.systemResolvConfPath)
        let snapshot = try client.snapshot()
        #expect(snapshot.host == monitor.snapshot.host)
        #expect(snapshot.interfaces == monitor.snapshot.interfaces)

        let invalid = try client.checkAddress("192.0.2.999")
        #expect(invalid.reason == .invalidTarget)
        #expect(invalid.message == "'192.0.2.999' is not an IPv4 or IPv6 address")
        let direct = try client.check("192.0.2.1")
        #expect(direct.flags == [.reachable, .isDirect])
        #expect(direct.interface == "up0")
        #expect(direct.addresses == [IPAddress("192.0.2.1")!])
        let host = try client.checkHost("localhost", timeout: .seconds(2))
        #expect(host.isReachable)
        #expect(host.interface == "lo")

        let path = try client.watch("198.51.100.7")
        #expect(path.hasPrefix(ReachdContract.watchPathNamespace + "/"))
        #expect(client.answer(ofWatch: path)?.flags == [.reachable])
        try far.ip("link set up0p down")
        var changed: UInt64?
        var watched: CheckResult?
        let deadline = ContinuousClock.now + .seconds(5)
        while changed == nil || watched == nil, ContinuousClock.now < deadline {
            for event in try client.nextEvents(timeout: .milliseconds(100)) {
                switch event {
                case let .changed(flags, primary, generation):
                    #expect(flags == [.connectionRequired])
                    #expect(primary == "up0")
                    changed = generation
                case let .watch(eventPath, result):
                    #expect(eventPath == path)
                    watched = result
                case .interfacesChanged, .hostChangeDescribed, .path, .change:
                    break
                case .serviceLost, .serviceReturned:
                    Issue.record("reachd is still there")
                }
            }
        }
        #expect(changed == snapshot.generation + 1)
        #expect(watched?.reason == .linkDown)
        #expect(watched?.target == "198.51.100.7")
        try client.unwatch(path)

        // reachd going away is an event, not silence.
        fixture.stopDaemon()
        var lost = false
        let later = ContinuousClock.now + .seconds(5)
        while !lost, ContinuousClock.now < later {
            lost = try client.nextEvents(timeout: .milliseconds(100)).contains(.serviceLost)
        }
        #expect(lost)
    }
}
