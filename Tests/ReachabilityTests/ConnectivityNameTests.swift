import Foundation
import Testing
@testable import Reachability

/// issue 11: the connectivity probe with its URL given by a name, served by a real dnsmasq in the
/// gateway's namespace (`far`, 192.0.2.1), next to the HTTP servers of `ConnectivityProbeTests`.
/// The name is looked up as CheckHost looks names up, on reachd's loop.
@Suite(rootOnly)
struct ConnectivityNameTests {
    /// A resolv.conf of the test's own (reachd's `--resolv-conf`), rewritten as resolvconf does:
    /// aside, then renamed over.
    final class ResolvConf {
        let directory: String
        var path: String { directory + "/resolv.conf" }

        init(nameserver: String) throws {
            directory = try makeScratchDirectory("reachd-probe-dns")
            try point(at: nameserver)
        }

        deinit { removeTree(directory) }

        func point(at nameserver: String) throws {
            try "nameserver \(nameserver)\n".write(toFile: path + ".new", atomically: false, encoding: .utf8)
            guard rename(path + ".new", path) == 0 else { throw SystemError("rename \(path).new") }
        }
    }

    /// The gateway's 204 server by address (where each test starts), and by name.
    static let byAddress = "[Connectivity]\nURL=http://192.0.2.1:8204/generate_204\nTimeout=2s\n"
    static let byName = "[Connectivity]\nURL=http://probe.test:8204/generate_204\nTimeout=2s\n"

    /// The verdict follows the name: full while it names the gateway's 204 server; none once the
    /// name's DNS server (resolv.conf now names another) gives an address the gateway has no
    /// route for (its ICMP unreachable is only a soft error to a connecting TCP socket, which
    /// keeps trying until the Timeout); full again when resolv.conf goes back.
    /// Each verdict after the first comes from a fresh lookup (TTL 1 s), asked for with Validate.
    @Test func aProbeURLByNameEndsFullAndFollowsTheNamesServer() async throws {
        let resolvConf = try ResolvConf(nameserver: "192.0.2.1")
        let setup = try await ConnectivityProbeTests.Setup(config: Self.byAddress, resolvConf: resolvConf.path)
        let far = setup.scenario.far
        try far.ip("addr add 198.51.100.53/32 dev lo")
        let first = try DNSMasqServer(in: far, address: "192.0.2.1", records: ["probe.test": ["192.0.2.1"]], ttl: 1)
        let second = try DNSMasqServer(in: far, address: "198.51.100.53", records: ["probe.test": ["203.0.113.80"]], ttl: 1)
        try await setup.waitFor("full")
        try await setup.waitForRequests(1)

        try setup.reload(Self.byName)
        try await setup.waitForRequests(2)
        try await setup.waitFor("full")
        #expect(first.queries(for: "probe.test") >= 1, "the name was asked of the first server")

        try resolvConf.point(at: "198.51.100.53")
        try await Task.sleep(for: .milliseconds(2100))  // past the TTL, and past Validate's 2 s reuse of a verdict
        let moved = try setup.validate()
        #expect(moved.connectivity == "none" && moved.detail.contains("no answer within 2s"), "\(moved)")
        #expect(second.queries(for: "probe.test") >= 1, "the name was asked of the new server")
        #expect(try setup.connectivity() == "none")
        #expect(setup.requests.count == 2, "\(setup.requests)")

        try resolvConf.point(at: "192.0.2.1")
        try await Task.sleep(for: .milliseconds(2100))
        let back = try setup.validate()
        #expect(back.connectivity == "full", "\(back)")
        // Validate's, and perhaps one more: after "none" the probe retries on its own (1 s, then
        // 2 s, ...), and a retry that comes after resolv.conf went back reaches the server too.
        #expect(setup.requests.count >= 3, "\(setup.requests)")
        #expect(try setup.flags() & ConnectivityProbeTests.validated != 0)
    }

    /// An uplink whose gateway drops everything after DNS: the name resolves, but the gateway
    /// black-holes its address (a blackhole route, forwarding on: no ICMP, nothing). The verdict
    /// is none at the probe's Timeout, as reachd.conf(5) says of "never answered", and address
    /// checks stay fast while the probe waits.
    @Test func aGatewayThatDropsEverythingAfterDNSMeansNoneAtTheTimeout() async throws {
        let resolvConf = try ResolvConf(nameserver: "192.0.2.1")
        let setup = try await ConnectivityProbeTests.Setup(config: Self.byAddress, resolvConf: resolvConf.path)
        let far = setup.scenario.far
        try far.exec("/usr/sbin/sysctl", ["-qw", "net.ipv4.ip_forward=1"])
        try far.ip("route add blackhole 203.0.113.80/32")
        let dns = try DNSMasqServer(in: far, address: "192.0.2.1", records: ["probe.test": ["203.0.113.80"]], ttl: 1)
        try await setup.waitFor("full")
        try await setup.waitForRequests(1)

        let notified = setup.harness.notify.datagrams.count
        try setup.reload(Self.byName)
        let started = ContinuousClock.now
        var slowest = Duration.zero
        while try setup.connectivity() != "none", ContinuousClock.now - started < .seconds(10) {
            let asked = ContinuousClock.now
            let address = try DaemonHarness.jsonData(try setup.harness.busctlCall("CheckAddress", "s", "192.0.2.7"))
            slowest = max(slowest, ContinuousClock.now - asked)
            #expect(address.count == 4 && (address[1] as? String) == "up0", "\(address)")
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try setup.connectivity() == "none", "\(setup.harness.diagnostics)")
        // Timed by reachd's own STATUS= datagram, not by this loop of busctl calls (slow on a
        // loaded machine). Well before TCP's own connect timeout (about 2 min) in any case.
        let status = try await setup.harness.notify.wait(for: "internet: none", from: notified) { $0.text.contains("internet: none") }
        let elapsed = status.datagram.time - started
        #expect(elapsed >= .milliseconds(1900) && elapsed < .seconds(5), "none at the 2 s Timeout, after \(elapsed)")
        #expect(slowest < .milliseconds(500), "CheckAddress (a busctl call) took up to \(slowest) while the probe waited")
        #expect(dns.queries(for: "probe.test") >= 1, "DNS answered")
        #expect(setup.requests.count == 1, "nothing reached a server past the black hole: \(setup.requests)")
        #expect(try setup.flags() & (ConnectivityProbeTests.validated | ConnectivityProbeTests.intervention) == 0)
        #expect(try setup.validate().detail.contains("no answer within 2s"))
    }
}

extension ConnectivityProbeTests.Setup {
    /// Waits until the HTTP servers saw `count` requests.
    func waitForRequests(_ count: Int, within limit: Duration = waitLimit) async throws {
        try await eventually("\(count) requests, have \(requests); \(harness.diagnostics)", timeout: limit, every: .milliseconds(20)) {
            requests.count >= count
        }
    }
}
