import Foundation
import Testing
@testable import Reachability

/// issue 8: the same question gets the same answer with and without reachd. reachd and
/// in-process reachctl read the same configuration directory and watch the same namespace; their
/// JSON is compared field by field.
@Suite(rootOnly)
struct ParityTests {
    static let config = """
        [Checks]
        DefaultTimeout=700ms

        [Priorities]
        Virtual=900

        [Interface]
        Name=up0
        Kind=cellular
        Metered=yes

        [Interface]
        Name=dock*
        Ignore=yes

        [Interface]
        Name=lan0
        Priority=300
        """

    /// up0: the uplink (a cellular modem by configuration), default via 192.0.2.1; lan0: a
    /// second way out with a worse metric and a priority of its own; dock0: a bridge to ignore.
    static func scenario() throws -> TestNamespace {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        try KernelMonitorTests.uplink(ns, "lan0", "10.99.0.2/24", gateway: "10.99.0.1", metric: 200)
        try ns.ip("link add dock0 type bridge")
        try ns.ip("addr add 172.17.0.1/16 dev dock0")
        try ns.ip("link set dock0 up")
        return ns
    }

    static func json(_ arguments: [String]) throws -> [String: Any] {
        let result = try reachctl(arguments)
        #expect(result.status == 0 || result.status == 1, "reachctl \(arguments): \(result.stderr)")
        return try result.json()
    }

    /// A JSON object as its leaves, by path: `interfaces[up0].flags`. Lists of objects with a
    /// `name` are keyed by it, so one differing interface shows as its own fields.
    static func fields(_ value: Any, at path: String = "") -> [String: NSObject] {
        if let object = value as? [String: Any] {
            return object.reduce(into: [:]) { fields, entry in
                fields.merge(Self.fields(entry.value, at: path.isEmpty ? entry.key : path + "." + entry.key)) { $1 }
            }
        }
        if let list = value as? [[String: Any]], !list.isEmpty, list.allSatisfy({ $0["name"] is String }) {
            return list.reduce(into: [:]) { fields, element in
                fields.merge(Self.fields(element, at: "\(path)[\(element["name"] as! String)]")) { $1 }
            }
        }
        return [path: value as? NSObject ?? NSNull()]
    }

    /// Records one issue per field on which reachd's answer and the in-process one differ.
    /// `generation` is not compared: each source counts its own events, not the network.
    static func expectSameFields(
        _ what: String, _ viaReachd: [String: Any], _ inProcess: [String: Any], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let left = fields(viaReachd)
        let right = fields(inProcess)
        for path in Set(left.keys).union(right.keys).sorted() where path != "generation" && left[path] != right[path] {
            Issue.record(
                "\(what): \(path) is \(left[path].map { "\($0)" } ?? "absent") through reachd, \(right[path].map { "\($0)" } ?? "absent") in-process",
                sourceLocation: sourceLocation)
        }
    }

    /// Asks reachd, then the library in-process, then reachd again, and compares field by field
    /// once reachd's two answers (generation included) are the same: the network held still
    /// while in-process answered. Without that, the kernel moving in between (a link-local
    /// address leaving DAD) would make two true answers about different moments look like a
    /// disagreement. Returns reachd's answer.
    @discardableResult
    static func expectSameAnswer(
        _ what: String, viaReachd: () throws -> [String: Any], inProcess: () throws -> [String: Any],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        for _ in 0..<5 {
            let before = try viaReachd()
            let local = try inProcess()
            guard fields(before) == fields(try viaReachd()) else { continue }
            expectSameFields(what, before, local, sourceLocation: sourceLocation)
            return before
        }
        Issue.record("\(what): reachd's answer kept changing; nothing compared", sourceLocation: sourceLocation)
        return [:]
    }

    /// `expectSameAnswer` for one reachctl command, with the arguments that pick each source.
    @discardableResult
    static func expectSameAnswer(
        _ command: [String], daemon: [String], inProcess: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        try expectSameAnswer(
            command.joined(separator: " "), viaReachd: { try json(command + daemon) }, inProcess: { try json(command + inProcess) },
            sourceLocation: sourceLocation)
    }

    /// reachctl in a mount namespace of its own whose /etc/resolv.conf is `resolvConf` (what
    /// reachd reads through --resolv-conf), and how long it took.
    static func reachctlInMountNamespace(resolvConf: String, _ arguments: [String]) throws -> (result: CommandResult, elapsed: Duration) {
        let started = ContinuousClock.now
        let output = try DaemonHarness.execute("/usr/bin/unshare", [
            "-m", "--propagation", "private", "sh", "-c", "mount --bind \"$1\" /etc/resolv.conf && shift && exec \"$@\"", "sh",
            resolvConf, reachctlPath(),
        ] + arguments)
        return (CommandResult(status: output.status, stdout: output.stdout, stderr: output.stderr), ContinuousClock.now - started)
    }

    @Test func statusInterfacesAndChecksAreEqualThroughReachdAndInProcess() async throws {
        let ns = try Self.scenario()
        let harness = try DaemonHarness(ns, config: Self.config)
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = ["--json", "--daemon", "--bus-address", harness.address]
        let inProcess = ["--json", "--netns", ns.name, "--config-dir", harness.configDirectory]
        let plainText = { (arguments: [String]) throws -> [String: Any] in
            let result = try reachctl(arguments.filter { $0 != "--json" })
            return ["status": result.status, "stdout": result.stdout, "stderr": result.stderr]
        }

        let status = try Self.expectSameAnswer(["status"], daemon: daemon, inProcess: inProcess)
        #expect(status["primaryInterface"] as? String == "up0")
        #expect(status["flags"] as? [String] == ["reachable", "isWWAN", "isExpensive"], "the configured kind and metering apply")
        #expect(status["availableInterfaces"] as? [String] == ["lan0", "up0"], "lan0's own priority (300) beats cellular (700)")

        let interfaces = try Self.expectSameAnswer(["interfaces"], daemon: daemon, inProcess: inProcess)
        let names = (interfaces["interfaces"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(!names.contains("dock0"), "Ignore=yes hides the bridge: \(names)")

        for target in ["198.51.100.7", "192.0.2.9", "10.99.0.5", "172.17.0.9", "0.0.0.0", "localhost"] {
            try Self.expectSameAnswer(["check", target], daemon: daemon, inProcess: inProcess)
            // And the text a person reads, exit status included.
            try Self.expectSameAnswer(
                "check \(target) (text)", viaReachd: { try plainText(["check", target] + daemon) },
                inProcess: { try plainText(["check", target] + inProcess) })
        }
        // --verbose adds how the kernel mirror has fared, both ways.
        for arguments in [daemon, inProcess] {
            let verbose = try Self.json(["status", "--verbose"] + arguments)
            #expect(verbose["overruns"] as? Int == 0 && (verbose["resyncs"] as? Int ?? 0) >= 1, "\(arguments): \(verbose)")
        }
        let text = try reachctl(["status", "--verbose", "--daemon", "--bus-address", harness.address])
        #expect(text.stdout.contains("Netlink: 0 overrun(s), 1 resync(s)"), "\(text.stdout)")
        // The details travel over D-Bus too.
        let far = try Self.json(["check", "198.51.100.7"] + daemon)
        #expect(far["gateway"] as? String == "192.0.2.1")
        #expect(far["source"] as? String == "192.0.2.2")
    }

    @Test func hostChecksOverDNSAreEqualThroughReachdAndInProcess() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        let dns = try DNSMasqServer(in: scenario.server, address: DNSScenario.answering, records: ["up.test": ["203.0.113.10"]])
        let harness = try DaemonHarness(scenario.client, config: "[Interface]\nName=up0\nMetered=yes\n", resolvConf: scenario.resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = ["--json", "--daemon", "--bus-address", harness.address]
        let inProcess = ["--json", "--netns", scenario.client.name, "--config-dir", harness.configDirectory]
        var answers: [String: [String: Any]] = [:]
        for target in ["up.test", "nothere.test"] {
            answers[target] = try Self.expectSameAnswer(
                "check \(target)", viaReachd: { try Self.json(["check", target] + daemon) },
                inProcess: { try Self.reachctlInMountNamespace(resolvConf: scenario.resolvConf.path, ["check", target] + inProcess).result.json() })
        }
        withExtendedLifetime(dns) {}
        // What CheckHost's details carried: the next hop and source for the resolved address,
        // what DNS said for the name that does not exist.
        #expect(answers["up.test"]?["gateway"] as? String == "192.0.2.1", "\(answers)")
        #expect(answers["up.test"]?["source"] as? String == "192.0.2.2")
        #expect((answers["up.test"]?["flags"] as? [String])?.contains("isExpensive") == true, "Metered=yes applies")
        #expect(answers["nothere.test"]?["reason"] as? String == "dnsNotFound", "\(answers)")
        let message = answers["nothere.test"]?["message"] as? String
        #expect(message?.contains("NXDOMAIN") == true, "\(answers)")
    }

    @Test func bothUseTheConfiguredDefaultDeadline() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.blackHole)
        let hole = try DNSBlackHole(in: scenario.server, address: DNSScenario.blackHole)
        let harness = try DaemonHarness(scenario.client, config: Self.config, resolvConf: scenario.resolvConf.path)
        defer { harness.shutdown() }
        try await harness.ready()
        // Without --timeout the check must end at DefaultTimeout=700ms of the configuration, not
        // at 5 s: reachd's own through the bus (timeout_ms 0), the one read in-process.
        let (viaReachd, reachdElapsed) = try reachctl(["check", "--json", "--daemon", "--bus-address", harness.address, "never.test"], environment: [:])
        let (local, localElapsed) = try Self.reachctlInMountNamespace(
            resolvConf: scenario.resolvConf.path,
            ["check", "--json", "--netns", scenario.client.name, "--config-dir", harness.configDirectory, "never.test"])
        withExtendedLifetime(hole) {}
        for (result, elapsed) in [(viaReachd, reachdElapsed), (local, localElapsed)] {
            #expect(result.status == 1, "\(result.stderr)")
            #expect(try result.json()["reason"] as? String == "dnsTimeout", "\(result.stdout)")
            #expect(elapsed >= .milliseconds(700) && elapsed < .seconds(4), "took \(elapsed): the configured 700 ms deadline was not used")
        }
        Self.expectSameFields("check never.test", try viaReachd.json(), try local.json())
    }

    @Test func aBadConfigurationIsRefusedInProcessWithReachdsErrors() throws {
        let ns = try Self.scenario()
        let directory = try makeScratchDirectory("parity-bad")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/reachd.conf.d", withIntermediateDirectories: true)
        try "[Checks]\nDefaultTimeout=forever\n[Interface]\nKind=modem\n".write(toFile: directory + "/reachd.conf", atomically: true, encoding: .utf8)
        try "[Priorities]\nWiFi=-3\n".write(toFile: directory + "/reachd.conf.d/10-wifi.conf", atomically: true, encoding: .utf8)
        let result = try reachctl(["status", "--netns", ns.name, "--config-dir", directory])
        #expect(result.status == 255)
        #expect(result.stdout == "")
        #expect(result.stderr.contains("reachd.conf:2: [Checks] DefaultTimeout: invalid duration 'forever'"), "\(result.stderr)")
        // Every error as reachd --check-config words it, in the same order; only the prefix differs.
        let reachd = try DaemonHarness.execute(productPath("reachd"), ["--check-config", "--config-dir", directory])
        #expect(reachd.status == 2)
        let fromReachd = reachd.stderr.split(separator: "\n").map { $0.replacing("error: ", with: "", maxReplacements: 1) }
        let fromReachctl = result.stderr.split(separator: "\n").map { $0.replacing("reachctl: ", with: "", maxReplacements: 1) }
        #expect(fromReachd.count == 4 && fromReachctl == fromReachd, "reachd:\n\(reachd.stderr)reachctl:\n\(result.stderr)")
    }

    @Test func theFallbackWhenReachdIsAbsentReadsTheConfigurationToo() throws {
        let directory = try makeScratchDirectory("parity-fallback")
        defer { removeTree(directory) }
        try "[Interface]\nName=lo\nIgnore=yes\n".write(toFile: directory + "/reachd.conf", atomically: true, encoding: .utf8)
        let missing = "unix:path=/nonexistent-\(getpid())/bus"
        let plain = try reachctl(["interfaces", "--json", "--bus-address", missing])
        let configured = try reachctl(["interfaces", "--json", "--bus-address", missing, "--config-dir", directory])
        for result in [plain, configured] {
            #expect(result.stderr.hasSuffix("; answering in-process\n"), "\(result.stderr)")
        }
        func names(_ result: CommandResult) throws -> [String] {
            (try result.json()["interfaces"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        }
        #expect(try names(plain).contains("lo"), "\(plain.stdout)")
        #expect(try !names(configured).contains("lo"), "Ignore=yes from --config-dir hides lo: \(configured.stdout)")
        // Repeated, the first directory with a reachd.conf wins, as for reachd: a second
        // directory whose reachd.conf ignores nothing changes nothing after, everything before.
        let other = try makeScratchDirectory("parity-fallback-other")
        defer { removeTree(other) }
        try "[Checks]\nDefaultTimeout=2s\n".write(toFile: other + "/reachd.conf", atomically: true, encoding: .utf8)
        let first = try reachctl(["interfaces", "--json", "--bus-address", missing, "--config-dir", directory, "--config-dir", other])
        let second = try reachctl(["interfaces", "--json", "--bus-address", missing, "--config-dir", other, "--config-dir", directory])
        #expect(try !names(first).contains("lo"), "\(first.stdout)")
        #expect(try names(second).contains("lo"), "\(second.stdout)")
        let reachd = try DaemonHarness.execute(productPath("reachd"), ["--check-config", "--config-dir", other, "--config-dir", directory])
        #expect(reachd.stdout.contains("#   \(other)/reachd.conf\n") && !reachd.stdout.contains("\(directory)/reachd.conf"), "\(reachd.stdout)")
        // --daemon never answers in-process: a configuration for it could only be ignored.
        let refused = try reachctl(["status", "--daemon", "--bus-address", missing, "--config-dir", directory])
        #expect(refused.status == 255)
        #expect(refused.stderr.contains("--config-dir '\(directory)' applies only in-process"), "\(refused.stderr)")
        // A bad configuration stops the fallback as it stops reachd.
        try "[Interface]\nIgnore=maybe\n".write(toFile: directory + "/reachd.conf", atomically: true, encoding: .utf8)
        let bad = try reachctl(["status", "--bus-address", missing, "--config-dir", directory])
        #expect(bad.status == 255)
        #expect(bad.stdout == "")
        #expect(bad.stderr.contains("reachd.conf:2: [Interface] Ignore: invalid boolean 'maybe'"), "\(bad.stderr)")
    }

    /// reachd as it was before the check replies had details: CheckAddress ends at `reason`.
    /// Enough of it for reachctl (GetStatus answers the probe).
    final class ReachdWithoutDetails: BusObject {
        static let vtable = BusVTable([
            .method("GetStatus", signature: "", result: "a{sv}", names: "status\0"),
            .method("CheckAddress", signature: "s", result: "uss", names: "address\0flags\0interface\0reason\0"),
        ])

        func call(_ method: String, _ message: BusMessage) throws(BusError) -> BusReply {
            if method == "GetStatus" {
                return .now { reply throws(BusError) in
                    try reply.open("a", "{sv}")
                    try reply.close()
                }
            }
            return .now { reply throws(BusError) in
                try reply.append(ReachabilityFlags.reachable.rawValue)
                try reply.append("up0")
                try reply.append("")
            }
        }

        func property(_ name: String, into reply: BusMessage) throws(BusError) {}
    }

    @Test func aReplyWithoutDetailsFromAnOlderReachdStillAnswers() throws {
        let harness = try DaemonHarness(nil, start: false)
        defer { harness.shutdown() }
        let server = try BusConnection(.address(harness.address), description: "older-reachd")
        let object = try server.add(
            ReachdWithoutDetails(), at: DaemonHarness.objectPath, interface: DaemonHarness.interface, vtable: ReachdWithoutDetails.vtable)
        var named: Result<BusConnection.NameRequest, BusError>?
        let name = try server.requestName(DaemonHarness.busName) { named = $0 }
        let deadline = ContinuousClock.now + waitLimit
        while named == nil, ContinuousClock.now < deadline {
            while try server.process() {}
            try server.wait(timeout: .milliseconds(50))
        }
        #expect(try #require(named).get() == .owned)

        // reachctl runs on its own while this thread serves its calls.
        let child = try ChildProcess(reachctlPath(), ["check", "--json", "--daemon", "--bus-address", harness.address, "192.0.2.7"])
        while child.isRunning, ContinuousClock.now < deadline {
            while try server.process() {}
            try server.wait(timeout: .milliseconds(20))
        }
        let status = child.waitForExit(timeout: .seconds(5))
        withExtendedLifetime((object, name)) {}
        #expect(status == 0, "\(child.errorOutput)")
        let json = try CommandResult(status: status ?? -1, stdout: child.output, stderr: child.errorOutput).json()
        #expect(json["interface"] as? String == "up0")
        #expect(json["reason"] as? String == "")
        #expect(json["gateway"] == nil && json["source"] == nil, "\(json)")
    }
}
