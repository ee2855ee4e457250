import Foundation
import Testing
@testable import Reachability

/// issue 16: inputs found from outside that must get one clear answer everywhere.
@Suite("Numeric address forms")
struct NumericFormTests {
    @Test(arguments: ["127.1", "2130706433", "0x7f.0.0.1", "0X7F.1", "010.0.0.1", "10.1", "0x7f000001", "127.1."])
    func inetAtonFormsAreNeverHostNames(_ text: String) {
        guard case let .failure(error) = HostName.validate(text) else {
            Issue.record("\(text) was taken for a host name and would go to DNS")
            return
        }
        #expect(error.problem == .numericAddressForm || AddressTarget.looksLikeAddress(text))
        #expect(error.description.contains("'\(text)'") && error.description.contains("127.0.0.1"), "\(error)")
    }

    @Test(arguments: ["127.1", "2130706433", "010.0.0.1"])
    func digitOnlyFormsAreRefusedAsAddressesWithTheSameAdvice(_ text: String) {
        guard case let .failure(error) = AddressTarget.parse(text) else {
            Issue.record("\(text) parsed as an address")
            return
        }
        #expect(error.description.contains("inet_aton") && error.description.contains("127.0.0.1"), "\(error)")
    }

    @Test(arguments: ["example.com", "0x7f.example", "a1.b2", "host-1.test", "1a.2b.3c.4d"])
    func namesWithLettersStayNames(_ text: String) {
        #expect(throws: Never.self) { try HostName.validate(text).get() }
    }
}

/// The same refusals through reachd, by busctl (a client that is not ours), and by reachctl.
@Suite(rootOnly)
struct InputEdgeBusTests {
    @Test func numericFormsAndUnknownScopesAreRefusedAlikeByEveryEntryPoint() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns)
        defer { harness.shutdown() }
        try await harness.ready()
        func refusal(_ arguments: [String]) throws -> String {
            let output = try harness.busctl(["call", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface] + arguments)
            #expect(output.status != 0, "busctl \(arguments) succeeded: \(output.stdout)")
            return output.stderr
        }
        for target in ["0x7f.0.0.1", "127.1", "2130706433"] {
            for arguments in [["CheckHost", "su", target, "500"], ["Watch", "s", target]] {
                let message = try refusal(arguments)
                #expect(message.contains(target) && message.contains("127.0.0.1"), "\(arguments): \(message)")
            }
            let result = try reachctl(["check", target, "--daemon", "--bus-address", harness.address])
            #expect(result.status == 2 && result.stderr.contains("inet_aton"), "\(result.stderr)")
        }
        // A scope that names no interface: CheckAddress and Watch give the same refusal.
        let scoped = "fe80::1%nonexist"
        let checkMessage = try refusal(["CheckAddress", "s", scoped])
        let watchMessage = try refusal(["Watch", "s", scoped])
        #expect(checkMessage.contains("nonexist") && checkMessage == watchMessage, "\(checkMessage) / \(watchMessage)")
    }
}

/// reachctl refuses what it cannot honour, before doing anything, with exit status 2.
@Suite("reachctl usage limits")
struct ReachctlLimitTests {
    @Test(arguments: [
        (["check", "example.org", "--timeout", "-1s"], "durations cannot be negative"),
        (["wait", "--timeout", "-1s"], "durations cannot be negative"),
        (["check", "example.org", "--timeout", "400s"], "above the maximum of 5m"),
        (["check", "example.org", "--timeout", "0"], "must be above zero"),
    ])
    func badTimeoutsAreRefusedNamingTheValue(_ arguments: [String], _ expected: String) throws {
        let result = try reachctl(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(expected), "\(result.stderr)")
    }

    @Test func monitorRefusesMoreTargetsThanAWatchLimitHolds() throws {
        let targets = (1...65).map { "192.0.2.\($0)" }
        let result = try reachctl(["monitor"] + targets)
        #expect(result.status == 2)
        #expect(result.stderr.contains("at most 64 targets") && result.stderr.contains("got 65"), "\(result.stderr)")
    }
}
