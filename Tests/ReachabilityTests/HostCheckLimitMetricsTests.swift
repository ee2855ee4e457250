import Foundation
import Reachability
import Testing

/// issue 24: every limit that refuses a CheckHost, and every check cancelled because its caller
/// left, shows in GetMetrics, each under its own reason, driven by real callers as `nobody`
/// and root against a DNS server that never answers (`FairDNSTests.Setup`).
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/setpriv"), "needs setpriv"))
struct HostCheckLimitMetricsTests {
    static func refused(_ metrics: String, _ reason: CheckRefusal) -> Double? {
        MetricsDaemonTests.value(metrics, "reachd_host_checks_refused_total{reason=\"\(reason.rawValue)\"}")
    }

    /// `count` calls from a caller as `uid` (nil: root); returns once every call is sent and `errors` refusals are in.
    static func send(
        _ setup: FairDNSTests.Setup, as uid: Int?, _ count: Int, _ suffix: String, per: Int, errors: Int
    ) async throws -> ChildProcess {
        let arguments = ["-c", FairDNSTests.abandoner, setup.harness.address, "\(count)", suffix, "\(per)"]
        let child = try uid.map { try setup.asUser($0, "/usr/bin/python3", arguments) } ?? ChildProcess("/usr/bin/python3", arguments)
        try await eventually("\(count) calls sent, \(errors) refused: \(child.lines.suffix(3)) \(child.errorLines)", every: .milliseconds(20)) {
            child.lines.contains("sent") && child.lines.filter { $0.hasPrefix("error ") }.count >= errors
        }
        return child
    }

    @Test func refusalsAndAbandonedChecksAreCountedByReason() async throws {
        let setup = try await FairDNSTests.Setup(config: "[Checks]\nLookupsPerUserPerSecond=1\nLookupBurstPerUser=1100\n")
        defer { setup.stop() }
        let client = try ReachabilityClient(bus: .address(setup.harness.address))
        let before = try client.metrics()
        for reason in CheckRefusal.allCases { #expect(Self.refused(before, reason) == 0, "\(reason)") }
        #expect(MetricsDaemonTests.value(before, "reachd_host_checks_abandoned_total") == 0)

        // nobody: 1,030 black-holed checks; its share is 1,024 in flight, the 6 past it are refused.
        let nobody = try await Self.send(setup, as: 65534, 1030, "hole.test", per: 103, errors: 6)
        defer { nobody.kill() }
        try await Task.sleep(for: .milliseconds(300))
        let shareRefusals = nobody.lines.filter { $0.hasPrefix("error ") }
        #expect(shareRefusals.count == 6 && shareRefusals.allSatisfy { $0.contains("LimitExceeded") && $0.contains("the most one user may have") },
                "\(shareRefusals.prefix(3))")
        #expect(Self.refused(try client.metrics(), .shareFull) == 6)

        // root: 3,080 more; reachd holds 4,096 in flight from everyone, the 8 past it are refused.
        let root = try await Self.send(setup, as: nil, 3080, "root.hole.test", per: 110, errors: 8)
        defer { root.kill() }
        try await Task.sleep(for: .milliseconds(300))
        let capRefusals = root.lines.filter { $0.hasPrefix("error ") }
        #expect(capRefusals.count == 8 && capRefusals.allSatisfy { $0.contains("the most it holds") }, "\(capRefusals.prefix(3))")
        var metrics = try client.metrics()
        #expect(Self.refused(metrics, .inFlightCap) == 8)
        #expect(MetricsDaemonTests.value(metrics, "reachd_host_checks_abandoned_total") == 0, "nobody has left yet")

        // Both leave: every check they held is cancelled with its lookup, and counted.
        nobody.kill()
        root.kill()
        try await eventually("the 4,096 abandoned checks are counted", every: .milliseconds(50)) {
            metrics = try client.metrics()
            return MetricsDaemonTests.value(metrics, "reachd_host_checks_abandoned_total") == 4096
        }

        // nobody again, on names that answer: what is left of its burst passes, the rest is
        // refused by its lookup rate.
        let again = try await Self.send(setup, as: 65534, 300, "up.test", per: 100, errors: 1)
        defer { again.kill() }
        try await eventually("all 300 answered", every: .milliseconds(20)) {
            again.lines.filter { $0.hasPrefix("error ") || $0.hasPrefix("answer ") }.count == 300
        }
        let rateRefusals = again.lines.filter { $0.hasPrefix("error ") }
        #expect(rateRefusals.allSatisfy { $0.contains("LookupsPerUserPerSecond=1,") }, "\(rateRefusals.prefix(3))")
        metrics = try client.metrics()
        #expect(Self.refused(metrics, .rateLimited) == Double(rateRefusals.count) && rateRefusals.count >= 100, "\(rateRefusals.count) refused")
        #expect(Self.refused(metrics, .shareFull) == 6)
        #expect(Self.refused(metrics, .inFlightCap) == 8)
        print("limit metrics: share_full 6, in_flight_cap 8, abandoned 4096, rate_limited \(rateRefusals.count) of 300")
    }

    /// The bounds are reachd.conf's (`[Limits] MaxHostChecks=`, `MaxHostChecksPerUser=`), and each
    /// refusal names the setting that refused it.
    @Test func theLimitsAreConfiguredAndNamedInTheirRefusals() async throws {
        let setup = try await FairDNSTests.Setup(config: "[Limits]\nMaxHostChecks=20\nMaxHostChecksPerUser=4\n")
        defer { setup.stop() }
        // nobody: 6 black-holed checks, 4 its share.
        let nobody = try await Self.send(setup, as: 65534, 6, "hole.test", per: 6, errors: 2)
        defer { nobody.kill() }
        let share = nobody.lines.filter { $0.hasPrefix("error ") }
        #expect(share.count == 2 && share.allSatisfy { $0.contains("(MaxHostChecksPerUser=4)") }, "\(share)")
        // root: 20 more; 4 are nobody's, so 16 fit, the 4 past them are refused.
        let root = try await Self.send(setup, as: nil, 20, "root.hole.test", per: 20, errors: 4)
        defer { root.kill() }
        let cap = root.lines.filter { $0.hasPrefix("error ") }
        #expect(cap.count == 4 && cap.allSatisfy { $0.contains("(MaxHostChecks=20)") }, "\(cap)")
    }

    /// issue 44: 1,000 checks against a black hole from 8 callers (the test bus lets one user open
    /// 8 connections), then the callers leave: every ledger of what reachd holds for them (calls
    /// owed, checks running with their lookups, clients recorded) reads 0 again, and the checks
    /// are counted abandoned.
    @Test func afterAThousandCallersAbandonTheirChecksEveryLedgerReadsZero() async throws {
        let setup = try await FairDNSTests.Setup(config: "")
        defer { setup.stop() }
        let client = try ReachabilityClient(bus: .address(setup.harness.address))
        func ledgers(_ metrics: String) -> [String: Double] {
            Dictionary(uniqueKeysWithValues: ["reachd_host_check_calls_in_flight", "reachd_host_checks_running", "reachd_bus_clients_holding"].map {
                ($0, MetricsDaemonTests.value(metrics, $0) ?? -1)
            })
        }
        let callers = try await Self.send(setup, as: nil, 1000, "hole.test", per: 125, errors: 0)
        defer { callers.kill() }
        var metrics = try client.metrics()
        try await eventually("1,000 calls held: \(ledgers(metrics))", every: .milliseconds(50)) {
            metrics = try client.metrics()
            return ledgers(metrics)["reachd_host_check_calls_in_flight"] == 1000
        }
        #expect(ledgers(metrics)["reachd_bus_clients_holding"] == 8)
        #expect((ledgers(metrics)["reachd_host_checks_running"] ?? 0) >= 1000)
        callers.kill()
        try await eventually("every ledger back to 0: \(ledgers(metrics))", every: .milliseconds(50)) {
            metrics = try client.metrics()
            return ledgers(metrics).values.allSatisfy { $0 == 0 }
        }
        #expect(MetricsDaemonTests.value(metrics, "reachd_host_checks_abandoned_total") == 1000)
    }
}
