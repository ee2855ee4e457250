import Foundation
import Testing
@testable import Reachability

/// Host checks end to end: a real dnsmasq, a real black hole, the real kernel's routes.
/// On threads of their own: they time the checks they await, and in two fresh-clone runs of five
/// an NXDOMAIN's check (0.1 s alone) came back to its test on the pool after 5.54 s, beside the
/// timing pass's 51 other tests.
@Suite(rootOnly, .serialized, .ownThreads)
struct HostCheckTests {
    @Test func answeredNameIsReachableViaTheUplink() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        let dns = try DNSMasqServer(in: scenario.server, address: DNSScenario.answering, records: ["up.test": ["203.0.113.10", "2001:db8::10"]])
        let monitor = try scenario.monitor()
        let result = try await monitor.check("up.test", timeout: .seconds(3))
        #expect(result.isReachable)
        #expect(result.interface == "up0")
        #expect(result.gateway == IPAddress("192.0.2.1"))
        #expect(result.addresses == [IPAddress("203.0.113.10")!, IPAddress("2001:db8::10")!])
        #expect(result.reason == nil)
        #expect(dns.queries(for: "up.test") >= 1)

        let start = ContinuousClock.now
        let missing = try await monitor.check("nothere.test", timeout: .seconds(10))
        #expect(missing.reason == .dnsNotFound)
        #expect(!missing.isReachable)
        // NXDOMAIN is an answer, not a silence: it ends the check long before its 10 s deadline.
        // Half of it: a datagram lost on a loaded machine costs c-ares a retransmission, at a
        // quarter of the deadline, and one run in many on a busy 2-core VM took 1.9 s with a 3 s
        // deadline; a silence would take all 10 s.
        print("host check timing: NXDOMAIN answered after \(ContinuousClock.now - start)")
        #expect(ContinuousClock.now - start < .seconds(5), "NXDOMAIN answers well before the deadline")
    }

    @Test func cachedAnswerSendsNoQueryAndFollowsRoutes() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        let dns = try DNSMasqServer(in: scenario.server, address: DNSScenario.answering, records: ["up.test": ["203.0.113.10"]])
        let monitor = try scenario.monitor()
        #expect(try await monitor.check("up.test").isReachable)
        let asked = dns.queries(for: "up.test")
        #expect(asked >= 1)
        #expect(try await monitor.check("up.test").isReachable)
        #expect(dns.queries(for: "up.test") == asked, "a second check within the TTL sends no query")

        // The cached answer's reachability follows the routes: no default route, no way there.
        try scenario.client.ip("route del default")
        try await eventually(monitor, "default route gone") { $0.host.state != .online }
        let cut = try await monitor.check("up.test")
        #expect(cut.reason == .noRoute)
        #expect(cut.addresses == [IPAddress("203.0.113.10")!])
        #expect(dns.queries(for: "up.test") == asked)
    }

    @Test func noRouteToTheServerAnswersAtOnceWithoutAQuery() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        let dns = try DNSMasqServer(in: scenario.server, address: DNSScenario.answering, records: ["up.test": ["203.0.113.10"]])
        try scenario.client.ip("route del default")
        let monitor = try scenario.monitor()
        let start = ContinuousClock.now
        let result = try await monitor.check("up.test", timeout: .seconds(5))
        // At once: nowhere near the 5 s deadline (the margin only absorbs a loaded 2-core machine).
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(!result.isReachable)
        #expect(result.reason == .noRoute)
        #expect(result.message?.contains(DNSScenario.answering) == true)
        try await Task.sleep(for: .milliseconds(100))
        #expect(dns.queries(for: "up.test") == 0, "the DNS server saw no query")
    }

    @Test func blackHoleAnswersAtTheDeadlineWhileAddressChecksGoOn() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.blackHole)
        let hole = try DNSBlackHole(in: scenario.server, address: DNSScenario.blackHole)
        let monitor = try scenario.monitor()
        let deadline = Duration.milliseconds(500)

        let start = ContinuousClock.now
        let one = try await monitor.check("slow.test", timeout: deadline)
        let took = ContinuousClock.now - start
        #expect(one.reason == .dnsTimeout)
        #expect(took >= deadline)
        #expect(took < deadline + .milliseconds(150), "took \(took)")

        // 200 at once, all by the deadline plus a margin; an address check meanwhile answers at once.
        let many = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: (CheckResult, Duration).self) { group in
            for i in 0..<200 {
                group.addTask {
                    let begin = ContinuousClock.now
                    let result = try await monitor.check("slow\(i).test", timeout: deadline)
                    return (result, ContinuousClock.now - begin)
                }
            }
            try await Task.sleep(for: .milliseconds(100))
            let addressStart = ContinuousClock.now
            let address = monitor.check(address: "203.0.113.5")
            let addressTook = ContinuousClock.now - addressStart
            #expect(address.isReachable)
            #expect(addressTook < .milliseconds(20), "address check took \(addressTook) during 200 host checks")
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 200)
        #expect(results.allSatisfy { $0.0.reason == .dnsTimeout })
        let slowest = results.map(\.1).max() ?? .zero
        #expect(slowest < deadline + .milliseconds(250), "slowest took \(slowest)")
        #expect(ContinuousClock.now - many < deadline + .milliseconds(300))
        _ = hole
    }

    /// A lookup whose turn comes with less than `HostResolver.minimumStartLead` left is never
    /// started: it answers dnsTimeout at its own deadline and no query for it reaches the wire.
    /// One lookup at a time: "first" holds the slot until its deadline; "second" is due 30 ms
    /// later (too little to start), "third" 200 ms later (enough).
    @Test func aLookupThatCannotFinishIsAnsweredAtItsDeadlineWithoutAQuery() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.blackHole)
        let hole = try DNSBlackHole(in: scenario.server, address: DNSScenario.blackHole)
        let monitor = try scenario.monitor(maximumConcurrentLookups: 1)
        let start = ContinuousClock.now
        let first = start + .milliseconds(400)
        let second = first + .milliseconds(30)
        let third = first + .milliseconds(200)
        async let a = monitor.check(host: "first.test", deadline: first)
        try await Task.sleep(for: .milliseconds(20))
        async let b = monitor.check(host: "second.test", deadline: second)
        async let c = monitor.check(host: "third.test", deadline: third)
        let (resultB, endB) = (try await b, ContinuousClock.now)
        let (resultA, resultC) = (try await a, try await c)
        #expect(resultA.reason == .dnsTimeout)
        #expect(resultB.reason == .dnsTimeout)
        #expect(resultC.reason == .dnsTimeout)
        #expect(endB >= second, "answered \(second.duration(to: endB)) before its deadline")
        #expect(endB < second + .milliseconds(150), "answered \(second.duration(to: endB)) after its deadline")
        let asked = Set(hole.drainQueriedNames())
        #expect(asked.contains("first.test") && asked.contains("third.test"), "\(asked)")
        #expect(!asked.contains("second.test"), "a query for the lookup that could not finish: \(asked)")
    }

    /// Nothing listens on port 53 of the nameserver: ICMP port unreachable comes back, and the
    /// check fails at once naming it, instead of timing out after c-ares' retries.
    @Test func aClosedDNSPortFailsAtOnceNamingTheRefusal() async throws {
        let closed = "198.51.100.55"
        let scenario = try DNSScenario(nameserver: closed)
        try scenario.server.ip("addr add \(closed)/32 dev lo")
        let monitor = try scenario.monitor()
        let start = ContinuousClock.now
        let result = try await monitor.check("up.test", timeout: .seconds(4))
        let took = ContinuousClock.now - start
        #expect(result.reason == .dnsFailure, "\(result)")
        #expect(result.message?.contains(closed) == true, "\(result.message ?? "nil")")
        #expect(result.message?.contains("ICMP port unreachable") == true, "\(result.message ?? "nil")")
        #expect(took < .milliseconds(500), "took \(took) of a 4 s deadline")
    }

    /// A server that answers REFUSED (dnsmasq for a name outside its zone, without upstream):
    /// the check fails at once, naming the server and the refusal.
    @Test func aRefusingDNSServerFailsAtOnceNamingTheRefusal() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        let dns = try DNSMasqServer(in: scenario.server, address: DNSScenario.answering, records: [:])
        let monitor = try scenario.monitor()
        let start = ContinuousClock.now
        let result = try await monitor.check("elsewhere.example", timeout: .seconds(4))
        let took = ContinuousClock.now - start
        #expect(result.reason == .dnsFailure, "\(result)")
        #expect(result.message == "the DNS server \(DNSScenario.answering) refused the query (REFUSED)", "\(result.message ?? "nil")")
        #expect(took < .milliseconds(500), "took \(took) of a 4 s deadline")
        #expect(dns.queries(for: "elsewhere.example") >= 1)
    }

    @Test func hostsFileAnswersWhenNoNameserverIsReachable() async throws {
        // A name of this machine's /etc/hosts other than localhost (which needs no file at all).
        let hosts = (try? String(contentsOfFile: "/etc/hosts", encoding: .utf8)) ?? ""
        var entry: (address: IPAddress, name: String)?
        for line in hosts.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard fields.count >= 2, let address = IPAddress(fields[0]), !fields[1].hasPrefix("localhost") else { continue }
            guard case .success = HostName.validate(fields[1]) else { continue }
            entry = (address, fields[1])
            break
        }
        guard let entry else {
            print("skipping: /etc/hosts names nothing but localhost")
            return
        }
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        try scenario.client.ip("route del default")
        let monitor = try scenario.monitor()
        let result = try await monitor.check(entry.name, timeout: .seconds(2))
        #expect(result.addresses.contains(entry.address), "\(result)")
        #expect(result.reason != .noRoute)
    }

    @Test func cancellationEndsTheCheck() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.blackHole)
        let hole = try DNSBlackHole(in: scenario.server, address: DNSScenario.blackHole)
        let monitor = try scenario.monitor()
        let task = Task { try await monitor.check("slow.test", timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(50))
        let start = ContinuousClock.now
        task.cancel()
        await #expect(throws: CheckCancelled.self) { try await task.value }
        #expect(ContinuousClock.now - start < .milliseconds(200))
        _ = hole
    }

    @Test(arguments: [
        ("", "empty"),
        ("bad name.test", "invalid character"),
        ("a..b", "empty label"),
        (String(repeating: "a", count: 64) + ".test", "63"),
        (String(repeating: "abcdefgh.", count: 30) + "test", "253"),
        ("-lead.test", "-lead"),
    ])
    func invalidHostNamesAreNamed(name: String, fragment: String) async throws {
        let ns = try TestNamespace("hinv")
        let monitor = try ns.monitor()
        let result = try await monitor.check(host: name, deadline: .now + .seconds(1))
        #expect(result.reason == .invalidTarget)
        #expect(result.message?.contains(fragment) == true, "message: \(result.message ?? "nil")")
    }

    @Test func localhostNeedsNoDNS() async throws {
        let ns = try TestNamespace("lh")
        let monitor = try ns.monitor()
        let result = try await monitor.check("localhost", timeout: .seconds(1))
        #expect(result.isReachable)
        #expect(result.flags.contains(.isLocalAddress))
        #expect(result.interface == "lo")
    }
}
