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

    /// issue 35: format characters (Cf) are invisible or reorder what a reader sees.
    @Test(arguments: [
        ("evil\u{202E}txt.exe", "evil\\u{202e}txt.exe"),
        ("\u{2066}a\u{2069}", "\\u{2066}a\\u{2069}"),
        ("pay\u{200B}pal", "pay\\u{200b}pal"),
        ("soft\u{AD}hyphen", "soft\\u{ad}hyphen"),
        ("\u{FEFF}bom", "\\u{feff}bom"),
        ("\u{202A}\u{202B}\u{202C}\u{202D}", "\\u{202a}\\u{202b}\\u{202c}\\u{202d}"),
        ("Ωμέγα עברית", "Ωμέγα עברית"),
    ])
    func formatCharactersAreWrittenOut(_ raw: String, _ shown: String) {
        #expect(raw.escapingControlCharacters() == shown)
    }

    @Test func anExcerptQuotesAtMost64ScalarsAndSaysTheLength() {
        #expect("wifi".inertExcerpt() == "'wifi'")
        let long = String(repeating: "a", count: 100_000)
        #expect(long.inertExcerpt() == "'\(String(repeating: "a", count: 64))'…(100000 bytes)")
        // Exactly 64: whole, no length.
        #expect(String(repeating: "b", count: 64).inertExcerpt() == "'\(String(repeating: "b", count: 64))'")
        // Escaped inside the quotes; the cut counts scalars, so a million combining marks are cut.
        #expect("a\u{202E}\u{1b}b".inertExcerpt() == "'a\\u{202e}\\x1bb'")
        let marks = "e" + String(repeating: "\u{301}", count: 1_000_000)
        #expect(marks.inertExcerpt().unicodeScalars.count < 100)
        #expect(marks.inertExcerpt().hasSuffix("…(2000001 bytes)"))
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

/// A probe answer whose Location carries terminal escapes, or is no http(s) URI at all: the
/// verdict is portal, but the bytes reach neither Portal, nor STATUS=, nor the journal, nor
/// reachctl; a relative Location is resolved against the probe's URL.
@Suite(rootOnly) struct HostileProbeAnswerTests {
    /// Port 8401 redirects with escapes in Location, 8402 to javascript:, 8403 to a relative path.
    static let servers = """
        import socket, threading
        answers = {
            8401: b"HTTP/1.1 302 Found\\r\\nLocation: http://portal.test/\\x01\\x02\\x1b[31m\\r\\nContent-Length: 0\\r\\n\\r\\n",
            8402: b"HTTP/1.1 302 Found\\r\\nLocation: javascript:alert(1)\\r\\nContent-Length: 0\\r\\n\\r\\n",
            8403: b"HTTP/1.1 302 Found\\r\\nLocation: /login?from=probe\\r\\nContent-Length: 0\\r\\n\\r\\n",
        }
        def serve(port):
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("0.0.0.0", port))
            listener.listen(16)
            while True:
                connection, _ = listener.accept()
                connection.recv(4096)
                connection.sendall(answers[port])
                connection.close()
        for port in answers:
            threading.Thread(target=serve, args=(port,), daemon=True).start()
        print("ready", flush=True)
        threading.Event().wait()
        """

    @Test func aHostileLocationNeverReachesAScreenRaw() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let server = try ChildProcess("/usr/bin/ip", ["netns", "exec", scenario.far.name, "/usr/bin/python3", "-c", Self.servers])
        defer { server.kill() }
        #expect(try server.firstLine(timeout: .seconds(10)) == "ready")
        let harness = try DaemonHarness(scenario.ns, config: "[Connectivity]\nURL=http://192.0.2.1:8401/generate_204\nTimeout=1s\n")
        defer { harness.shutdown() }
        try await harness.ready()
        let client = try harness.connect()
        func connectivity() throws -> String { try DaemonHarness.property(client, "Connectivity") }
        func portal() throws -> String { try DaemonHarness.property(client, "Portal") }
        try await eventually("Connectivity portal: \(harness.diagnostics)", every: .milliseconds(20)) { try connectivity() == "portal" }
        #expect(try portal() == "", "the escapes were published")
        let validated = try DaemonHarness.jsonData(try harness.busctlCall("Validate"))
        #expect(validated.count == 3 && validated[1] as? String == "" && (validated[2] as? String)?.contains("refused") == true, "\(validated)")
        let status = try reachctl(["status", "--bus-address", harness.address])
        #expect(!status.stdout.contains("\u{1b}") && !status.stdout.contains("\u{01}"), "\(status.stdout)")
        #expect(status.stdout.contains("portal"), "\(status.stdout)")
        #expect(!harness.notify.datagrams.contains { $0.text.contains("\u{1b}") }, "STATUS= stays inert")
        #expect(!harness.daemonErrorLines.joined().contains("\u{1b}"), "the journal stays inert")

        for (port, expected) in [(8402, ""), (8403, "http://192.0.2.1:8403/login?from=probe")] {
            try harness.writeConfig("[Connectivity]\nURL=http://192.0.2.1:\(port)/generate_204\nTimeout=1s\n")
            harness.daemon?.signal(SIGHUP)
            try await eventually("port \(port): Portal \(expected): \(harness.diagnostics)", every: .milliseconds(20)) {
                let answer = try DaemonHarness.jsonData(try harness.busctlCall("Validate"))
                return answer.first as? String == "portal" && answer[1] as? String == expected
                    && (expected != "" || (answer[2] as? String)?.contains("refused") == true)
            }
        }
    }
}

/// issue 51: `--json` is JSON whatever a string holds. Every C0 control the kernel allows in a
/// link's name (all but NUL, whitespace, '/' and ':'), DEL, every C1 control and the bidi and
/// zero-width format characters go through JSON's serializer and back unchanged, and every
/// `--json` output of reachctl with links so named, through reachd and in-process, parses.
@Suite(rootOnly) struct JSONControlCharacterTests {
    /// The characters, as the kernel takes them in names (15 bytes at most each; no byte 0xA0,
    /// which the kernel's ctype counts as a space, so no U+E0001).
    static let hostile: [Unicode.Scalar] = {
        let c0 = (UInt32(1)...0x1F).filter { !(0x09...0x0D).contains($0) } + [0x7F]
        let c1 = Array(UInt32(0x80)...0x9F)
        let format: [UInt32] = [0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
                                0x2066, 0x2067, 0x2068, 0x2069, 0xFEFF, 0x00AD, 0x061C]
        return (c0 + c1 + format).map { Unicode.Scalar($0)! }
    }()

    /// Link names made of `hostile`, each "j" and at most 14 more bytes.
    static var names: [String] {
        var names: [String] = []
        var current = "j"
        for scalar in hostile {
            if current.utf8.count + String(scalar).utf8.count > 15 {
                names.append(current)
                current = "j"
            }
            current.unicodeScalars.append(scalar)
        }
        return names + [current]
    }

    @Test func everyCharacterGoesThroughTheSerializerAndBack() throws {
        for scalar in Self.hostile {
            let value = "a" + String(scalar) + "b"
            let text = JSONValue.object([("name", .string(value))]).serialized()
            #expect(!text.unicodeScalars.contains(scalar), "U+\(String(scalar.value, radix: 16)) written out: \(text)")
            #expect(text.escapingControlCharacters(keepingNewlines: true) == text, "no terminal filter touches \(text)")
            let decoded = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            #expect(decoded?["name"] as? String == value, "\(text)")
        }
    }

    @Test func everyJSONOutputParsesWithTheseNamesThroughReachdAndInProcess() async throws {
        let ns = try TestNamespace()
        for (index, name) in Self.names.enumerated() {
            _ = try ns.exec("/usr/sbin/ip", ["link", "add", name, "type", "veth", "peer", "name", "jp\(index)"])
            _ = try ns.exec("/usr/sbin/ip", ["link", "set", name, "up"])
            _ = try ns.exec("/usr/sbin/ip", ["link", "set", "jp\(index)", "up"])
        }
        let harness = try DaemonHarness(ns)
        defer { harness.shutdown() }
        try await harness.ready(state: nil)
        let commands = [["status"], ["interfaces"], ["check", "127.0.0.1"], ["why"], ["is", "online"], ["history"]]
        for command in commands {
            for place in [["--bus-address", harness.address], ["--netns", ns.name]] where command != ["history"] || place[0] != "--netns" {
                let output = try reachctl(command + ["--json"] + place)
                let lines = output.stdout.split(separator: "\n")
                #expect(!lines.isEmpty, "\(command) \(place[0]): \(output)")
                for line in lines {
                    #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "\(command) \(place[0]) is JSON: \(line)")
                }
                if command == ["interfaces"] {
                    let shown = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) }
                        .flatMap { (($0 as? [String: Any])?["interfaces"] as? [[String: Any]]) ?? [] }.compactMap { $0["name"] as? String }
                    #expect(Set(Self.names).isSubset(of: Set(shown)), "every name exact in \(place[0]): \(shown)")
                }
            }
        }
    }
}
