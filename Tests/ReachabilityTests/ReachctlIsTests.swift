import Foundation
import Testing
@testable import Reachability

/// `reachctl is CONDITION...` against the real kernel in private namespaces, answered by a real
/// reachd on a private bus and in-process (`--netns` with the same `--config-dir`): the exit
/// status of every condition where it holds and where it does not, and the line that says why.
@Suite(rootOnly)
struct ReachctlIsTests {
    /// A namespace and the reachd.conf that shapes it, with the conditions that hold there and
    /// those that do not (each with words its reason must contain).
    struct Scenario: CustomTestStringConvertible, Sendable {
        var name: String
        /// reachd.conf for both sources.
        var config: String
        /// Builds the namespace's links and routes.
        var build: @Sendable (TestNamespace) throws -> Void
        var holding: [String]
        var failing: [String: String]
        /// reachd's State once it has seen the namespace.
        var state = "online"
        var testDescription: String { name }
    }

    static let wiredUplink: @Sendable (TestNamespace) throws -> Void = { ns in
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
    }

    static let scenarios: [Scenario] = [
        Scenario(
            name: "wired", config: "[Interface]\nName=up0\nKind=wired\n", build: wiredUplink,
            holding: ["online", "internet", "unmetered", "no-portal", "not-stalled", "via-wired", "via-ethernet"],
            failing: ["via-wifi": "the host's path is via up0 (wired)", "via-cellular": "up0 (wired)", "via-vpn": "up0 (wired)"]),
        Scenario(
            name: "metered by configuration", config: "[Interface]\nName=up0\nKind=wired\nMetered=yes\n", build: wiredUplink,
            holding: ["online", "internet", "via-wired", "no-portal"],
            failing: ["unmetered": "the host's path via up0 (wired) is metered"]),
        Scenario(
            name: "cellular", config: "[Interface]\nName=up0\nKind=cellular\n", build: wiredUplink,
            holding: ["online", "via-cellular", "not-stalled"],
            failing: ["unmetered": "up0 (cellular) is metered", "via-wired": "the host's path is via up0 (cellular)"]),
        Scenario(
            name: "vpn", config: "[Interface]\nName=up0\nKind=vpn\n", build: wiredUplink,
            holding: ["online", "via-vpn", "unmetered"],
            failing: ["via-wifi": "up0 (vpn)"]),
        Scenario(
            // No rule: a veth is what the kernel says it is.
            name: "virtual", config: "", build: wiredUplink,
            holding: ["online", "via-virtual", "unmetered"],
            failing: ["via-wired": "the host's path is via up0 (virtual)", "via-other": "up0 (virtual)"]),
        Scenario(
            name: "other", config: "[Interface]\nName=up0\nKind=other\n", build: wiredUplink,
            holding: ["via-other"],
            failing: ["via-virtual": "the host's path is via up0 (other)", "via-bridge": "up0 (other)"]),
        Scenario(
            // The default route through a bridge (a host whose uplink is bridged for its VMs).
            name: "bridge", config: "",
            build: { ns in
                try ns.ip("link add br0 type bridge")
                try ns.ip("addr add 192.0.2.2/24 dev br0")
                try ns.ip("link add bp0 type veth peer name bp0p")
                try ns.ip("link set bp0 master br0")
                try ns.ip("link set bp0p up")
                try ns.ip("link set bp0 up")
                try ns.ip("link set br0 up")
                try ns.waitForCarrier("br0")
                try ns.ip("route add default via 192.0.2.1 dev br0")
            },
            holding: ["online", "via-bridge"],
            failing: ["via-wired": "the host's path is via br0 (bridge)"]),
        Scenario(
            // A ready link, no default route: local, not online.
            name: "no default route", config: "[Interface]\nName=up0\nKind=wifi\n",
            build: { ns in
                try ns.ip("link add up0 type veth peer name up0p")
                try ns.ip("addr add 192.0.2.2/24 dev up0")
                try ns.ip("link set up0p up")
                try ns.ip("link set up0 up")
                try ns.waitForCarrier("up0")
            },
            holding: ["no-portal", "not-stalled"],
            failing: [
                "online": "the host is local (noRoute)", "internet": "the host is local", "unmetered": "the host is local",
                "via-wifi": "the host is local",
            ],
            state: "local"),
    ]

    /// Where an answer comes from: reachd on the harness's bus; in-process in the namespace with
    /// the harness's configuration (what reachd reads) through the parser (`--netns`); and
    /// in-process without the parser, reachctl run inside the namespace as a unit there runs it,
    /// with no reachd on its bus (`IsCommand.inProcessStatus`), which says so first.
    struct Source: Sendable {
        var name: String
        var arguments: [String]
        /// Run inside this namespace (`ip netns exec`); nil: in the test's own.
        var namespace: String?
    }

    static func sources(_ ns: TestNamespace, _ harness: DaemonHarness) -> [Source] {
        [Source(name: "reachd", arguments: ["--daemon", "--bus-address", harness.address]),
         Source(name: "in-process", arguments: ["--netns", ns.name, "--config-dir", harness.configDirectory]),
         Source(
            name: "in-process, quick",
            arguments: ["--config-dir", harness.configDirectory, "--bus-address", "unix:path=\(harness.configDirectory)/no-bus"],
            namespace: ns.name)]
    }

    /// `reachctl is ...` from `source`. Inside a namespace without reachd, the one line that says
    /// reachd is not running comes first on standard error, and is taken off it here.
    static func run(_ arguments: [String], _ source: Source) throws -> CommandResult {
        guard let namespace = source.namespace else { return try reachctl(arguments + source.arguments) }
        var result = try reachctl(inNamespace: namespace, arguments + source.arguments)
        let bus = source.arguments.last!
        let notice = "reachctl: reachd is not running (cannot connect to the bus at \(bus): No such file or directory); answering in-process"
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first.map(String.init) == notice, "\(result.stderr)")
        result.stderr = lines.dropFirst().joined(separator: "\n")
        return result
    }

    @Test(arguments: scenarios)
    func everyConditionsExitStatus(_ scenario: Scenario) async throws {
        let ns = try TestNamespace("is" + String(scenario.name.filter(\.isLetter).prefix(8)))
        try scenario.build(ns)
        let harness = try DaemonHarness(ns, config: scenario.config)
        defer { harness.shutdown() }
        try await harness.ready(state: scenario.state)
        for source in Self.sources(ns, harness) {
            for word in scenario.holding {
                let result = try Self.run(["is", word], source)
                #expect(result.status == 0, "\(scenario.name), \(source.name): \(word) holds: \(result.stderr)")
                #expect(result.stdout == "" && result.stderr == "", "\(scenario.name), \(source.name): \(word) says nothing")
            }
            for (word, why) in scenario.failing {
                let result = try Self.run(["is", word], source)
                #expect(result.status == 1, "\(scenario.name), \(source.name): \(word) does not hold: \(result.stderr)")
                #expect(result.stdout == "")
                #expect(result.stderr.hasPrefix("reachctl: \(HostCondition(word: word)!.word): no, "), "\(result.stderr)")
                #expect(result.stderr.contains(why), "\(scenario.name), \(source.name): \(word): \(result.stderr)")
                #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
                // --quiet: the status alone.
                let quiet = try Self.run(["is", "--quiet", word], source)
                #expect(quiet.status == 1 && quiet.stderr == "" && quiet.stdout == "")
            }
            // All of them: holds only when every one does; JSON names each verdict.
            let words = scenario.holding + scenario.failing.keys.sorted()
            let all = try Self.run(["is", "--json"] + words, source)
            #expect(all.status == (scenario.failing.isEmpty ? 0 : 1))
            // These lines take the quick path (IsCommand.quickStatus) but with --netns; --verbose
            // sends them through the full parser: the same answer either way.
            let full = try Self.run(["is", "--json", "--verbose"] + words, source)
            #expect(full.status == all.status && full.stdout == all.stdout, "\(source.name): \(full.stdout) vs \(all.stdout)")
            let json = try all.json()
            #expect(json["holds"] as? Bool == scenario.failing.isEmpty)
            let verdicts = try #require(json["conditions"] as? [[String: Any]])
            #expect(verdicts.count == words.count)
            for (word, verdict) in zip(words, verdicts) {
                #expect(verdict["condition"] as? String == HostCondition(word: word)!.word)
                #expect(verdict["holds"] as? Bool == scenario.holding.contains(word), "\(source.name): \(verdict)")
                #expect((verdict["why"] as? String)?.isEmpty == scenario.holding.contains(word), "\(source.name): \(verdict)")
            }
            if let first = scenario.holding.first {
                #expect(try Self.run(["is", first, first], source).status == 0)
            }
        }
    }

    @Test func aConditionFollowsTheNetworkThroughReachd() async throws {
        let ns = try TestNamespace()
        try Self.wiredUplink(ns)
        let harness = try DaemonHarness(ns, config: "[Interface]\nName=up0\nKind=wired\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = ["--daemon", "--bus-address", harness.address]
        #expect(try reachctl(["is", "online"] + daemon).status == 0)
        try ns.ip("route del default")
        try await eventually("reachd sees the default route gone", every: .milliseconds(20)) {
            try reachctl(["is", "online"] + daemon).status == 1
        }
    }

    /// A reachd that does not answer costs `is` one probe (500 ms), then the in-process answer,
    /// not a second probe in the parser's path: within a second in all.
    @Test func aReachdThatDoesNotAnswerCostsOneProbe() throws {
        let ns = try TestNamespace()
        try Self.wiredUplink(ns)
        let fixture = try ReachdFixture(namespace: ns)
        fixture.freeze(true)
        defer { fixture.freeze(false) }
        let (result, elapsed) = try reachctl(["is", "online", "--bus-address", fixture.address], environment: [:])
        let notice = "reachctl: reachd is not running (no answer on the bus at \(fixture.address) within 500ms); answering in-process\n"
        #expect(result.stderr.hasPrefix(notice), "\(result.stderr)")
        // The test's own namespace has no default route: not online, and said so.
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.dropFirst(notice.count).hasPrefix("reachctl: online: no, the host is "), "\(result.stderr)")
        #expect(elapsed < .seconds(1), "\(elapsed)")
    }

    @Test func withoutReachdDaemonIsAnError() throws {
        let fixture = try ReachdFixture(namespace: nil)
        let result = try reachctl(["is", "online", "--daemon", "--bus-address", fixture.address])
        #expect(result.status == 255, "no answer fails an ExecCondition= unit: \(result.stderr)")
        #expect(result.stderr.contains("reachd is not available"), "\(result.stderr)")
    }
}

/// `reachctl is`'s usage errors: exit status 255 (ExecCondition= fails the unit), the word named.
struct ReachctlIsCommandLineTests {
    @Test func unknownWordsAreNamedWithTheNearest() throws {
        for (word, suggestion) in [("unmeterd", "unmetered"), ("wifi", "via-wifi"), ("ethernet", "via-wired"), ("via-wfi", "via-wifi"),
                                   ("no-portl", "no-portal")] {
            let result = try reachctl(["is", "online", word, "--sysfs-root", "/"])
            #expect(result.status == 255, "\(word): \(result.stderr)")
            #expect(result.stdout == "")
            #expect(result.stderr.contains("unknown condition '\(word)'; did you mean '\(suggestion)'?"), "\(result.stderr)")
        }
        let far = try reachctl(["is", "frobnicate"])
        #expect(far.status == 255)
        #expect(far.stderr.contains("unknown condition 'frobnicate' (conditions: online, internet, unmetered, no-portal"), "\(far.stderr)")
        let none = try reachctl(["is"])
        #expect(none.status == 255)
        #expect(none.stderr.contains("Name at least one condition"), "\(none.stderr)")
        let both = try reachctl(["is", "--quiet", "--json", "online"])
        #expect(both.status == 255)
        let option = try reachctl(["is", "--frob", "online"])
        #expect(option.status == 255, "an unknown option fails the unit too: \(option.stderr)")
        // --config-dir applies only in-process: with --daemon the parser refuses it.
        let daemonConfig = try reachctl(["is", "online", "--daemon", "--config-dir", "/nonexistent"])
        #expect(daemonConfig.status == 255 && daemonConfig.stderr.contains("--config-dir '/nonexistent' applies only in-process"), "\(daemonConfig.stderr)")
        // Every other command exits the same 255, and `i` is still interfaces.
        #expect(try reachctl(["status", "--frob"]).status == 255)
        #expect(try reachctl(["i", "--json", "--sysfs-root", "/"]).json()["interfaces"] != nil)
    }
}

/// `reachctl is` without reachd and without the parser (`IsCommand.inProcessStatus`): what the
/// parser's path says, word for word, before any netlink socket is opened.
struct ReachctlIsWithoutReachdTests {
    /// A configuration reachd would refuse fails the unit (255) with reachd's errors, after the
    /// line that says reachd is not running; `--verbose` takes the parser's path: the same.
    @Test func aBadConfigurationFailsTheUnitWithItsErrors() throws {
        let directory = try makeScratchDirectory("is-config")
        defer { removeTree(directory) }
        try "[Interface]\nName=up0\nKind=spaceship\n".write(toFile: directory + "/reachd.conf", atomically: true, encoding: .utf8)
        let common = ["--config-dir", directory, "--bus-address", "unix:path=\(directory)/no-bus"]
        let quick = try reachctl(["is", "online"] + common)
        #expect(quick.status == 255, "\(quick.stderr)")
        #expect(quick.stdout == "")
        let lines = quick.stderr.split(separator: "\n")
        #expect(lines.first == "reachctl: reachd is not running (cannot connect to the bus at unix:path=\(directory)/no-bus: No such file or directory); answering in-process")
        #expect(lines.contains { $0.contains("reachd.conf:3") && $0.contains("spaceship") }, "\(quick.stderr)")
        #expect(lines.last == "reachctl: configuration rejected: 1 error(s)", "\(quick.stderr)")
        let full = try reachctl(["is", "online", "--verbose"] + common)
        #expect(full.status == quick.status && full.stdout == quick.stdout && full.stderr == quick.stderr, "\(full.stderr)")
        // --daemon: no in-process answer, so no configuration read; reachd's absence is the error.
        let daemon = try reachctl(["is", "online", "--daemon", "--bus-address", "unix:path=\(directory)/no-bus"])
        #expect(daemon.status == 255)
        #expect(daemon.stderr == "reachctl: reachd is not available: cannot connect to the bus at unix:path=\(directory)/no-bus: No such file or directory\n")
    }
}

/// `HostCondition`'s verdicts where a namespace cannot put the host: the probe's verdicts, a
/// stall, a VPN over Wi-Fi. The kernel cases are `ReachctlIsTests`'.
struct HostConditionTests {
    static func snapshot(_ host: HostStatus, _ interfaces: [(String, InterfaceKind)] = [("wlan0", .wifi)]) -> ReachabilitySnapshot {
        ReachabilitySnapshot(
            generation: 1, host: host,
            interfaces: interfaces.enumerated().map { InterfaceStatus(index: Int32($0.offset + 2), name: $0.element.0, kind: $0.element.1, flags: [], addresses: []) })
    }

    static func online(_ connectivity: ConnectivityStatus = .unknown, flags: ReachabilityFlags = [.reachable, .isWiFi], stalled: Bool = false) -> HostStatus {
        HostStatus(flags: flags.union(connectivity.flags), state: .online, primaryInterface: "wlan0", connectivity: connectivity, stalled: stalled)
    }

    @Test func internetIsTheProbesVerdictWhereThereIsOne() {
        #expect(HostCondition.internet.failure(in: Self.snapshot(Self.online(ConnectivityStatus(verdict: .full)))) == nil)
        #expect(HostCondition.internet.failure(in: Self.snapshot(Self.online())) == nil, "no probe: online and not stalled")
        #expect(HostCondition.internet.failure(in: Self.snapshot(Self.online(ConnectivityStatus(verdict: .limited, detail: "HTTP 503"))))
            == "the connectivity probe's verdict is limited (HTTP 503)")
        #expect(HostCondition.internet.failure(in: Self.snapshot(Self.online(ConnectivityStatus(verdict: .none)))) == "the connectivity probe's verdict is none")
        #expect(HostCondition.internet.failure(in: Self.snapshot(Self.online(stalled: true)))
            == "the host's traffic via wlan0 (wifi) stopped flowing (stalled)")
        #expect(HostCondition.notStalled.failure(in: Self.snapshot(Self.online(stalled: true))) != nil)
        #expect(HostCondition.notStalled.failure(in: Self.snapshot(Self.online())) == nil)
    }

    @Test func aPortalFailsNoPortalAndInternet() {
        let portal = Self.snapshot(Self.online(ConnectivityStatus(verdict: .portal, portal: "http://login.example/")))
        #expect(HostCondition.noPortal.failure(in: portal) == "the connectivity probe met a captive portal (redirected to http://login.example/)")
        #expect(HostCondition.internet.failure(in: portal) == "the connectivity probe's verdict is portal")
        #expect(HostCondition.online.failure(in: portal) == nil)
        #expect(HostCondition.noPortal.failure(in: Self.snapshot(HostStatus())) == nil, "nothing known of portals offline")
    }

    /// The network's portal API saying captive fails `internet` whatever the probe says: reachd
    /// sends no probe while the API answers, so its verdict is unknown then, which alone would
    /// have read as "online, not stalled".
    @Test func theNetworksWordThatTheHostIsCaptiveFailsInternet() {
        var host = Self.online()
        host.portalSession = PortalSession(captive: true, loginURL: "https://portal.example/login")
        let captive = Self.snapshot(host)
        #expect(HostCondition.internet.failure(in: captive) == "the network's portal API says the host is captive (log in at https://portal.example/login)")
        #expect(HostCondition.noPortal.failure(in: captive) != nil)
        host.portalSession = PortalSession(captive: false)
        #expect(HostCondition.internet.failure(in: Self.snapshot(host)) == nil, "not captive, online, not stalled")
    }

    @Test func aTunnelIsViaItsCarrierToo() {
        let host = HostStatus(
            flags: [.reachable, .isVPN, .isWiFi], state: .online, primaryInterface: "wg0", underlyingInterface: "wlan0")
        let snapshot = Self.snapshot(host, [("wlan0", .wifi), ("wg0", .vpn), ("eth0", .wired)])
        #expect(HostCondition.via(.vpn).failure(in: snapshot) == nil)
        #expect(HostCondition.via(.wifi).failure(in: snapshot) == nil)
        #expect(HostCondition.via(.wired).failure(in: snapshot) == "the host's path is via wg0 (vpn) over wlan0 (wifi)")
    }

    @Test func everyWordReadsBack() {
        for condition in HostCondition.all { #expect(HostCondition(word: condition.word) == condition) }
        #expect(HostCondition(word: "via-ethernet") == .via(.wired))
        #expect(HostCondition(word: "via-loopback") == nil)
        #expect(HostCondition(word: "Online") == nil)
    }
}
