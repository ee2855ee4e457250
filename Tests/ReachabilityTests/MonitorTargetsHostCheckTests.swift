import Foundation
import Synchronization
import Testing
@testable import Reachability

/// The in-process follower end to end: a real monitor, dnsmasq or a black hole, real routes.
/// (Its name puts it in scripts/test's timing pass: it measures retry delays.)
@Suite(rootOnly, .serialized)
struct MonitorTargetsHostCheckTests {
    final class Answers: Sendable {
        let list = Mutex<[CheckResult]>([])
        func of(_ target: String) -> [CheckResult] { list.withLock { $0.filter { $0.target == target } } }
    }

    @Test func followedTargetsAreAnsweredAgainWhenTheRoutesMove() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        let dns = try DNSMasqServer(in: scenario.server, address: DNSScenario.answering, records: ["up.test": ["203.0.113.10"]])
        let monitor = try scenario.monitor()
        defer { monitor.stop() }
        let answers = Answers()
        let targets = MonitorTargets(monitor: monitor, settings: .init(lookups: 8, hostTimeout: .seconds(3))) { _, result in
            answers.list.withLock { $0.append(result) }
        }
        defer { targets.stop() }
        targets.follow("203.0.113.10") { _ in }
        try await waitUntil("an address is answered on following") { answers.of("203.0.113.10").last?.isReachable == true }
        var known: CheckResult?
        targets.follow("203.0.113.10") { known = $0 }
        #expect(known?.isReachable == true, "a later follower gets the known answer at once")
        targets.follow("up.test") { _ in }
        try await waitUntil("up.test answered") { answers.of("up.test").last?.isReachable == true }
        #expect(targets.answer(for: "up.test")?.interface == "up0")
        let asked = dns.queries(for: "up.test")

        try scenario.client.ip("route del default")
        try await waitUntil("both answered noRoute") {
            answers.of("up.test").last?.reason == .noRoute && answers.of("203.0.113.10").last?.reason == .noRoute
        }
        #expect(dns.queries(for: "up.test") == asked, "asked again through the cache")
        targets.unfollow("up.test")
        try await waitUntil("unfollowed") { targets.count == 1 }
    }

    @Test func aNameWhoseDNSIsDeadIsAskedAgainAfterOneThenTwoSeconds() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.blackHole)
        let hole = try DNSBlackHole(in: scenario.server, address: DNSScenario.blackHole)
        // No IPv6 on the uplink: its link-local address would come a second later, a routing
        // change that asks the name again at once and starts its backoff afresh.
        try scenario.client.exec("/usr/sbin/sysctl", ["-qw", "net.ipv6.conf.up0.disable_ipv6=1"])
        let monitor = try scenario.monitor()
        defer { monitor.stop() }
        let answers = Answers()
        let start = ContinuousClock.now
        let times = Mutex<[Duration]>([])
        let targets = MonitorTargets(monitor: monitor, settings: .init(lookups: 8, hostTimeout: .milliseconds(300))) { _, result in
            answers.list.withLock { $0.append(result) }
            times.withLock { $0.append(ContinuousClock.now - start) }
        }
        defer { targets.stop() }
        targets.follow("dead.test") { _ in }
        // Answers near 0.3 s, 1.6 s (+1 s +-20%) and 3.9 s (+2 s +-20%); the next not before 7 s.
        try await Task.sleep(for: .seconds(6))
        let seen = answers.of("dead.test")
        #expect(seen.count == 3, "\(seen.count) answers, at \(times.withLock { $0 }): \(seen.map { $0.message ?? "" })")
        #expect(seen.allSatisfy { $0.reason == .dnsTimeout })
        #expect(Set(hole.drainQueriedNames()).contains("dead.test"))
    }
}

/// Callers' code run by `answered` may unfollow. The sanitizer run of 2026-11-24 found it: an
/// SCNetworkReachability dropped by its owner while the monitor's thread handed it an answer was
/// released on that thread, inside `publish`'s lock, and its deinit's unfollow locked it again:
/// "Recursive call to lock Mutex", a trap (SystemConfigurationKernelTests'
/// tenThousandReferencesInProcessLeaveNothingBehind, once in a run).
@Suite(rootOnly)
struct MonitorTargetsReentryTests {
    /// What an SCNetworkReachability is to the follower: it unfollows in its deinit.
    final class Reference: Sendable {
        let targets: MonitorTargets
        let target: String
        init(_ targets: MonitorTargets, _ target: String) {
            self.targets = targets
            self.target = target
        }
        deinit { targets.unfollow(target) }
    }

    @Test func theLastReferenceMayBeDroppedOnTheMonitorsThread() async throws {
        let ns = try TestNamespace("reentry")
        let monitor = try ns.monitor()
        defer { monitor.stop() }
        // The references the follower's answers are for, taken (and released) by `answered`,
        // on the monitor's thread, the way a reference's last owner can let go meanwhile.
        let held = Mutex<[String: Reference]>([:])
        let answers = Mutex(0)
        let targets = MonitorTargets(monitor: monitor, settings: .init(lookups: 8, hostTimeout: .seconds(3))) { target, _ in
            let reference = held.withLock { $0.removeValue(forKey: target) }
            answers.withLock { $0 += 1 }
            _ = reference  // released here, at the end of the call: its deinit unfollows
        }
        defer { targets.stop() }
        for target in ["127.0.0.1", "::1", "127.0.0.2"] {
            held.withLock { $0[target] = Reference(targets, target) }
            targets.follow(target) { _ in }
        }
        try await waitUntil("every reference released on the monitor's thread") {
            held.withLock { $0.isEmpty } && targets.count == 0
        }
        #expect(answers.withLock { $0 } >= 3)
    }

    @Test func answeredMayUnfollowItself() async throws {
        let ns = try TestNamespace("reentry")
        let monitor = try ns.monitor()
        defer { monitor.stop() }
        let followed = Mutex<MonitorTargets?>(nil)
        let targets = MonitorTargets(monitor: monitor, settings: .init(lookups: 8, hostTimeout: .seconds(3))) { target, _ in
            followed.withLock { $0 }?.unfollow(target)
        }
        defer { targets.stop() }
        followed.withLock { $0 = targets }
        defer { followed.withLock { $0 = nil } }  // the cycle through `answered`
        targets.follow("127.0.0.1") { _ in }
        try await waitUntil("unfollowed from its own answer") { targets.count == 0 }
    }
}
