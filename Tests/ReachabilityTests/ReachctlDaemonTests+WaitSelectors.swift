import Foundation
import Testing
@testable import Reachability

/// `reachctl wait` with systemd-networkd-wait-online's selectors (`--interface IF[:STATE]`,
/// `--any`, `-4`, `-6`, `--dns`), through reachd and in-process, on a real namespace: up0 ready
/// with IPv4 and IPv6 addresses and an IPv4 default route only, nc0 a veth that is up with an
/// IPv4 address but has no carrier (its peer is down).
extension ReachctlDaemonTests {
    /// On threads of its own (`.ownThreads`): in two fresh-clone runs its 300 ms sleep, among the
    /// main pass's tests, came back after the background wait's 60 s had run out.
    @Test(.ownThreads, arguments: Mode.allCases)
    func waitSelectorsHaveNetworkdWaitOnlineMeanings(_ mode: Mode) async throws {
        let ns = try Self.scenario()
        try ns.ip("link add nc0 type veth peer name nc0p")
        try ns.ip("addr add 203.0.113.2/24 dev nc0")
        try ns.ip("link set nc0 up")
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let source = Self.source(mode, ns, fixture)
        func wait(_ arguments: [String]) throws -> CommandResult {
            try reachctl(["wait"] + arguments + source, environment: [:]).result
        }

        // Holding now: at once, exit 0.
        for arguments in [["-i", "up0"], ["--interface", "up0:routable", "-4", "-6"], ["-i", "up0:degraded"], ["-i", "nc0:up"],
                          ["-i", "nc0:no-carrier"], ["-i", "nc0:up", "-4"], ["-i", "nc0", "-i", "up0", "--any"],
                          ["-i", "up0", "-i", "nc0:routable", "--any", "-6"], ["-4"], ["--any"]] {
            let result = try wait(arguments + ["--timeout", "10s"])
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
        }

        // Not holding: exit 1 at the timeout, saying what was waited for and what was seen.
        for (arguments, message) in [
            (["-i", "nc0"], "for nc0 ready; saw: nc0 is not ready; online via up0 (virtual)"),
            (["-i", "nc0", "-i", "up0"], "for nc0 ready, up0 ready; saw: nc0 is not ready; online via up0 (virtual)"),
            (["-i", "nope0"], "for nope0 ready; saw: nope0 is missing (or ignored by configuration)"),
            // Loopback's addresses are never routable.
            (["-i", "lo:routable"], "saw: lo is ready, without a routable address"),
            // No IPv6 default route: no IPv6 internet path, though up0 has an IPv6 address.
            (["-6"], "for the host online and an IPv6 internet path; saw: no IPv6 internet path"),
        ] as [([String], String?)] {
            let result = try wait(arguments + ["--timeout", "300ms"])
            #expect(result.status == 1, "\(arguments): \(result)")
            if let message { #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)") }
        }

        // A link that appears later is waited for, and the wait returns when it is ready.
        let later = try BackgroundReachctl(["wait", "-i", "up1:routable", "-4", "--timeout", "60s"] + source)
        try await Task.sleep(for: .milliseconds(300))
        #expect(later.exitTime == nil, "up1 does not exist yet")
        try ns.ip("link add up1 type veth peer name up1p")
        try ns.ip("addr add 198.51.100.2/24 dev up1")
        try ns.ip("link set up1p up")
        try ns.ip("link set up1 up")
        let (result, _) = try await later.finish(timeout: .seconds(60))
        #expect(result.status == 0, "\(result)")
    }

    /// `--dns`: a configured nameserver must be reachable (SupportsDNS); in-process, where
    /// `--resolv-conf` picks the file.
    @Test func waitForDNSAsksForAReachableNameserver() throws {
        let ns = try Self.scenario()
        let directory = NSTemporaryDirectory() + "wait-dns-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "nameserver 192.0.2.53\n".write(toFile: directory + "/routable", atomically: true, encoding: .utf8)
        try "# no nameserver\n".write(toFile: directory + "/none", atomically: true, encoding: .utf8)

        let routable = try reachctl(["wait", "--dns", "--timeout", "10s", "--netns", ns.name, "--resolv-conf", directory + "/routable"])
        #expect(routable.status == 0, "\(routable)")
        let none = try reachctl(["wait", "--dns", "--timeout", "300ms", "--netns", ns.name, "--resolv-conf", directory + "/none"])
        #expect(none.status == 1, "\(none)")
        #expect(none.stderr.contains("for the host online and a routable nameserver; saw: no nameserver routable"), "\(none.stderr)")
    }
}

extension ReachctlCommandLineTests {
    /// Bad selectors are refused before anything is asked, naming the value and what is accepted.
    @Test func waitRefusesStatesItCannotTellApart() throws {
        for (value, message) in [
            ("eth0:carrier", "--interface 'eth0:carrier': unknown state 'carrier'; use up, ready, routable"),
            ("eth0:up:routable", "--interface 'eth0:up:routable': a maximum state (IF:MIN:MAX) is not supported"),
            (":ready", "--interface ':ready': give an interface name"),
        ] {
            let result = try reachctl(["wait", "--interface", value] + Self.local)
            #expect(result.status == 255, "\(value)")
            #expect(result.stderr.contains(message), "\(value): \(result.stderr)")
        }
        let help = try reachctl(["wait", "--help"])
        for option in ["-i, --interface <if[:state]>", "-4, --ipv4", "-6, --ipv6", "--any", "--dns"] {
            #expect(help.stdout.contains(option), "wait --help lacks \(option)")
        }
    }
}
