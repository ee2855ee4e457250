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

    @Test(arguments: ["example.com", "0x7f.example", "a1.b2", "host-1.test", "1a.2b.3c.4d", "123.example", "0x7f.local"])
    func namesWithLettersStayNames(_ text: String) {
        #expect(throws: Never.self) { try HostName.validate(text).get() }
        #expect(!AddressTarget.looksLikeAddress(text), "\(text) would be refused as an address")
    }

    /// Every entry point routes with looksLikeAddress; a text it sends to the address side is
    /// then refused by parse, so nothing of this list can ever reach DNS.
    @Test(arguments: [
        ("0x7f.0.0.1", "inet_aton"), ("0x7f000001", "inet_aton"), ("1.0x1", "inet_aton"), ("127.1.", "inet_aton"),
        ("192.0.2.999", "is not an IPv4 or IPv6 address"), ("1.2.3.4.5", "is not an IPv4 or IPv6 address"),
        ("0x7f.0.0.999", "last label '999' is all digits"), ("host.123", "last label '123' is all digits"),
        ("host.123.", "last label '123' is all digits"),
    ])
    func textsThatCannotBeNamesGoToTheAddressSideAndAreRefusedThere(_ text: String, _ expected: String) {
        #expect(AddressTarget.looksLikeAddress(text))
        guard case let .failure(error) = AddressTarget.parse(text) else {
            Issue.record("\(text) parsed as an address")
            return
        }
        #expect(error.description.contains("'\(text)'") && error.description.contains(expected), "\(error)")
        #expect(throws: HostNameError.self) { try HostName.validate(text).get() }
    }

    @Test func anAddressIsStillNotANameToCheckAddress() {
        guard case let .failure(error) = AddressTarget.parse("example.test") else { Issue.record("parsed"); return }
        #expect(error.description == "'example.test' is not an IPv4 or IPv6 address")
    }

    @Test func aNumericTopLevelLabelIsNamedInTheHostNameError() {
        let error = HostName.validate("printer.lan.42")
        #expect(error == .failure(HostNameError(name: "printer.lan.42", problem: .numericTopLevelLabel("42"))))
        if case let .failure(error) = error { #expect(error.description.contains("last label '42' is all digits"), "\(error)") }
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
        for target in ["0x7f.0.0.1", "127.1", "2130706433", "010.0.0.1", "10.1", "host.123"] {
            var messages: Set<String> = []
            for arguments in [["CheckHost", "su", target, "500"], ["Watch", "s", target], ["CheckAddress", "s", target]] {
                let message = try refusal(arguments)
                #expect(message.contains("'\(target)'"), "\(arguments): \(message)")
                messages.insert(message)
            }
            #expect(messages.count == 1, "one refusal for \(target) whatever the method: \(messages)")
            let advice = target == "host.123" ? "all digits" : "127.0.0.1"
            for command in [["check", target], ["monitor", target]] {
                let daemon = try reachctl(command + ["--daemon", "--bus-address", harness.address])
                #expect(daemon.status == 2 && daemon.stderr.contains("'\(target)'") && daemon.stderr.contains(advice), "\(command): \(daemon.stderr)")
                let inProcess = try reachctl(command + ["--netns", scenario.ns.name])
                #expect(inProcess.status == 2 && inProcess.stderr.contains("'\(target)'") && inProcess.stderr.contains(advice), "\(command) in-process: \(inProcess.stderr)")
            }
        }
        // A scope that names no interface: CheckAddress and Watch give the same refusal.
        let scoped = "fe80::1%nonexist"
        let checkMessage = try refusal(["CheckAddress", "s", scoped])
        let watchMessage = try refusal(["Watch", "s", scoped])
        #expect(checkMessage.contains("nonexist") && checkMessage == watchMessage, "\(checkMessage) / \(watchMessage)")
        #expect(try refusal(["CheckHost", "su", scoped, "500"]) == checkMessage)
        for command in [["check", scoped], ["monitor", scoped]] {
            for source in [["--daemon", "--bus-address", harness.address], ["--netns", scenario.ns.name]] {
                let result = try reachctl(command + source)
                #expect(result.status == 2 && result.stderr.contains("no interface named 'nonexist'"), "\(command + source): \(result.stderr)")
            }
        }
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
