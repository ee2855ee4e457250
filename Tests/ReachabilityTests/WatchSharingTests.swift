import Foundation
import Testing
@testable import Reachability

/// issue 16: host watches that scale. Watches on the same name share one lookup and one retry
/// timer; a name whose DNS never answers is asked again with a growing delay; a network change
/// starts that delay afresh. dnsmasq counts what reachd really sends: it forwards `dead.test` to
/// a black hole, so every lookup of it times out, and logs each query with the client's port.
/// reachd gives every lookup a c-ares channel (and so a UDP socket) of its own, so distinct
/// ports are distinct lookups, whatever the retransmissions within one.
@Suite(rootOnly, .ownThreads)
struct WatchSharingTests {
    static let name = "dead.test"

    /// The lookups dnsmasq saw for `name`: its distinct client sockets, in order of appearance
    /// (`--log-queries=extra` lines such as `3 127.0.0.1/50867 query[A] dead.test from 127.0.0.1`).
    static func lookups(_ dns: DNSServers, log: String, of name: String = name) -> [String] {
        var seen: [String] = []
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.contains(" query[") && line.contains("\(name) from ") {
            let fields = line.split(separator: " ")
            guard let index = fields.firstIndex(where: { $0.hasPrefix("query[") }), index > 0 else { continue }
            let client = String(fields[index - 1])
            if !seen.contains(client) { seen.append(client) }
        }
        return seen
    }

    @Test func watchesOnOneNameShareEachRoundAndANetworkChangeResetsTheBackoff() async throws {
        let dns = try DNSServers()
        let log = try dns.dnsmasq(on: "127.0.0.2", DNSServers.testZone + ["--server=/\(Self.name)/127.0.0.3", "--log-queries=extra"])
        try dns.blackHole(on: "127.0.0.3")
        try dns.writeResolvConf(nameservers: ["127.0.0.2"])
        let harness = try DaemonHarness(dns.ns, config: "[Checks]\nDefaultTimeout=500ms\n", resolvConf: dns.resolvConfPath)
        defer { harness.shutdown() }
        try await harness.ready(state: nil)

        // 60 watches on the name, from two clients.
        let alice = try harness.connect("alice")
        let bob = try harness.connect("bob")
        var paths: [String] = []
        for index in 0..<60 { paths.append(try DaemonHarness.watch(index % 2 == 0 ? alice : bob, Self.name)) }
        #expect(Set(paths).count == 60)

        func waitForLookups(_ count: Int, within limit: Duration) async throws -> ContinuousClock.Instant {
            try await eventually(
                "\(count) lookups of \(Self.name) within \(limit): \(Self.lookups(dns, log: log)); \(harness.diagnostics)",
                timeout: limit, every: .milliseconds(20)
            ) { Self.lookups(dns, log: log).count >= count }
            return .now
        }

        // Rounds at about 0 s, 1.5 s and 4 s (500 ms lookups, then 1 s and 2 s +-20%): three
        // lookups in all, where 60 unshared watches would have made 180.
        let third = try await waitForLookups(3, within: waitLimit)
        #expect(Self.lookups(dns, log: log).count == 3)
        for path in [paths[0], paths[59]] {
            let reason: String = try DaemonHarness.property(alice, "Reason", path: path, interface: DaemonHarness.watchInterface)
            #expect(reason == "dnsTimeout", "\(path)")
        }
        // The backoff grew: the fourth round waits 4 s +-20% after the third lookup ends.
        try await Task.sleep(until: third + .milliseconds(2500))
        #expect(Self.lookups(dns, log: log).count == 3, "no fourth lookup within 2.5 s of the third: \(Self.lookups(dns, log: log))")

        // A network change: the name is asked at once, and the round after comes 1 s +-20% after
        // that lookup's 500 ms, not 8 s.
        _ = try dns.ns.ip("addr add 198.18.0.1/32 dev lo")
        let changed = ContinuousClock.now
        _ = try await waitForLookups(4, within: .seconds(2))
        _ = try await waitForLookups(5, within: .seconds(4))
        #expect(ContinuousClock.now - changed < .seconds(5))
        #expect(Self.lookups(dns, log: log).count == 5, "\(Self.lookups(dns, log: log))")
    }

    /// Watches run at most half of MaxConcurrentLookups lookups at once (here one), the rest wait
    /// in line; names that waited longer than a check's deadline behind lookups that timed out
    /// are answered dnsTimeout at once, as CheckHost would have answered them.
    @Test func lookupsOfWatchesAreBoundedAndThoseWaitingAreAnsweredAtTheDeadline() async throws {
        let dns = try DNSServers()
        let log = try dns.dnsmasq(on: "127.0.0.2", DNSServers.testZone + ["--server=/\(Self.name)/127.0.0.3", "--log-queries=extra"])
        try dns.blackHole(on: "127.0.0.3")
        try dns.writeResolvConf(nameservers: ["127.0.0.2"])
        let harness = try DaemonHarness(
            dns.ns, config: "[Checks]\nDefaultTimeout=500ms\nMaxConcurrentLookups=2\n", resolvConf: dns.resolvConfPath)
        defer { harness.shutdown() }
        try await harness.ready(state: nil)

        let client = try harness.connect()
        let names = (1...6).map { "n\($0).\(Self.name)" }
        let started = ContinuousClock.now
        let paths = try names.map { try DaemonHarness.watch(client, $0) }
        func reasons() throws -> [String] {
            try paths.map { try DaemonHarness.property(client, "Reason", path: $0, interface: DaemonHarness.watchInterface) }
        }
        let deadline = started + waitLimit
        while try reasons() != Array(repeating: "dnsTimeout", count: 6) {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "every watch dnsTimeout: \(try reasons())") }
            try await Task.sleep(for: .milliseconds(20))
        }
        // One 500 ms lookup at a time: by now at most one per 500 ms has started, and the names
        // still waiting were answered without being asked (unbounded, all six go out at once).
        // How many rounds ran by now depends on how fast this loop polled (a loaded machine
        // polls late), so the bound is per elapsed time, not a fixed count.
        let elapsed = ContinuousClock.now - started
        let asked = Self.lookups(dns, log: log, of: "." + Self.name)
        #expect(asked.count <= Int(elapsed / .milliseconds(500)) + 1, "\(asked) after \(elapsed)")
        #expect(!asked.isEmpty)
    }
}
