import Foundation
import Testing
@testable import Reachability

/// issue 32: the alert rules a fleet loads (packaging/reachd-alerts.yml, installed under
/// /usr/share/reachd). promtool, Prometheus' own tool, checks them and runs their unit tests
/// (packaging/reachd-alerts.test.yml): a rule that never fires, fires too early, fires for the
/// wrong host or renders its annotations wrong fails here, not in a fleet at night.
@Suite struct AlertRulesTests {
    static let rules = MetricsEndpointTests.packaging + "/reachd-alerts.yml"
    static let unitTests = MetricsEndpointTests.packaging + "/reachd-alerts.test.yml"

    /// The alert names, in the file's order (`- alert: Name` lines).
    static func alertNames() throws -> [String] {
        try String(contentsOfFile: rules, encoding: .utf8).split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("- alert: ") ? String(trimmed.dropFirst("- alert: ".count)) : nil
        }
    }

    /// The alerts the task asks for, each under the name the documentation uses.
    static let expectedAlerts = [
        "ReachdDown", "ReachdMetricsAbsent", "ReachdMetricsAbsentEverywhere", "ReachdTextfileStale", "ReachdHostOffline",
        "ReachdHostStalled", "ReachdConnectivityNotFull", "ReachdNetlinkOverruns", "ReachdFlapping", "ReachdOfflineTooLong",
        "ReachdDNSDeadlineHits",
    ]

    /// The recording rules beside them (issue 46): outage minutes per day, by host and cause.
    static let recordingRules = ["reachd:offline_minutes:increase1d", "reachd:unobserved_minutes:increase1d"]

    @Test func promtoolChecksTheRules() throws {
        #expect(try Self.alertNames() == Self.expectedAlerts)
        let check = try DaemonHarness.execute("/usr/bin/promtool", ["check", "rules", Self.rules])
        #expect(check.status == 0 && check.stdout.contains("SUCCESS: \(Self.expectedAlerts.count + Self.recordingRules.count) rules found"), "\(check)")
        // Every alert pages or files a ticket, waits before it fires, and says what to do.
        let text = try String(contentsOfFile: Self.rules, encoding: .utf8)
        let blocks = text.components(separatedBy: "- alert: ").dropFirst()
        #expect(blocks.count == Self.expectedAlerts.count)
        for block in blocks {
            let name = block.prefix { !$0.isNewline }
            #expect(block.contains("\n        for: "), "\(name): no for:")
            #expect(block.contains("severity: critical") || block.contains("severity: warning"), "\(name): no severity")
            #expect(block.contains("summary: ") && block.contains("description: "), "\(name): no annotations")
        }
    }

    /// `promtool test rules`: every test case passes, and every rule has a case where it must
    /// stay quiet and one where it must fire (an empty and a non-empty exp_alerts).
    @Test func promtoolUnitTestsPassForEveryRule() throws {
        // promtool reads rule_files relative to the test file; the working directory does not matter.
        let run = try DaemonHarness.execute("/usr/bin/promtool", ["test", "rules", Self.unitTests], timeout: .seconds(60))
        #expect(run.status == 0 && run.stdout.contains("SUCCESS"), "\(run)")
        #expect(!run.stdout.contains("FAILED") && !run.stderr.contains("FAILED"), "\(run)")
        let tests = try String(contentsOfFile: Self.unitTests, encoding: .utf8)
        for name in Self.expectedAlerts {
            #expect(tests.contains("alertname: \(name)\n    exp_alerts: []"), "\(name): no case where it stays quiet")
            #expect(tests.contains("alertname: \(name)\n    exp_alerts:\n    - exp_labels:"), "\(name): no case where it fires")
        }
    }

    /// A broken expectation makes promtool, and so this suite, fail: the unit tests are not
    /// vacuous. The copy expects ReachdHostOffline a minute too early.
    @Test func aWrongExpectationFails() throws {
        let directory = try makeScratchDirectory("alert-rules")
        defer { removeTree(directory) }
        let tests = try String(contentsOfFile: Self.unitTests, encoding: .utf8)
        let quiet = "  - eval_time: 2m\n    alertname: ReachdHostOffline\n    exp_alerts: []\n"
        #expect(tests.contains(quiet))
        let broken = tests.replacingOccurrences(of: quiet, with: "").replacingOccurrences(
            of: "eval_time: 3m\n    alertname: ReachdHostOffline", with: "eval_time: 2m\n    alertname: ReachdHostOffline")
        try String(contentsOfFile: Self.rules, encoding: .utf8).write(toFile: directory + "/reachd-alerts.yml", atomically: false, encoding: .utf8)
        try broken.write(toFile: directory + "/reachd-alerts.test.yml", atomically: false, encoding: .utf8)
        let run = try DaemonHarness.execute("/usr/bin/promtool", ["test", "rules", directory + "/reachd-alerts.test.yml"], timeout: .seconds(60))
        #expect(run.status != 0 && (run.stdout + run.stderr).contains("FAILED"), "\(run)")
    }

    /// The rules use only series reachd exposes (or Prometheus and node_exporter make).
    @Test func rulesNameOnlyRealSeries() throws {
        let text = try String(contentsOfFile: Self.rules, encoding: .utf8)
        let expressions = MetricNames.expressions(inRules: text)
        #expect(expressions.count == Self.expectedAlerts.count + Self.recordingRules.count, "\(expressions)")
        let tests = try String(contentsOfFile: Self.unitTests, encoding: .utf8)
        for name in Self.recordingRules {
            #expect(text.contains("- record: \(name)\n") && tests.contains("- expr: \(name)\n"), "\(name): no unit test")
        }
        let unknown = try MetricNames.unknown(in: expressions)
        #expect(unknown.isEmpty, "not exposed by reachd: \(unknown)")
    }

    /// Every `Reachd...` alert name the documentation mentions is a rule in the file (the
    /// docs also name the Swift module ReachdReachability and, in docs/library.md, the library's
    /// public types ReachdOrInProcess and ReachdUnavailable, which are no alerts).
    @Test func theDocumentationNamesOnlyRulesThatExist() throws {
        let root = URL(fileURLWithPath: MetricsEndpointTests.packaging).deletingLastPathComponent().path
        let names = Set(try Self.alertNames()).union(["ReachdReachability", "ReachdOrInProcess", "ReachdUnavailable"])
        // Every guide and reference under docs/ too, whatever its name; not ARCHITECTURE.md, which
        // names Swift types (ReachdContract, ReachdOrInProcess) and no alert.
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs")
            .filter { $0.hasSuffix(".md") && $0 != "ARCHITECTURE.md" }.map { "docs/" + $0 }
        #expect(docs.contains("docs/fleets.md"), "\(docs)")
        for file in ["README.md", "packaging/README.md", "packaging/man/reachd.8", "packaging/man/reachd.conf.5",
                     "packaging/reachd.conf", "packaging/reachd-alerts.yml", "packaging/reachd-dashboard.json"] + docs {
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            let regex = try NSRegularExpression(pattern: #"\bReachd[A-Z][A-Za-z]+\b"#)
            for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let name = (text as NSString).substring(with: match.range)
                #expect(names.contains(name), "\(file) names \(name), which is no rule")
            }
        }
    }
}

/// The metric names PromQL text uses, against the ones reachd's exposition has.
enum MetricNames {
    /// Series that are not reachd's but that the rules and the dashboard may use: Prometheus'
    /// own and node_exporter's textfile collector's.
    static let others: Set<String> = ["up", "ALERTS", "node_textfile_mtime_seconds"]

    /// Every series name of a rendered exposition (histograms with their _bucket, _sum, _count).
    static func exposed() -> Set<String> {
        var sample = MetricsExpositionTests.sample(interfaces: MetricsExpositionTests.typical)
        // reachd's outage counters too (the in-process exposition has none).
        sample.outage = OutageTotals()
        return Set(MetricsExposition.render(sample).split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
            String($0.prefix { $0 != "{" && $0 != " " })
        })
    }

    /// The `expr:` texts of a rule file (one line, or a `|` block indented below it).
    static func expressions(inRules text: String) -> [String] {
        var found: [String] = []
        var block: [String]?
        var indent = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let leading = line.prefix { $0 == " " }.count
            if var lines = block {
                if !line.trimmingCharacters(in: .whitespaces).isEmpty && leading <= indent {
                    found.append(lines.joined(separator: "\n"))
                    block = nil
                } else {
                    lines.append(String(line))
                    block = lines
                    continue
                }
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("expr: ") else { continue }
            let value = trimmed.dropFirst("expr: ".count)
            if value == "|" { block = []; indent = leading } else { found.append(String(value)) }
        }
        if let lines = block { found.append(lines.joined(separator: "\n")) }
        return found
    }

    /// The metric names in `expressions` that neither reachd nor `others` provide. A name is an
    /// identifier before `{`, `[`, `)` or a space that is no PromQL keyword, function or label.
    static func unknown(in expressions: [String]) throws -> [String] {
        let known = exposed().union(others)
        let regex = try NSRegularExpression(pattern: #"\b(reachd_[a-z_]+|node_[a-z_]+|up|ALERTS)\b(?!\s*=)"#)
        var missing: [String] = []
        for expression in expressions {
            for match in regex.matches(in: expression, range: NSRange(expression.startIndex..., in: expression)) {
                let name = (expression as NSString).substring(with: match.range(at: 1))
                if !known.contains(name) { missing.append(name) }
            }
        }
        return missing
    }
}
