import Foundation
import Testing

/// issue 42: help at 80 columns (a terminal's width, and ArgumentParser's when the output is
/// no terminal) never wraps an example mid-line: each one stays on its own indented line.
@Suite
struct HelpTextTests {
    @Test(arguments: ["", "status", "interfaces", "check", "why", "history", "monitor", "wait", "is", "hold", "metrics"])
    func examplesFitEightyColumns(_ command: String) throws {
        let (result, _) = try reachctl((command.isEmpty ? [] : [command]) + ["--help"], environment: ["COLUMNS": "80"])
        #expect(result.status == 0, "\(result)")
        var inExamples = false
        for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Examples") { inExamples = true; continue }
            if line.isEmpty { inExamples = false; continue }
            if inExamples { #expect(line.hasPrefix("  "), "reachctl \(command) --help wraps an example: '\(line)'") }
        }
    }
}
