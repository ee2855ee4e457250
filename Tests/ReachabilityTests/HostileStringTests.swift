import Foundation
import Testing
@testable import Reachability

/// issue 24: strings from outside stay inert: control characters never reach a terminal, a log
/// or STATUS= raw, and JSON stays exact.
@Suite struct InertTextTests {
    @Test(arguments: [
        ("wlan0", "wlan0"),
        ("a\u{1b}[31mb", "a\\x1b[31mb"),
        ("http://portal.test/\u{01}\u{02}\u{1b}[31m", "http://portal.test/\\x01\\x02\\x1b[31m"),
        ("bell\u{07}del\u{7f}", "bell\\x07del\\x7f"),
        ("csi\u{9b}31m", "csi\\u{9b}31m"),
        ("two\nlines\ttab", "two\\x0alines\\x09tab"),
        ("café ☕", "café ☕"),
    ])
    func controlCharactersAreWrittenOut(_ raw: String, _ shown: String) {
        #expect(raw.escapingControlCharacters() == shown)
    }

    @Test func linesAndTabsMayStay() {
        #expect("a\tb\nc\u{1b}".escapingControlCharacters(keepingNewlines: true) == "a\tb\nc\\x1b")
    }

    @Test func jsonStaysExact() throws {
        let name = "a\u{1b}[31mb\u{9b}"
        let text = JSONValue.object([("name", .string(name))]).serialized()
        #expect(text == #"{"name":"a\u001b[31mb\u009b"}"#)
        let decoded = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(decoded?["name"] as? String == name)
        // What reachctl writes of it: unchanged.
        #expect(text.escapingControlCharacters(keepingNewlines: true) == text)
    }
}

/// A link named with a terminal escape, as the kernel allows (only '/', ':' and spaces are not):
/// reachctl's table and status, and reachd's journal, show it written out.
@Suite(rootOnly) struct HostileInterfaceNameTests {
    @Test func anInterfaceNameWithAnEscapeNeverReachesTheTerminalRaw() async throws {
        let ns = try TestNamespace()
        let hostile = "a\u{1b}[31mb"
        _ = try ns.exec("/usr/sbin/ip", ["link", "add", hostile, "type", "veth", "peer", "name", "hostp"])
        _ = try ns.exec("/usr/sbin/ip", ["link", "set", hostile, "up"])
        _ = try ns.exec("/usr/sbin/ip", ["link", "set", "hostp", "up"])
        let harness = try DaemonHarness(ns, verbose: true)
        defer { harness.shutdown() }
        try await harness.ready(state: nil)

        for arguments in [["interfaces"], ["interfaces", "--netns", ns.name], ["status", "--verbose"]] {
            let via = arguments.contains("--netns") ? arguments : arguments + ["--bus-address", harness.address]
            let output = try reachctl(via)
            #expect(!output.stdout.contains("\u{1b}") && !output.stderr.contains("\u{1b}"), "\(via): \(output.stdout)")
            if arguments[0] == "interfaces" { #expect(output.stdout.contains("a\\x1b[31mb"), "\(via): \(output.stdout)") }
        }
        let json = try reachctl(["interfaces", "--json", "--bus-address", harness.address])
        #expect(json.stdout.contains("a\\u001b[31mb"), "JSON keeps it exact: \(json.stdout)")
        try await Task.sleep(for: .milliseconds(200))
        #expect(!harness.daemonErrorLines.joined().contains("\u{1b}"), "the journal: \(harness.daemonErrorLines.suffix(5))")
    }
}
