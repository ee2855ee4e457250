import Foundation
import Testing
@testable import Reachability

/// The resolver, its cache and host-name validation. The DNS tests run against real servers
/// (dnsmasq, black holes) in a network namespace of their own, the loop played by `runLoop`.
@Suite
struct ResolverTests {
    /// What completions delivered, with when, on the loop's thread.
    final class Completions {
        private(set) var outcomes: [Int: (outcome: HostResolver.Outcome, at: ContinuousClock.Instant)] = [:]

        func record(_ key: Int) -> (HostResolver.Outcome) -> Void {
            { outcome in
                precondition(self.outcomes[key] == nil, "completion \(key) ran twice")
                self.outcomes[key] = (outcome, .now)
            }
        }

        var count: Int { outcomes.count }
        subscript(key: Int) -> HostResolver.Outcome? { outcomes[key]?.outcome }
    }

    /// Expectations made on the loop's thread, where Swift Testing cannot attribute an issue to
    /// the running test: collected there, reported by the test itself with `report()`.
    final class LoopChecks: @unchecked Sendable {
        private var failures: [(String, Int)] = []

        func callAsFunction(_ condition: Bool, _ what: @autoclosure () -> String, line: Int = #line) {
            if !condition { failures.append((what(), line)) }
        }

        func report(sourceLocation: SourceLocation = #_sourceLocation) {
            for (what, line) in failures {
                Issue.record("on the loop thread, line \(line): \(what)", sourceLocation: sourceLocation)
            }
        }
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    // MARK: - Host names

    @Test(arguments: [
        "example.com", "EXAMPLE.com", "example.com.", "a", "xn--bcher-kva.example", "_dmarc.example.org",
        "host-1.sub.example", "1.2.3.4", String(repeating: "a", count: 63) + ".example",
        Array(repeating: String(repeating: "a", count: 49), count: 5).joined(separator: ".") + ".abc",  // 253
    ])
    func validHostNamesPassUnchanged(_ name: String) {
        #expect(HostName.validate(name) == .success(name))
    }

    @Test func invalidHostNamesSayWhatIsWrong() {
        func message(_ name: String) -> String? {
            if case .failure(let error) = HostName.validate(name) { return error.description }
            return nil
        }
        #expect(message("") == "invalid host name: empty")
        #expect(message("a..b") == "invalid host name 'a..b': empty label")
        #expect(message(".a") == "invalid host name '.a': empty label")
        #expect(message(".") == "invalid host name '.': empty label")
        #expect(message("a.b..") == "invalid host name 'a.b..': empty label")
        #expect(message("ex ample") == "invalid character ' ' at position 3 in 'ex ample'")
        #expect(message("exa\tmple") == "invalid character U+0009 at position 4 in 'exa\\x09mple'")
        #expect(message("bücher.example") == "invalid character 'ü' at position 2 in 'bücher.example'")
        #expect(message("a/b") == "invalid character '/' at position 2 in 'a/b'")
        #expect(message("::1") == "invalid character ':' at position 1 in '::1'")
        #expect(message("-a.example") == "invalid host name '-a.example': label '-a' begins with '-'")
        #expect(message("a.b-.example") == "invalid host name 'a.b-.example': label 'b-' ends with '-'")
        let long = String(repeating: "x", count: 64)
        // The name is quoted as an excerpt: its first 64 scalars, then its length.
        #expect(message(long + ".example") == "invalid host name '\(long)'…(72 bytes): label '\(long)' is 64 characters, at most 63")
        let name254 = Array(repeating: String(repeating: "a", count: 49), count: 5).joined(separator: ".") + ".abcd"
        #expect(name254.count == 254)
        #expect(message(name254) == "invalid host name '\(name254.prefix(64))'…(254 bytes): 254 characters, at most 253")
        // The trailing dot is not counted: 253 characters plus the dot are fine.
        let name253 = String(name254.dropLast())
        #expect(HostName.validate(name253 + ".") == .success(name253 + "."))
        #expect(HostName.validate(name254) == .failure(HostNameError(name: name254, problem: .tooLong(254))))
    }

    // MARK: - Cache

    @Test func positiveAnswersLiveForTheirTTL() {
        var cache = HostCache()
        let start = ContinuousClock.now
        let answer = HostResolver.Outcome.resolved([IPAddress("192.0.2.1")!], ttl: 60)
        cache.store("example.com", answer, now: start)
        #expect(cache.lookup("example.com", now: start) == answer)
        #expect(cache.lookup("EXAMPLE.Com", now: start) == answer)
        // The TTL handed out is what remains, rounded up.
        #expect(cache.lookup("example.com", now: start + .seconds(20)) == .resolved([IPAddress("192.0.2.1")!], ttl: 40))
        #expect(cache.lookup("example.com", now: start + .milliseconds(59_500)) == .resolved([IPAddress("192.0.2.1")!], ttl: 1))
        #expect(cache.lookup("example.com", now: start + .seconds(60)) == nil)
        #expect(cache.count == 0)
        // A trailing dot is another lookup (no search list), so another key.
        cache.store("example.com.", answer, now: start)
        #expect(cache.lookup("example.com", now: start) == nil)
    }

    @Test func ttlIsFlooredAtOneSecondAndCappedAtAnHour() {
        var cache = HostCache()
        let start = ContinuousClock.now
        let address = [IPAddress("2001:db8::1")!]
        cache.store("hosts-file", .resolved(address, ttl: 0), now: start)
        cache.store("long", .resolved(address, ttl: 86_400), now: start)
        #expect(cache.lookup("hosts-file", now: start + .milliseconds(999)) != nil)
        #expect(cache.lookup("hosts-file", now: start + .seconds(1)) == nil)
        #expect(cache.lookup("long", now: start) == .resolved(address, ttl: 3600))
        #expect(cache.lookup("long", now: start + .seconds(3599)) != nil)
        #expect(cache.lookup("long", now: start + .seconds(3600)) == nil)
    }

    @Test func negativeAnswersLiveFiveSecondsFailuresNotAtAll() {
        var cache = HostCache()
        let start = ContinuousClock.now
        cache.store("nothere.example", .notFound, now: start)
        cache.store("slow.example", .timedOut, now: start)
        cache.store("broken.example", .failed("Server failure (ARES_ESERVFAIL)"), now: start)
        cache.store("empty.example", .resolved([], ttl: 60), now: start)
        #expect(cache.lookup("nothere.example", now: start + .milliseconds(4999)) == .notFound)
        #expect(cache.lookup("nothere.example", now: start + .seconds(5)) == nil)
        #expect(cache.lookup("slow.example", now: start) == nil)
        #expect(cache.lookup("broken.example", now: start) == nil)
        #expect(cache.lookup("empty.example", now: start) == nil)
        #expect(cache.count == 0)
    }

    @Test func negativeLifetimeIsConfigurableAndZeroKeepsNone() {
        let start = ContinuousClock.now
        var longer = HostCache(negativeLifetime: .seconds(30))
        longer.store("nothere.example", .notFound, now: start)
        #expect(longer.lookup("nothere.example", now: start + .seconds(29)) == .notFound)
        #expect(longer.lookup("nothere.example", now: start + .seconds(30)) == nil)
        var none = HostCache(negativeLifetime: .zero)
        none.store("nothere.example", .notFound, now: start)
        #expect(none.lookup("nothere.example", now: start) == nil)
        #expect(none.count == 0)
    }

    @Test func aFullCacheDropsExpiredEntriesThenTheOneExpiringFirst() {
        var cache = HostCache(capacity: 3)
        let start = ContinuousClock.now
        let address = [IPAddress("192.0.2.1")!]
        cache.store("a", .resolved(address, ttl: 300), now: start)
        cache.store("b", .resolved(address, ttl: 100), now: start)
        cache.store("c", .resolved(address, ttl: 200), now: start)
        // Full, nothing expired: "b" expires first and goes.
        cache.store("d", .resolved(address, ttl: 400), now: start)
        #expect(cache.count == 3)
        #expect(cache.lookup("b", now: start) == nil)
        #expect(cache.lookup("a", now: start) != nil && cache.lookup("c", now: start) != nil)
        // Replacing an entry needs no room.
        cache.store("d", .notFound, now: start)
        #expect(cache.count == 3 && cache.lookup("a", now: start) != nil)
        // Later, "d" (negative, 5 s) and "c" (200 s) have expired: both make room, "a" stays.
        let later = start + .seconds(250)
        cache.store("e", .resolved(address, ttl: 10), now: later)
        #expect(cache.count == 2)
        #expect(cache.lookup("a", now: later) != nil && cache.lookup("e", now: later) != nil)
        // Bounded under a stream of names.
        for index in 0..<100 { cache.store("n\(index)", .resolved(address, ttl: UInt32(index + 1)), now: later) }
        #expect(cache.count == 3)
        #expect(["n97", "n98", "n99"].allSatisfy { cache.lookup($0, now: later) != nil })
    }

    // MARK: - Resolver without DNS traffic

    @Test func nameserversComeFromResolvConfInOrder() throws {
        let servers = try DNSServersFile(["nameserver 127.0.0.53", "search example.org", "nameserver 2001:db8::53"])
        let resolver = try HostResolver(options: .init(resolvConfPath: servers.path))
        #expect(resolver.nameservers() == [IPAddress("127.0.0.53")!, IPAddress("2001:db8::53")!])
        try servers.write(["nameserver 192.0.2.53"])
        #expect(resolver.nameservers() == [IPAddress("192.0.2.53")!])
    }

    @Test func anAnswerAvailableAtOnceIsDeliveredByTheLoopNotInsideResolve() throws {
        // c-ares answers IP literals and /etc/hosts names (localhost: RFC 6761) without any
        // traffic, from inside ares_getaddrinfo: the completion must still wait for the loop.
        let servers = try DNSServersFile(["nameserver 192.0.2.53"])
        let resolver = try HostResolver(options: .init(resolvConfPath: servers.path))
        let completions = Completions()
        resolver.resolve("192.0.2.1", deadline: .now + .seconds(5), completion: completions.record(0))
        resolver.resolve("localhost", deadline: .now + .seconds(5), completion: completions.record(1))
        let cancelled = resolver.resolve("192.0.2.2", deadline: .now + .seconds(5), completion: completions.record(2))
        #expect(completions.count == 0)
        #expect(resolver.descriptors.isEmpty)
        #expect(try #require(resolver.nextDeadline) <= .now)
        resolver.cancel(cancelled)
        resolver.processTimeouts()
        #expect(completions[0] == .resolved([IPAddress("192.0.2.1")!], ttl: 0))
        guard case .resolved(let addresses, _) = completions[1] else {
            Issue.record("localhost: \(String(describing: completions[1]))")
            return
        }
        #expect(addresses.contains(IPAddress("127.0.0.1")!))
        #expect(completions.count == 2)
        #expect(resolver.nextDeadline == nil)
    }

    @Test func deadlineHeapGivesInstantsInOrder() {
        var heap = DeadlineHeap<Int>()
        let base = ContinuousClock.now
        let offsets = [50, 10, 40, 10, 30, 0, 90, 20]
        for (key, offset) in offsets.enumerated() { heap.insert(base + .milliseconds(offset), key) }
        var taken: [Int] = []
        while let entry = heap.removeFirst() { taken.append(Int(base.duration(to: entry.instant) / .milliseconds(1))) }
        #expect(taken == offsets.sorted())
        heap.insert(base, 1)
        heap.insert(base + .seconds(1), 2)
        heap.prune { _, key in key != 1 }
        #expect(heap.first?.key == 2 && heap.count == 1)
        for key in 3...9 { heap.insert(base + .milliseconds(10 * key), key) }
        heap.compact { _, key in key % 3 == 0 }
        var kept: [Int] = []
        while let entry = heap.removeFirst() { kept.append(entry.key) }
        #expect(kept == [3, 6, 9])
    }

    // MARK: - Resolver against real servers

    @Suite(rootOnly)
    struct AgainstRealServers {
        @Test func answersNotFoundAndFailuresAreTold() async throws {
            let dns = try DNSServers()
            try dns.dnsmasq(on: "127.0.0.1")
            try dns.writeResolvConf(nameservers: ["127.0.0.1"])
            let path = dns.resolvConfPath
            let check = LoopChecks()
            let (results, elapsed) = try await dns.onLoopThread { () -> ([String: HostResolver.Outcome], Duration) in
                let resolver = try HostResolver(options: .init(resolvConfPath: path))
                var results: [String: HostResolver.Outcome] = [:]
                let start = ContinuousClock.now
                let names = ["up.test", "v4only.test", "nothere.test", "txt.test", "other.example"]
                for name in names {
                    resolver.resolve(name, deadline: .now + .seconds(5)) { results[name] = $0 }
                }
                try runLoop(resolver) { results.count == names.count }
                let elapsed = start.duration(to: .now)
                check(resolver.descriptors.isEmpty && resolver.nextDeadline == nil, "idle after all answers")
                return (results, elapsed)
            }
            check.report()
            #expect(elapsed < .milliseconds(500), "answers, not deadlines: \(elapsed)")
            #expect(results["up.test"] == .resolved([IPAddress("192.0.2.10")!, IPAddress("2001:db8::10")!], ttl: 300))
            #expect(results["v4only.test"] == .resolved([IPAddress("192.0.2.11")!], ttl: 300))
            #expect(results["nothere.test"] == .notFound)  // NXDOMAIN
            #expect(results["txt.test"] == .notFound)  // NOERROR without addresses
            // dnsmasq answers REFUSED (no upstream): the lookup ends at the refusal, naming it
            // (c-ares 1.18 alone would retry and then say "Could not contact DNS servers").
            #expect(results["other.example"] == .failed("the DNS server 127.0.0.1 refused the query (REFUSED)"))
        }

        /// A closed port is not a black hole: ICMP port unreachable comes back at once, and so
        /// does the answer. (c-ares 1.18 alone does not make the most of it: the error of the A
        /// query is consumed by the send of the AAAA query, the retry waits for its timer, and it
        /// ends in ECONNREFUSED or ETIMEOUT after rounds of retries.)
        @Test func aClosedPortFailsAtOnceNamingTheRefusal() async throws {
            let dns = try DNSServers()
            try dns.writeResolvConf(nameservers: ["127.0.0.3"])
            let (outcome, elapsed) = try await Self.resolveOne("up.test", with: dns, deadline: .seconds(4))
            print("resolver timing: closed port, 4 s deadline: \(String(describing: outcome)) after \(Self.ms(elapsed)) ms")
            #expect(outcome == .failed("the DNS server 127.0.0.3 refused the connection (ICMP port unreachable: nothing listens on its port 53)"))
            #expect(elapsed < .milliseconds(500))
        }

        @Test func aTrailingDotSkipsTheSearchList() async throws {
            let dns = try DNSServers()
            let log = try dns.dnsmasq(on: "127.0.0.1")
            try dns.writeResolvConf(nameservers: ["127.0.0.1"], extra: ["search test", "options ndots:1"])
            let path = dns.resolvConfPath
            let (bare, dotted) = try await dns.onLoopThread { () -> (HostResolver.Outcome?, HostResolver.Outcome?) in
                let resolver = try HostResolver(options: .init(resolvConfPath: path))
                var bare: HostResolver.Outcome?
                var dotted: HostResolver.Outcome?
                resolver.resolve("up", deadline: .now + .seconds(5)) { bare = $0 }
                try runLoop(resolver) { bare != nil }
                resolver.resolve("up.", deadline: .now + .seconds(5)) { dotted = $0 }
                try runLoop(resolver) { dotted != nil }
                return (bare, dotted)
            }
            #expect(bare == .resolved([IPAddress("192.0.2.10")!, IPAddress("2001:db8::10")!], ttl: 300))
            #expect(dotted == .failed("the DNS server 127.0.0.1 refused the query (REFUSED)"))  // see above
            let queries = dns.queries(inLog: log)
            #expect(queries.filter { $0.contains(" up.test ") }.count == 2, "\(queries)")  // A + AAAA, from "up" only
        }

        @Test func aBlackHoleTimesOutAtTheDeadline() async throws {
            let dns = try DNSServers()
            try dns.blackHole(on: "127.0.0.2")
            try dns.writeResolvConf(nameservers: ["127.0.0.2"])
            let path = dns.resolvConfPath
            let check = LoopChecks()
            let (outcome, late, socketsWhileWaiting) = try await dns.onLoopThread {
                () -> (HostResolver.Outcome?, Duration, Int) in
                let resolver = try HostResolver(options: .init(resolvConfPath: path))
                var outcome: HostResolver.Outcome?
                var finishedAt = ContinuousClock.now
                let deadline = ContinuousClock.now + .milliseconds(500)
                resolver.resolve("up.test", deadline: deadline) {
                    outcome = $0
                    finishedAt = .now
                }
                let sockets = resolver.descriptors.count
                try runLoop(resolver) { outcome != nil }
                check(resolver.descriptors.isEmpty && resolver.nextDeadline == nil, "idle after the timeout")
                return (outcome, deadline.duration(to: finishedAt), sockets)
            }
            check.report()
            print("resolver timing: 1 lookup, 500 ms deadline, black hole: completed \(Self.ms(late)) ms after it")
            #expect(outcome == .timedOut)
            #expect(socketsWhileWaiting == 1)
            #expect(late >= .zero)
            #expect(late < .milliseconds(100))
        }

        @Test func twoHundredLookupsIntoABlackHoleAllEndByTheirDeadline() async throws {
            let dns = try DNSServers()
            try dns.blackHole(on: "127.0.0.2")
            try dns.writeResolvConf(nameservers: ["127.0.0.2"])
            let path = dns.resolvConfPath
            let check = LoopChecks()
            let (outcomes, lateness, sockets) = try await dns.onLoopThread {
                () -> ([HostResolver.Outcome], [Duration], Int) in
                let resolver = try HostResolver(options: .init(maxConcurrent: 64, resolvConfPath: path))
                let completions = Completions()
                let deadline = ContinuousClock.now + .milliseconds(500)
                for index in 0..<200 {
                    resolver.resolve("host\(index).test", deadline: deadline, completion: completions.record(index))
                }
                let sockets = resolver.descriptors.count
                try runLoop(resolver) { completions.count == 200 }
                check(resolver.descriptors.isEmpty && resolver.nextDeadline == nil, "idle after the timeouts")
                let results = (0..<200).map { completions.outcomes[$0]! }
                return (results.map(\.outcome), results.map { deadline.duration(to: $0.at) }, sockets)
            }
            let earliest = lateness.min()!
            let latest = lateness.max()!
            print(
                "resolver timing: 200 lookups (64 at once), 500 ms deadline, black hole: completed "
                    + "\(Self.ms(earliest))...\(Self.ms(latest)) ms after it")
            check.report()
            #expect(outcomes.allSatisfy { $0 == .timedOut })
            #expect(sockets == 64)  // one channel, one socket, per running lookup; the rest wait
            #expect(earliest >= .zero)
            #expect(latest < .milliseconds(100))
        }

        @Test func aSecondNameserverIsAskedBeforeTheDeadline() async throws {
            let dns = try DNSServers()
            try dns.blackHole(on: "127.0.0.2")
            try dns.dnsmasq(on: "127.0.0.1")
            try dns.writeResolvConf(nameservers: ["127.0.0.2", "127.0.0.1"])
            let (outcome, elapsed) = try await Self.resolveOne("up.test", with: dns, deadline: .seconds(2))
            print("resolver timing: black hole then dnsmasq, 2 s deadline: answered after \(Self.ms(elapsed)) ms")
            #expect(outcome == .resolved([IPAddress("192.0.2.10")!, IPAddress("2001:db8::10")!], ttl: 300))
            // The first server gets a quarter of the time left (500 ms), then the second is asked.
            #expect(elapsed >= .milliseconds(450))
            #expect(elapsed < .milliseconds(1000))
        }

        /// One refusing server among several is not the end: the next one is still asked, and
        /// answers. (When the ICMP error is consumed by c-ares' send of the AAAA query, c-ares
        /// 1.18 moves on only at the first try's timeout, a quarter of the time left: 1 s here.)
        @Test func aRefusingServerBeforeAnAnsweringOneStillAnswers() async throws {
            let dns = try DNSServers()
            try dns.dnsmasq(on: "127.0.0.1")
            try dns.writeResolvConf(nameservers: ["127.0.0.3", "127.0.0.1"])
            let (outcome, elapsed) = try await Self.resolveOne("up.test", with: dns, deadline: .seconds(4))
            #expect(outcome == .resolved([IPAddress("192.0.2.10")!, IPAddress("2001:db8::10")!], ttl: 300))
            #expect(elapsed < .milliseconds(1500), "answered after \(Self.ms(elapsed)) ms")
        }

        /// dnsmasq with `--address` for a name and no `--local` answers its A query and refuses
        /// the AAAA one (it has no upstream to ask): one family answered is an answer, at once,
        /// not a refusal and not a wait for the deadline.
        @Test func oneFamilyAnsweredAndTheOtherRefusedIsAnAnswerAtOnce() async throws {
            let dns = try DNSServers()
            let log = try dns.dnsmasq(on: "127.0.0.1", ["--address=/half.example/192.0.2.20"])
            try dns.writeResolvConf(nameservers: ["127.0.0.1"])
            let (outcome, elapsed) = try await Self.resolveOne("half.example", with: dns, deadline: .seconds(4))
            print("resolver timing: A answered, AAAA refused, 4 s deadline: \(String(describing: outcome)) after \(Self.ms(elapsed)) ms")
            guard case let .resolved(addresses, _) = outcome else {
                Issue.record("\(String(describing: outcome)); dnsmasq saw \(dns.queries(inLog: log))")
                return
            }
            #expect(addresses == [IPAddress("192.0.2.20")!])
            #expect(elapsed < .milliseconds(500), "answered after \(Self.ms(elapsed)) ms")
        }

        /// The socket feed a per-descriptor loop follows: the lookup's socket appears once, and
        /// is reported closed when the lookup ends; nothing is reported twice.
        @Test func socketChangesReportEachOpenAndCloseOnce() async throws {
            let dns = try DNSServers()
            try dns.blackHole(on: "127.0.0.2")
            try dns.writeResolvConf(nameservers: ["127.0.0.2"])
            let path = dns.resolvConfPath
            let (opened, again, closed) = try await dns.onLoopThread {
                () -> ([HostResolver.SocketChange], [HostResolver.SocketChange], [HostResolver.SocketChange]) in
                let resolver = try HostResolver(options: .init(resolvConfPath: path))
                var outcome: HostResolver.Outcome?
                let id = resolver.resolve("up.test", deadline: .now + .seconds(5)) { outcome = $0 }
                let opened = resolver.takeSocketChanges()
                let again = resolver.takeSocketChanges()
                resolver.cancel(id)
                let closed = resolver.takeSocketChanges()
                _ = outcome
                return (opened, again, closed)
            }
            #expect(opened.count == 1 && opened.allSatisfy { $0.readable && !$0.isClosed }, "\(opened)")
            #expect(again.isEmpty)
            #expect(closed.map(\.fd) == opened.map(\.fd) && closed.allSatisfy(\.isClosed), "\(closed)")
        }

        /// `socketWillClose` names each socket while its number is still that socket's (open),
        /// whether the lookup answered or was cancelled: the moment reachd drops the socket's
        /// sd-event source, before a new socket can get the number.
        @Test func everySocketIsAnnouncedWhileStillOpenBeforeItCloses() async throws {
            let dns = try DNSServers()
            try dns.dnsmasq(on: "127.0.0.1")
            try dns.blackHole(on: "127.0.0.2")
            let path = dns.resolvConfPath
            try dns.writeResolvConf(nameservers: ["127.0.0.1"])
            let (answered, opened, announced) = try await dns.onLoopThread { () -> (Bool, [Int32], [(Int32, Bool)]) in
                let resolver = try HostResolver(options: .init(resolvConfPath: path))
                var announced: [(Int32, Bool)] = []
                resolver.socketWillClose = { fd in announced.append((fd, fcntl(fd, F_GETFD) >= 0)) }
                var outcome: HostResolver.Outcome?
                resolver.resolve("up.test", deadline: .now + .seconds(5)) { outcome = $0 }
                var opened = resolver.takeSocketChanges().map(\.fd)
                try runLoop(resolver) { outcome != nil }
                // A cancelled lookup (into the black hole) closes its socket as well.
                try String("nameserver 127.0.0.2\n").write(toFile: path, atomically: true, encoding: .utf8)
                let id = resolver.resolve("up.test", deadline: .now + .seconds(5)) { _ in }
                opened += resolver.takeSocketChanges().filter { !$0.isClosed }.map(\.fd)
                resolver.cancel(id)
                return (outcome.map { if case .resolved = $0 { true } else { false } } ?? false, opened, announced)
            }
            #expect(answered)
            #expect(opened.count == 2, "one socket per lookup: \(opened)")
            #expect(announced.map { $0.0 } == opened, "announced \(announced), opened \(opened)")
            #expect(announced.allSatisfy { $0.1 }, "every socket still open when announced: \(announced)")
        }

        @Test func cancelledLookupsNeverCompleteAndLeaveNothingOpen() async throws {
            let dns = try DNSServers()
            try dns.blackHole(on: "127.0.0.2")
            try dns.writeResolvConf(nameservers: ["127.0.0.2"])
            let path = dns.resolvConfPath
            let check = LoopChecks()
            try await dns.onLoopThread {
                let resolver = try HostResolver(options: .init(maxConcurrent: 2, resolvConfPath: path))
                let completions = Completions()
                let deadline = ContinuousClock.now + .milliseconds(300)
                let running = resolver.resolve("a.test", deadline: deadline, completion: completions.record(0))
                resolver.resolve("b.test", deadline: deadline, completion: completions.record(1))
                let queued = resolver.resolve("c.test", deadline: deadline, completion: completions.record(2))
                resolver.resolve("d.test", deadline: deadline, completion: completions.record(3))
                check(resolver.descriptors.count == 2, "two running: \(resolver.descriptors)")
                resolver.cancel(queued)
                resolver.cancel(running)  // its slot goes to d.test (c.test is gone)
                check(resolver.descriptors.count == 2, "d.test took the slot: \(resolver.descriptors)")
                try runLoop(resolver) { completions.count == 2 }
                check(completions[1] == .timedOut && completions[3] == .timedOut, "b and d time out")

                // Cancelling the only lookup closes its socket at once.
                let last = resolver.resolve("e.test", deadline: .now + .seconds(5), completion: completions.record(4))
                check(resolver.descriptors.count == 1, "e.test has its socket")
                resolver.cancel(last)
                check(resolver.descriptors.isEmpty && resolver.nextDeadline == nil, "idle right after cancel")
                resolver.cancel(last)  // twice is harmless
                // Give a stray completion every chance to show up.
                try runLoop(resolver, for: .milliseconds(100))
                check(completions.count == 2, "only b and d completed")
                check(completions[0] == nil && completions[2] == nil && completions[4] == nil, "no cancelled completion")
            }
            check.report()
        }

        @Test func aCompletionMayStartAndCancelLookups() async throws {
            let dns = try DNSServers()
            try dns.dnsmasq(on: "127.0.0.1")
            try dns.writeResolvConf(nameservers: ["127.0.0.1"])
            let path = dns.resolvConfPath
            let (first, chained, victim) = try await dns.onLoopThread {
                () -> (HostResolver.Outcome?, HostResolver.Outcome?, HostResolver.Outcome?) in
                // One at a time: nothere.test waits for up.test, and is running (its query sent)
                // when up.test's completion cancels it.
                let resolver = try HostResolver(options: .init(maxConcurrent: 1, resolvConfPath: path))
                var first: HostResolver.Outcome?
                var chained: HostResolver.Outcome?
                var victim: HostResolver.Outcome?
                var victimID: HostResolver.RequestID = 0
                resolver.resolve("up.test", deadline: .now + .seconds(5)) { outcome in
                    first = outcome
                    resolver.cancel(victimID)
                    resolver.resolve("v4only.test", deadline: .now + .seconds(5)) { chained = $0 }
                }
                victimID = resolver.resolve("nothere.test", deadline: .now + .seconds(5)) { victim = $0 }
                try runLoop(resolver) { chained != nil }
                // dnsmasq answers nothere.test within a millisecond: long enough for a stray one.
                try runLoop(resolver, for: .milliseconds(100))
                return (first, chained, victim)
            }
            #expect(first == .resolved([IPAddress("192.0.2.10")!, IPAddress("2001:db8::10")!], ttl: 300))
            #expect(chained == .resolved([IPAddress("192.0.2.11")!], ttl: 300))
            #expect(victim == nil)
        }

        @Test func anEditedResolvConfAppliesToTheNextLookup() async throws {
            let dns = try DNSServers()
            let firstLog = try dns.dnsmasq(on: "127.0.0.1")
            let secondLog = try dns.dnsmasq(on: "127.0.0.2", ["--local=/test/", "--address=/up.test/192.0.2.20"])
            try dns.writeResolvConf(nameservers: ["127.0.0.1"])
            let path = dns.resolvConfPath
            let check = LoopChecks()
            let (before, after) = try await dns.onLoopThread { () -> (HostResolver.Outcome?, HostResolver.Outcome?) in
                let resolver = try HostResolver(options: .init(resolvConfPath: path))
                var before: HostResolver.Outcome?
                var after: HostResolver.Outcome?
                resolver.resolve("up.test", deadline: .now + .seconds(5)) { before = $0 }
                try runLoop(resolver) { before != nil }
                try dns.writeResolvConf(nameservers: ["127.0.0.2"])
                check(resolver.nameservers() == [IPAddress("127.0.0.2")!], "nameservers: \(resolver.nameservers())")
                resolver.resolve("up.test", deadline: .now + .seconds(5)) { after = $0 }
                try runLoop(resolver) { after != nil }
                return (before, after)
            }
            check.report()
            #expect(before == .resolved([IPAddress("192.0.2.10")!, IPAddress("2001:db8::10")!], ttl: 300))
            #expect(after == .resolved([IPAddress("192.0.2.20")!], ttl: 0))
            #expect(dns.queries(inLog: firstLog).count == 2)
            #expect(dns.queries(inLog: secondLog).count == 2)
        }

        @Test func garbageNamesDoNotCrash() async throws {
            let dns = try DNSServers()
            try dns.blackHole(on: "127.0.0.2")
            try dns.writeResolvConf(nameservers: ["127.0.0.2"])
            let path = dns.resolvConfPath
            let (count, idle) = try await dns.onLoopThread { () -> (Int, Bool) in
                let resolver = try HostResolver(options: .init(resolvConfPath: path))
                let completions = Completions()
                let names = ["", ".", "..", "::1", "a\u{0}b", String(repeating: "x", count: 300), "fe80::1%lo", "a b.test"]
                for (index, name) in names.enumerated() {
                    let id = resolver.resolve(name, deadline: .now + .milliseconds(200), completion: completions.record(index))
                    if index.isMultiple(of: 3) { resolver.cancel(id) }
                }
                try runLoop(resolver, limit: .seconds(2)) { completions.count == 5 }
                return (completions.count, resolver.descriptors.isEmpty && resolver.nextDeadline == nil)
            }
            #expect(count == 5)
            #expect(idle)
        }

        /// One lookup of `name` on a loop thread of its own, with the servers of `dns`: its
        /// outcome and how long it took.
        static func resolveOne(
            _ name: String, with dns: DNSServers, deadline: Duration
        ) async throws -> (HostResolver.Outcome?, Duration) {
            let path = dns.resolvConfPath
            return try await dns.onLoopThread { () -> (HostResolver.Outcome?, Duration) in
                let resolver = try HostResolver(options: .init(resolvConfPath: path))
                var outcome: HostResolver.Outcome?
                let start = ContinuousClock.now
                resolver.resolve(name, deadline: start + deadline) { outcome = $0 }
                try runLoop(resolver) { outcome != nil }
                return (outcome, start.duration(to: .now))
            }
        }

        static func ms(_ duration: Duration) -> String {
            String(format: "%.1f", ResolverTests.milliseconds(duration))
        }
    }
}

/// A resolv.conf in a temporary file of its own, for tests that need no DNS server.
final class DNSServersFile {
    let path: String

    init(_ lines: [String]) throws {
        path = FileManager.default.temporaryDirectory.path + "/reachd-resolv-\(getpid())-\(UUID().uuidString).conf"
        try write(lines)
    }

    deinit { unlink(path) }

    func write(_ lines: [String]) throws {
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}
