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

    /// Both dictionaries, without the keys that count events rather than describe the network.
    static func comparable(_ object: [String: Any]) -> NSDictionary {
        var object = object
        object.removeValue(forKey: "generation")
        return object as NSDictionary
    }

    @Test func statusInterfacesAndChecksAreEqualThroughReachdAndInProcess() async throws {
        let ns = try Self.scenario()
        let harness = try DaemonHarness(ns, config: Self.config)
        defer { harness.shutdown() }
        try await harness.ready()
        let daemon = ["--json", "--daemon", "--bus-address", harness.address]
        let inProcess = ["--json", "--netns", ns.name, "--config-dir", harness.configDirectory]

        let status = try Self.json(["status"] + daemon)
        #expect(status["primaryInterface"] as? String == "up0")
        #expect(status["flags"] as? [String] == ["reachable", "isWWAN", "isExpensive"], "the configured kind and metering apply")
        #expect(status["availableInterfaces"] as? [String] == ["lan0", "up0"], "lan0's own priority (300) beats cellular (700)")
        #expect(Self.comparable(status) == Self.comparable(try Self.json(["status"] + inProcess)))

        let interfaces = try Self.json(["interfaces"] + daemon)
        let names = (interfaces["interfaces"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(!names.contains("dock0"), "Ignore=yes hides the bridge: \(names)")
        #expect(Self.comparable(interfaces) == Self.comparable(try Self.json(["interfaces"] + inProcess)))

        for target in ["198.51.100.7", "192.0.2.9", "10.99.0.5", "172.17.0.9", "0.0.0.0", "localhost"] {
            let viaReachd = try Self.json(["check", target] + daemon)
            let local = try Self.json(["check", target] + inProcess)
            #expect(Self.comparable(viaReachd) == Self.comparable(local), "check \(target): reachd \(viaReachd), in-process \(local)")
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

    @Test func inProcessUsesTheConfiguredDefaultDeadline() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.blackHole)
        let hole = try DNSBlackHole(in: scenario.server, address: DNSScenario.blackHole)
        let directory = try makeScratchDirectory("parity")
        defer { removeTree(directory) }
        try Self.config.write(toFile: directory + "/reachd.conf", atomically: true, encoding: .utf8)
        // reachctl in a mount namespace of its own whose /etc/resolv.conf names the black hole:
        // the check must end at DefaultTimeout=700ms of the configuration, not at 5 s.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = [
            "-m", "--propagation", "private", "sh", "-c", "mount --bind \"$1\" /etc/resolv.conf && shift && exec \"$@\"", "sh",
            scenario.resolvConf.path, reachctlPath(), "check", "--json", "--netns", scenario.client.name, "--config-dir", directory,
            "never.test",
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        let started = ContinuousClock.now
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let elapsed = ContinuousClock.now - started
        withExtendedLifetime(hole) {}
        #expect(process.terminationStatus == 1)
        let json = try JSONSerialization.jsonObject(with: output) as? [String: Any]
        #expect(json?["reason"] as? String == "dnsTimeout", "\(String(decoding: output, as: UTF8.self))")
        #expect(elapsed >= .milliseconds(700) && elapsed < .seconds(4), "took \(elapsed): the configured 700 ms deadline was not used")
    }

    @Test func aBadConfigurationIsRefusedInProcessWithItsLocation() throws {
        let ns = try Self.scenario()
        let directory = try makeScratchDirectory("parity-bad")
        defer { removeTree(directory) }
        try "[Checks]\nDefaultTimeout=forever\n".write(toFile: directory + "/reachd.conf", atomically: true, encoding: .utf8)
        let result = try reachctl(["status", "--netns", ns.name, "--config-dir", directory])
        #expect(result.status == 2)
        #expect(result.stderr.contains("reachd.conf:2"), "\(result.stderr)")
        #expect(result.stderr.contains("forever"), "\(result.stderr)")
    }
}
