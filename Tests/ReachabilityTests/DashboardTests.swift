import Foundation
import Testing
@testable import Reachability

/// issue 32: the Grafana dashboard (packaging/reachd-dashboard.json, installed under
/// /usr/share/reachd). Grafana only finds a bad query when someone looks at the panel, so every
/// PromQL expression in it goes through promtool here: each one, its Grafana variables replaced,
/// becomes a recording rule of a scratch rule file, and `promtool check rules` parses them all.
@Suite struct DashboardTests {
    static let path = MetricsEndpointTests.packaging + "/reachd-dashboard.json"

    static func dashboard() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Every `expr` value anywhere in the JSON (panel targets), in document order.
    static func expressions(_ value: Any) -> [String] {
        if let object = value as? [String: Any] {
            return object.keys.sorted().flatMap { key -> [String] in
                if key == "expr", let text = object[key] as? String { return [text] }
                return expressions(object[key]!)
            }
        }
        if let array = value as? [Any] { return array.flatMap(expressions) }
        return []
    }

    /// What Grafana puts in place of its variables before it sends a query: the dashboard's
    /// own (`$job`, `$instance`, all of them selected) and the interval it computes.
    static func resolved(_ expression: String) -> String {
        var text = expression
        for (variable, value) in [("$__rate_interval", "5m"), ("$__interval", "1m"), ("$__range", "6h"), ("$job", ".+"), ("$instance", ".+")] {
            text = text.replacingOccurrences(of: variable, with: value)
        }
        return text
    }

    /// A rule file with one recording rule per expression; JSON strings are YAML scalars too.
    static func ruleFile(_ expressions: [String]) throws -> String {
        var text = "groups:\n  - name: reachd-dashboard\n    rules:\n"
        for (index, expression) in expressions.enumerated() {
            let quoted = String(decoding: try JSONSerialization.data(withJSONObject: expression, options: [.fragmentsAllowed]), as: UTF8.self)
            text += "      - record: reachd_dashboard:expr\(index)\n        expr: \(quoted)\n"
        }
        return text
    }

    static func promtoolCheckRules(_ text: String) throws -> DaemonHarness.Output {
        let directory = try makeScratchDirectory("dashboard")
        defer { removeTree(directory) }
        try text.write(toFile: directory + "/rules.yml", atomically: false, encoding: .utf8)
        return try DaemonHarness.execute("/usr/bin/promtool", ["check", "rules", directory + "/rules.yml"])
    }

    /// The panels Grafana imports: a title, unique ids, a data source input, and a query in
    /// every panel that is not a row.
    @Test func theDashboardIsWellFormed() throws {
        let dashboard = try Self.dashboard()
        #expect(dashboard["uid"] as? String == "reachd-reachability")
        #expect((dashboard["title"] as? String)?.isEmpty == false)
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        let ids = panels.compactMap { $0["id"] as? Int }
        #expect(ids.count == panels.count && Set(ids).count == ids.count, "panel ids: \(ids)")
        for panel in panels where panel["type"] as? String != "row" {
            let title = panel["title"] as? String ?? "?"
            #expect(!Self.expressions(panel).isEmpty, "\(title): no query")
            #expect(panel["gridPos"] is [String: Any], "\(title): no position")
            #expect((panel["description"] as? String)?.isEmpty == false, "\(title): no description")
        }
        let variables = try #require((dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]])
        #expect(variables.compactMap { $0["name"] as? String } == ["datasource", "job", "instance"])
    }

    /// promtool parses every expression: a typo in one fails here.
    @Test func promtoolParsesEveryExpression() throws {
        let expressions = Self.expressions(try Self.dashboard()).map(Self.resolved)
        #expect(expressions.count >= 25, "\(expressions.count) expressions")
        for expression in expressions {
            #expect(!expression.contains("$"), "an unresolved variable in \(expression)")
        }
        let check = try Self.promtoolCheckRules(try Self.ruleFile(expressions))
        #expect(check.status == 0 && check.stdout.contains("SUCCESS: \(expressions.count) rules found"), "\(check)")

        // The check is not vacuous: one broken expression among them fails it.
        let broken = try Self.promtoolCheckRules(try Self.ruleFile(expressions + ["sum by (instance) (reachd_stalled"]))
        #expect(broken.status != 0, "\(broken)")
    }

    /// The panels show series reachd exposes (or Prometheus and node_exporter make), and the
    /// ones a fleet watches are all there.
    @Test func theDashboardShowsOnlyRealSeriesAndTheOnesThatMatter() throws {
        let dashboard = try Self.dashboard()
        let expressions = Self.expressions(dashboard)
        let unknown = try MetricNames.unknown(in: expressions)
        #expect(unknown.isEmpty, "not exposed by reachd: \(unknown)")
        let all = expressions.joined(separator: "\n")
        for name in [
            "reachd_host_state", "reachd_stalled", "reachd_connectivity", "reachd_host_info", "reachd_interfaces",
            "reachd_interfaces_ready", "reachd_interfaces_stalled", "reachd_netlink_overruns_total", "reachd_netlink_resyncs_total",
            "reachd_changed_events_total", "reachd_watches", "reachd_host_check_duration_seconds_bucket",
            "reachd_dns_deadline_hits_total", "reachd_build_info", "reachd_offline_seconds_total", "reachd_degraded_seconds_total",
            "reachd_uplink_down_seconds_total", "reachd_unobserved_seconds_total",
        ] {
            #expect(all.range(of: #"\b\#(name)\{"#, options: .regularExpression) != nil, "no panel shows \(name)")
        }
        // The variables' queries name a real series too.
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        for variable in variables {
            guard let definition = variable["definition"] as? String else { continue }
            #expect(definition.contains("reachd_build_info"), "\(definition)")
        }
    }
}
