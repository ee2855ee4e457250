import Foundation
import Testing
@testable import Reachability

/// issue 24: the resolver's slots are shared per owner, with a reserve only the system takes, and
/// a cancelled lookup gives its slot back at once. Lookups go to a DNS black hole, so every one
/// started holds its slot (and its socket) until cancelled: the descriptors count the slots.
@Suite(rootOnly)
struct ResolverShareTests {
    @Test func usersTakeTheirShareTheSystemItsReserveAndCancellingFreesASlotAtOnce() async throws {
        let dns = try DNSServers()
        try dns.blackHole(on: "127.0.0.2")
        try dns.writeResolvConf(nameservers: ["127.0.0.2"])
        let path = dns.resolvConfPath
        let check = ResolverTests.LoopChecks()
        try await dns.onLoopThread {
            // 8 slots: a reserve of 2 for the system, 3 at most for each other owner.
            let resolver = try HostResolver(options: .init(maxConcurrent: 8, resolvConfPath: path))
            let completions = ResolverTests.Completions()
            let deadline = ContinuousClock.now + .seconds(30)
            var first: [HostResolver.RequestID] = []
            for index in 0..<10 {
                first.append(resolver.resolve("a\(index).test", owner: .user(1000), deadline: deadline, completion: completions.record(index)))
            }
            check(resolver.descriptors.count == 3, "user 1000 holds its share of 3: \(resolver.descriptors.count)")
            for index in 10..<20 {
                resolver.resolve("b\(index).test", owner: .user(1001), deadline: deadline, completion: completions.record(index))
            }
            check(resolver.descriptors.count == 6, "user 1001 its share too: \(resolver.descriptors.count)")
            resolver.resolve("c.test", owner: .shared, deadline: deadline, completion: completions.record(20))
            check(resolver.descriptors.count == 6, "a third owner waits: only the reserve is left")
            resolver.resolve("system1.test", owner: .system, deadline: deadline, completion: completions.record(21))
            resolver.resolve("system2.test", owner: .system, deadline: deadline, completion: completions.record(22))
            check(resolver.descriptors.count == 8, "the system starts at once, in the reserve: \(resolver.descriptors.count)")

            // User 1000 leaves: every one of its lookups is cancelled, its slots free at once
            // (5 run), and one goes to the oldest waiting lookup whose owner is under its share:
            // the third owner's (user 1001's wait, at their share).
            for id in first { resolver.cancel(id) }
            check(resolver.descriptors.count == 6, "the third owner's lookup started in a freed slot: \(resolver.descriptors.count)")
            resolver.resolve("b-late.test", owner: .user(1001), deadline: deadline, completion: completions.record(23))
            check(resolver.descriptors.count == 6, "user 1001 stays at its share")
            resolver.resolve("d1.test", owner: .user(1002), deadline: deadline, completion: completions.record(24))
            resolver.resolve("d2.test", owner: .user(1002), deadline: deadline, completion: completions.record(25))
            check(resolver.descriptors.count == 8, "a new user takes what the others left outside the reserve")
            resolver.resolve("d3.test", owner: .user(1002), deadline: deadline, completion: completions.record(26))
            check(resolver.descriptors.count == 8, "and no more")
            try runLoop(resolver, for: .milliseconds(50))
            check(completions.count == 0, "nothing completed: \(completions.count)")
        }
        check.report()
    }
}

/// The per-user rate of new lookups: a token bucket per Unix user other than root, on the
/// caller's clock.
@Suite struct LookupRateTests {
    @Test func aUserMayStartItsBurstThenItsRateAndOthersAreUntouched() {
        var rate = LookupRate(.init(perSecond: 2, burst: 3))
        let start = ContinuousClock.now
        for _ in 0..<3 { #expect(rate.admit(.user(1000), now: start) == nil) }
        let refusal = rate.admit(.user(1000), now: start)
        #expect(refusal?.contains("Unix user 1000") == true && refusal?.contains("LookupsPerUserPerSecond=2, LookupBurstPerUser=3") == true,
                "\(String(describing: refusal))")
        #expect(rate.admit(.user(1001), now: start) == nil, "another user has a bucket of its own")
        for _ in 0..<10 {
            #expect(rate.admit(.system, now: start) == nil)
            #expect(rate.admit(.shared, now: start) == nil)
        }
        #expect(rate.admit(.user(1000), now: start + .milliseconds(400)) != nil, "0.8 of a token after 0.4 s")
        #expect(rate.admit(.user(1000), now: start + .milliseconds(1000)) == nil, "two a second")
        #expect(rate.admit(.user(1000), now: start + .milliseconds(1000)) == nil)
        #expect(rate.admit(.user(1000), now: start + .milliseconds(1000)) != nil)
        // A long pause fills the bucket only to its size.
        for _ in 0..<3 { #expect(rate.admit(.user(1000), now: start + .seconds(60)) == nil) }
        #expect(rate.admit(.user(1000), now: start + .seconds(60)) != nil)
    }
}
