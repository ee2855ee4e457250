import Foundation
import Testing
@testable import Reachability

/// resolv.conf, resolved's upstream list and /etc/hosts as an attacker (or root's mistake) makes
/// them: a FIFO, a symlink to /dev/zero, a file past its limit, 10,000 nameservers. reachd keeps
/// answering at once, says what is wrong once, and follows the file when it is fixed.
@Suite(rootOnly, .serialized)
struct HostileResolverFileTests {
    /// Renames a FIFO over `path` (a file removed first would be a resolv.conf without servers
    /// for a moment: then that is the last version read well).
    static func makeFIFO(_ path: String) throws {
        let aside = path + ".fifo"
        _ = unlink(aside)
        guard mkfifo(aside, 0o644) == 0, rename(aside, path) == 0 else {
            throw CommandFailed(command: "mkfifo \(path)", status: errno, output: "")
        }
    }

    /// Renames a symlink to `target` over `path`, as a resolv.conf manager swaps files.
    static func symlinkOver(_ path: String, to target: String) throws {
        let aside = path + ".new"
        _ = unlink(aside)
        guard symlink(target, aside) == 0, rename(aside, path) == 0 else {
            throw CommandFailed(command: "symlink \(target) over \(path)", status: errno, output: "")
        }
    }

    /// CheckAddress and CheckHost through busctl: both answer well within a second; CheckHost's
    /// reason and message.
    static func checks(_ harness: DaemonHarness, host: String) throws -> (reason: String, message: String) {
        let start = ContinuousClock.now
        let address = try DaemonHarness.jsonData(try harness.busctlCall("CheckAddress", "s", "203.0.113.10"))
        #expect(address.count == 4 && (address[1] as? String) == "up0", "\(address)")
        let answer = try DaemonHarness.jsonData(try harness.busctlCall("CheckHost", "su", host, "500"))
        #expect(ContinuousClock.now - start < .seconds(2), "both checks answered promptly; \(harness.diagnostics)")
        let details = answer.last as? [String: [String: Any]]
        return (answer.count == 5 ? answer[3] as? String ?? "" : "?", details?["Message"]?["data"] as? String ?? "")
    }

    /// reachd's stderr lines that contain `text`, once they number at least `count`.
    static func lines(_ harness: DaemonHarness, containing text: String, count: Int = 1) async throws -> [String] {
        let deadline = ContinuousClock.now + .seconds(3)
        while true {
            let found = harness.daemonErrorLines.filter { $0.contains(text) }
            if found.count >= count || ContinuousClock.now > deadline { return found }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func aResolvConfThatNeverEndsLeavesTheDaemonAnswering() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        let dns = try DNSMasqServer(in: scenario.server, address: DNSScenario.answering, records: ["up.test": ["203.0.113.10"]])
        defer { withExtendedLifetime(dns) {} }
        let path = scenario.resolvConf.path
        defer { _ = unlink(path) }
        // A FIFO from the start: no nameserver is known, and CheckHost says why.
        try Self.makeFIFO(path)
        let harness = try DaemonHarness(scenario.client, resolvConf: path)
        defer { harness.shutdown() }
        try await harness.ready()
        var answer = try Self.checks(harness, host: "up.test")
        #expect(answer.reason == "dnsFailure" && answer.message.contains("is a FIFO"), "\(answer)")
        #expect(try await Self.lines(harness, containing: "is a FIFO").count == 1, "\(harness.diagnostics)")

        // A symlink to /dev/zero: refused by what it leads to, never read.
        try Self.symlinkOver(path, to: "/dev/zero")
        try await Task.sleep(for: .milliseconds(100))
        answer = try Self.checks(harness, host: "up.test")
        #expect(answer.reason == "dnsFailure" && answer.message.contains("is a character device"), "\(answer)")
        #expect(try await Self.lines(harness, containing: "is a character device").count == 1, "\(harness.diagnostics)")

        // Fixed: followed at once, and the name answers.
        try "nameserver \(DNSScenario.answering)\n".write(toFile: path, atomically: true, encoding: .utf8)
        let fixed = ContinuousClock.now + .seconds(3)
        while try Self.checks(harness, host: "up.test").reason != "", ContinuousClock.now < fixed {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try Self.checks(harness, host: "up.test") == ("", ""), "\(harness.diagnostics)")
        // Each fault was said once, however many checks met it.
        #expect(harness.daemonErrorLines.filter { $0.contains("is a FIFO") }.count == 1)
        #expect(harness.daemonErrorLines.filter { $0.contains("is a character device") }.count == 1)
    }

    @Test func aBrokenResolvConfKeepsTheLastNameserversReadWell() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        let dns = try DNSMasqServer(
            in: scenario.server, address: DNSScenario.answering, records: ["one.test": ["203.0.113.10"], "two.test": ["203.0.113.10"]])
        defer { withExtendedLifetime(dns) {} }
        let path = scenario.resolvConf.path
        defer { _ = unlink(path) }
        let harness = try DaemonHarness(scenario.client, resolvConf: path)
        defer { harness.shutdown() }
        try await harness.ready()
        #expect(try Self.checks(harness, host: "one.test") == ("", ""), "\(harness.diagnostics)")

        // Past 64 KiB, then a FIFO: each said once, and the servers read before still answer.
        let huge = "nameserver \(DNSScenario.answering)\n" + String(repeating: "# padding\n", count: 7000)
        try huge.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try await Self.lines(harness, containing: "exceeds 65536 bytes").count == 1, "\(harness.diagnostics)")
        try Self.makeFIFO(path)
        #expect(try await Self.lines(harness, containing: "is a FIFO").count == 1, "\(harness.diagnostics)")
        let answer = try Self.checks(harness, host: "two.test")
        #expect(answer == ("", ""), "\(answer) \(harness.diagnostics)")
        #expect(harness.daemonErrorLines.contains { $0.contains("is a FIFO") && $0.contains("last read from it stays in use") })
    }

    @Test func resolvedsUpstreamListThatNeverEndsIsRefusedAndFollowedWhenFixed() throws {
        let directory = try makeScratchDirectory("upstream")
        defer { removeTree(directory) }
        let stub = directory + "/stub-resolv.conf"
        try "nameserver 127.0.0.53\n".write(toFile: stub, atomically: true, encoding: .utf8)
        let upstream = directory + "/resolv.conf"
        var said: [String] = []
        let files = ResolverFiles(resolvConfPath: stub, upstreamPath: upstream) { said.append($0) }
        let watch = NameserverWatch(files: files)
        for hostile in ["fifo", "zero"] {
            if hostile == "fifo" { try Self.makeFIFO(upstream) } else { try Self.symlinkOver(upstream, to: "/dev/zero") }
            let start = ContinuousClock.now
            // Asked on every kernel event: answered at once with the stub, the fault said once.
            for _ in 0..<100 { #expect(watch.nameservers() == [IPAddress("127.0.0.53")!]) }
            #expect(ContinuousClock.now - start < .milliseconds(500))
        }
        #expect(said.count == 2 && said[0].contains("is a FIFO") && said[1].contains("is a character device"), "\(said)")
        try "nameserver 192.0.2.53\n".write(toFile: upstream, atomically: true, encoding: .utf8)
        #expect(watch.nameservers() == [IPAddress("192.0.2.53")!])
    }

    @Test func tenThousandNameserversCostNoMorePerEventThanThree() throws {
        let directory = try makeScratchDirectory("manyns")
        defer { removeTree(directory) }
        let lines = (0..<10_000).map { "nameserver 10.\($0 / 65536).\($0 / 256 % 256).\($0 % 256)" }
        func file(_ name: String, _ count: Int) throws -> String {
            let path = directory + "/" + name
            try lines.prefix(count).joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        // 10,000 lines are past 64 KiB: refused whole. The most that fit (about 3,000) are capped.
        var said: [String] = []
        #expect(NameserverWatch(files: ResolverFiles(resolvConfPath: try file("all.conf", 10_000)) { said.append($0) }).nameservers() == [])
        #expect(said.count == 1 && said[0].contains("exceeds 65536 bytes"), "\(said)")
        said = []
        let fitting = NameserverWatch(files: ResolverFiles(resolvConfPath: try file("fit.conf", 3_000)) { said.append($0) }).nameservers()
        #expect(fitting.count == ResolverConfiguration.maximumNameservers)
        #expect(said.count == 1 && said[0].contains("2997 nameserver line(s) ignored"), "\(said)")
        let three = NameserverWatch(path: try file("three.conf", 3), upstreamPath: nil).nameservers()
        #expect(three.count == 3)

        // What each kernel event costs: a route lookup per nameserver, in a namespace with a link.
        let ns = try TestNamespace()
        try ns.ip("link add mn0 type veth peer name mn0p")
        try ns.ip("addr add 10.0.0.1/8 dev mn0")
        try ns.ip("link set mn0 up")
        var options = KernelSource.Options()
        options.namespacePath = ns.path
        options.sysfs = SysfsReader(root: "/nonexistent-sysfs")
        let mirror = try HandDrivenKernel(options: options)
        try mirror.synchronize()
        func perEvent(_ servers: [IPAddress], rounds: Int) -> Duration {
            mirror.setNameservers(servers)
            let start = ContinuousClock.now
            for _ in 0..<rounds { _ = mirror.nameserverEvents() }
            return (ContinuousClock.now - start) / rounds
        }
        let costOfThree = perEvent(three, rounds: 200)
        let costOfCapped = perEvent(fitting, rounds: 200)
        // What an uncapped list cost before (every line taken, as c-ares read them).
        let costOfAll = perEvent(lines.compactMap { IPAddress(String($0.dropFirst(11))) }, rounds: 3)
        print("nameserver routes per kernel event: 3 servers \(costOfThree), capped list \(costOfCapped), 10,000 uncapped \(costOfAll)")
        // The capped list is the same 3 lookups (50-120 us each), where 10,000 cost tens of ms.
        #expect(fitting.count == three.count)
        #expect(costOfCapped < .milliseconds(5), "\(costOfCapped)")
    }
}

/// /etc/hosts as reachd reads it (c-ares no longer opens it on the loop at every lookup).
struct HostsFileTests {
    @Test func hostsFileIsParsedAsGlibcReadsIt() {
        let hosts = HostsFile(parsing: Array("127.0.0.1 localhost\n# 192.0.2.9 hidden.test\n2001:db8::1 Both.Test # v6\n192.0.2.1\tboth.test alias.test\nnot-an-address x.test\n".utf8))
        #expect(hosts.addresses(of: "both.test.") == [IPAddress("192.0.2.1")!, IPAddress("2001:db8::1")!])
        #expect(hosts.addresses(of: "ALIAS.test") == [IPAddress("192.0.2.1")!])
        #expect(hosts.addresses(of: "hidden.test").isEmpty && hosts.addresses(of: "x.test").isEmpty)
    }

    @Test func aHostsFileThatNeverEndsIsRefusedOnce() throws {
        let directory = try makeScratchDirectory("hosts")
        defer { removeTree(directory) }
        let hosts = directory + "/hosts"
        guard mkfifo(hosts, 0o644) == 0 else { throw CommandFailed(command: "mkfifo", status: errno, output: "") }
        var said: [String] = []
        let files = ResolverFiles(resolvConfPath: directory + "/resolv.conf", hostsPath: hosts) { said.append($0) }
        let start = ContinuousClock.now
        for _ in 0..<100 { #expect(files.hostsAddresses("up.test").isEmpty) }
        #expect(ContinuousClock.now - start < .milliseconds(500))
        #expect(said.count == 1 && said[0].contains("is a FIFO"), "\(said)")
        _ = unlink(hosts)
        try "192.0.2.7 up.test\n".write(toFile: hosts, atomically: true, encoding: .utf8)
        #expect(files.hostsAddresses("up.test") == [IPAddress("192.0.2.7")!])
    }
}
