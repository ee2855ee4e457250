import Foundation
import Testing
@testable import Reachability
@testable import SystemConfiguration

/// issue 10: `SCNetworkReachabilityGetFlags` on a name whose DNS is black-holed returns by the
/// configured deadline (Apple's blocks 30-60 s, glibc's resolver 10 s and more), in-process and
/// through reachd, and a scheduled name then answers at once. The name ends in HostCheckTests so
/// scripts/test runs it in the timing pass, alone.
@Suite(rootOnly, .serialized)
struct SystemConfigurationHostCheckTests {
    static let deadline: Duration = .milliseconds(500)
    /// What a loaded 2-core machine may add to the deadline: a thread switch, a bus round trip.
    static let margin: Duration = .milliseconds(400)

    @Test func blackHoledNameAnswersByTheDeadlineInProcess() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.blackHole)
        let hole = try DNSBlackHole(in: scenario.server, address: DNSScenario.blackHole)
        try await withReachabilityService(
            namespace: scenario.client, resolvConf: scenario.resolvConf.path, hostTimeout: Self.deadline
        ) { service in
            try await Self.check(service: service)
        }
        #expect(hole.drainQueriedNames().contains("slow.test"), "the query went to the black hole")
    }

    @Test func blackHoledNameAnswersByTheDeadlineThroughReachd() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.blackHole)
        let hole = try DNSBlackHole(in: scenario.server, address: DNSScenario.blackHole)
        let harness = try DaemonHarness(
            scenario.client, config: "[Checks]\nDefaultTimeout=500ms\n", resolvConf: scenario.resolvConf.path)
        try await harness.ready()
        try await withReachabilityService(
            namespace: scenario.client, bus: harness.address, resolvConf: scenario.resolvConf.path,
            hostTimeout: Self.deadline
        ) { service in
            try await Self.check(service: service)
            #expect(service.answersFromDaemon)
        }
        #expect(hole.drainQueriedNames().contains("slow.test"))
    }

    /// GetFlags (what a client's `flags` property does) within the deadline, then a notifier
    /// started on the name: its synchronous GetFlags is bounded too, and once the first lookup
    /// answered, GetFlags on the scheduled name returns at once.
    static func check(service: SCReachabilityService) async throws {
        let reference = try #require(SCNetworkReachabilityCreateWithName(nil, "slow.test"))
        var flags = SCNetworkReachabilityFlags([.reachable])
        let start = ContinuousClock.now
        #expect(SCNetworkReachabilityGetFlags(reference, &flags))
        let took = ContinuousClock.now - start
        #expect(flags == [], "not reachable: DNS gave no answer")
        #expect(took >= deadline - .milliseconds(10), "took \(took)")
        #expect(took < deadline + margin, "took \(took)")

        let boxes = BoxCount()
        let notifier = NotifierClient(try #require(SCNetworkReachabilityCreateWithName(nil, "slow.test")), boxes: boxes)
        let started = ContinuousClock.now
        try notifier.startNotifier()
        #expect(ContinuousClock.now - started < deadline + margin)
        #expect(notifier.currentFlags == [])
        // The first lookup's answer reaches the callback (Apple announces a name's first answer too).
        try await waitUntil("the name's first answer", timeout: .seconds(10)) { notifier.callbackCount == 1 }
        let again = ContinuousClock.now
        var known = SCNetworkReachabilityFlags([.reachable])
        #expect(SCNetworkReachabilityGetFlags(notifier.reference, &known))
        #expect(known == [])
        #expect(ContinuousClock.now - again < .milliseconds(100), "a scheduled name answers from its last lookup")
        notifier.stopNotifier()
    }
}
