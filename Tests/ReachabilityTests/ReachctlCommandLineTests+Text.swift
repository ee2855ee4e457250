import Foundation
import Testing
@testable import Reachability

/// reachctl's text as a person at a terminal reads it: colour on a real pseudo-terminal and
/// never where the conventions say no, tables without their legend for scripts. In-process
/// (`--sysfs-root /`), where loopback is always up: its row reads `ready`, in green on a terminal.
extension ReachctlCommandLineTests {
    static let green = "\u{1B}[32mready\u{1B}[0m"

    /// reachctl on a pseudo-terminal of its own (util-linux `script`, which runs it under a pty
    /// and copies what it writes), with `environment` added to this process's.
    static func onTerminal(_ arguments: [String], environment: [String: String]) throws -> CommandResult {
        let command = ([reachctlPath()] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let child = try ChildProcess(
            "/usr/bin/script", ["-qec", command, "/dev/null"],
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new })
        let (status, stdout, stderr) = try child.finish(timeout: .seconds(120))
        return CommandResult(status: status, stdout: stdout.replacingOccurrences(of: "\r\n", with: "\n"), stderr: stderr)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs util-linux script"))
    func statesAreColouredOnATerminalOnly() throws {
        let terminal = ["TERM": "xterm-256color", "NO_COLOR": ""]
        let coloured = try Self.onTerminal(["interfaces"] + Self.local, environment: terminal)
        #expect(coloured.status == 0, "\(coloured)")
        #expect(coloured.stdout.contains(Self.green), "\(coloured.stdout.debugDescription)")
        // The header and the other columns stay plain: only the state is painted.
        #expect(coloured.stdout.hasPrefix("INDEX  NAME"), "\(coloured.stdout.debugDescription)")

        // Each convention turns it off, on the same terminal.
        for (arguments, environment) in [
            (["--no-color"], terminal),
            ([], terminal.merging(["NO_COLOR": "1"]) { $1 }),
            ([], ["TERM": "dumb", "NO_COLOR": ""]),
        ] {
            let plain = try Self.onTerminal(["interfaces"] + arguments + Self.local, environment: environment)
            #expect(plain.status == 0, "\(arguments) \(environment): \(plain)")
            #expect(plain.stdout.contains("ready"), "\(arguments) \(environment): \(plain.stdout)")
            #expect(!plain.stdout.contains("\u{1B}"), "\(arguments) \(environment): \(plain.stdout.debugDescription)")
        }
        // A pipe (this test reads one) gets no colour whatever TERM says.
        let (piped, _) = try reachctl(["interfaces"] + Self.local, environment: terminal)
        #expect(piped.stdout.contains("ready") && !piped.stdout.contains("\u{1B}"), "\(piped.stdout.debugDescription)")
    }

    @Test func noLegendDropsTheHeaderLineOnly() throws {
        let table = try reachctl(["interfaces"] + Self.local)
        let bare = try reachctl(["interfaces", "--no-legend"] + Self.local)
        #expect(table.status == 0 && bare.status == 0, "\(bare.stderr)")
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("INDEX  NAME  KIND") == true, "\(table.stdout)")
        #expect(bare.stdout.split(separator: "\n") == Array(lines.dropFirst()), "\(bare.stdout)")
        #expect(bare.stdout.contains(" lo "), "loopback is listed: \(bare.stdout)")
        // Before the command too, as with systemctl.
        let before = try reachctl(["--no-legend", "interfaces"] + Self.local)
        #expect(before.status == 0 && before.stdout.split(separator: "\n") == Array(lines.dropFirst()), "\(before)")
    }

    @Test func defaultTextSpeaksWordsAndVerboseAddsAppleFlagsAndTheGeneration() throws {
        let table = try reachctl(["interfaces"] + Self.local).stdout
        #expect(table.contains("  ready  ") && !table.contains("reachable"), "\(table)")
        let verboseTable = try reachctl(["interfaces", "--verbose"] + Self.local).stdout
        #expect(verboseTable.contains(" FLAGS ") && verboseTable.contains("reachable"), "\(verboseTable)")

        let status = try reachctl(["status"] + Self.local)
        #expect(status.stdout.hasPrefix("State: "), "\(status.stdout)")
        #expect(!status.stdout.contains("Flags:") && !status.stdout.contains("Generation:"), "\(status.stdout)")
        #expect(status.stdout.contains("\nDNS: "), "\(status.stdout)")
        let verbose = try reachctl(["--verbose"] + Self.local)
        #expect(verbose.stdout.contains("\nFlags: ") && verbose.stdout.contains("\nGeneration: "), "\(verbose.stdout)")
    }
}
