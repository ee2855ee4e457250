import Foundation
import Testing
@testable import Reachability

/// issue 48: big answers cannot drown root. With the history ring full (1,024 records of the
/// host's lane and as many of the uplink's: GetHistory's reply is the largest reachd makes), two
/// unprivileged users ask for it in a loop, 64 calls outstanding each, and a third asks Explain
/// as fast as it may; root's CheckAddress through the bus meanwhile keeps its p99 within 50 ms.
/// Each user but root has GetHistory 8 at once and 4 a second; the rest is refused by name.
@Suite(rootOnly, .serialized, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/setpriv"), "needs setpriv"))
struct LargeAnswerTests {
    @Test func historyAndExplainLoopsOfTwoUsersLeaveRootsCallsWithin50ms() async throws {
        let scenario = try DaemonBusTests.Scenario("bigreply")
        let harness = try DaemonHarness(scenario.ns, anyUser: true)
        defer { withExtendedLifetime(scenario) { harness.shutdown() } }
        try await harness.ready()
        // 600 losses and returns of the default route: past 1,024 host records, the ring's bound.
        let ip = "/usr/sbin/ip -n \(scenario.ns.name) route"
        let flaps = (0..<600).map { _ in "\(ip) del default; sleep 0.003; \(ip) add default via 192.0.2.1 dev up0 metric 100; sleep 0.003" }
        let flapping = try ChildProcess("/bin/sh", ["-c", flaps.joined(separator: "; ")])
        #expect(try await flapping.exit(timeout: .seconds(60)) == 0, "\(flapping.errorOutput)")
        try await Task.sleep(for: .milliseconds(500))
        let root = try harness.connect()
        let full = try DaemonHarness.call(root, "GetHistory") { message throws(BusError) in try message.append(UInt64(0)) }
        _ = try full.message.readUInt64()
        var records = 0
        if try full.message.enter("a", "(tssssssst)") {
            while try full.message.enter("r", "tssssssst") {
                records += 1
                try full.message.skip("tssssssst")
                try full.message.exit()
            }
            try full.message.exit()
        }
        #expect(records >= 1024, "the ring holds \(records) records")

        let origin = ContinuousClock.now
        let address = harness.address
        let prober = HostileCallerTests.Prober(origin: origin, setUp: { try? BusConnection(.address(address), description: "prober") }) { bus in
            _ = try? DaemonHarness.call(bus, "CheckAddress") { message throws(BusError) in try message.append("127.0.0.1") }
        }
        try await Task.sleep(for: .milliseconds(300))
        let began = ContinuousClock.now - origin
        let attackers = [
            try DescriptorFloodTests.attacker(harness, uid: 65534, "GetHistory", atOnce: 64, seconds: 10, fds: 0, mode: "answers"),
            try DescriptorFloodTests.attacker(harness, uid: 33, "GetHistory", atOnce: 64, seconds: 10, fds: 0, mode: "answers"),
            try DescriptorFloodTests.attacker(harness, uid: 1, "Explain", atOnce: 64, seconds: 10, fds: 0, mode: "answers"),
        ]
        while attackers.contains(where: \.isRunning) { try await Task.sleep(for: .milliseconds(50)) }
        let ended = ContinuousClock.now - origin
        let calls = HostileCallerTests.Overlap(prober.stop(), from: began, to: ended)
        let p99 = DescriptorFloodTests.percentile99(root: calls)
        for attacker in attackers {
            let (sent, answers) = try DescriptorFloodTests.summary(attacker)
            print("large answers: \(sent) sent: \(answers)")
            #expect(answers.values.reduce(0, +) == sent, "every call answered: \(answers)")
        }
        let history = try DescriptorFloodTests.summary(attackers[0]).answers
        #expect(history["return", default: 0] <= 8 + 4 * 12, "nobody's histories within 8 at once and 4 a second: \(history)")
        #expect(history[ReachdContract.ErrorName.limitExceeded, default: 0] > 0, "the rest refused by name: \(history)")
        print("large answers: \(records) records; root's CheckAddress \(calls), p99 \(p99)")
        #expect(calls.count >= 100, "root's calls kept being answered: \(calls)")
        #expect(p99 <= .milliseconds(50), "root's CheckAddress p99 \(p99)")
        // Root is never counted: its history comes whole, at once.
        #expect(throws: Never.self) { _ = try DaemonHarness.call(root, "GetHistory") { message throws(BusError) in try message.append(UInt64(0)) } }
    }
}
