import Foundation
import Testing
@testable import Reachability

/// issue 42: exit codes that fit where they are used. Every reachctl command: 0 holds, 1 does
/// not, 255 for a usage or service error (ExecCondition= fails the unit on 255 and skips it
/// quietly on 1 to 254). reachd's usage errors exit with the code its unit does not restart on,
/// naming the bad value in words.
@Suite
struct ExitStatusTests {
    /// The word each command needs before an option can be wrong.
    static let commands: [[String]] = [
        ["status"], ["interfaces"], ["check", "192.0.2.1"], ["why"], ["history"], ["monitor"], ["wait"],
        ["is", "online"], ["hold", "online"], ["metrics"],
    ]

    @Test(arguments: commands)
    func everyCommandsUsageErrorExits255(_ command: [String]) throws {
        let typo = try reachctl(command + ["--frob"])
        #expect(typo.status == 255, "\(command): \(typo.stderr)")
        #expect(typo.stderr.contains("--frob"), "\(command): \(typo.stderr)")
    }

    /// `wait`, as docs/services.md's ExecCondition= recipe runs it: a typo, `--internet` with no
    /// reachd to probe, and `--daemon` without reachd fail the unit (255); the timeout skips it (1).
    @Test func waitFailsTheUnitOnMistakesAndSkipsItOnTheTimeout() throws {
        let missing = "unix:path=/nonexistent-\(getpid())/bus"
        let typo = try reachctl(["wait", "--internt", "--timeout", "2min"])
        #expect(typo.status == 255 && typo.stderr.contains("--internt"), "\(typo)")
        let noProbe = try reachctl(["wait", "--internet", "--timeout", "2min", "--bus-address", missing])
        #expect(noProbe.status == 255 && noProbe.stderr.contains("--internet needs reachd"), "\(noProbe)")
        let noReachd = try reachctl(["wait", "--daemon", "--timeout", "2min", "--bus-address", missing])
        #expect(noReachd.status == 255 && noReachd.stderr.contains("reachd is not available"), "\(noReachd)")
        // A link that never exists: the condition does not hold before the timeout.
        let timedOut = try reachctl(["wait", "-i", "nolink\(getpid() % 1000):routable", "--timeout", "200ms", "--netns", "/proc/self/ns/net"])
        #expect(timedOut.status == 1, "\(timedOut)")
    }

    /// A named --config-dir that does not exist is an error naming it, for reachctl (255) and
    /// reachd (2), never the defaults in silence; the default /etc/reachd may be missing.
    @Test func aMissingConfigDirectoryIsNamed() throws {
        let missing = "/nonexistent-config-\(getpid())"
        let reachd = try DaemonHarness.execute(productPath("reachd"), ["--check-config", "--config-dir", missing])
        #expect(reachd.status == 2, "\(reachd)")
        #expect(reachd.stderr.contains("\(missing): no such directory (named by --config-dir)"), "\(reachd.stderr)")
        #expect(reachd.stdout == "")
        let reachctl = try reachctl(["status", "--netns", "/proc/self/ns/net", "--config-dir", missing])
        #expect(reachctl.status == 255, "\(reachctl)")
        #expect(reachctl.stderr.contains("\(missing): no such directory (named by --config-dir)"), "\(reachctl.stderr)")
        let file = try makeScratchDirectory("exit-config") + "/reachd.conf"
        try "".write(toFile: file, atomically: true, encoding: .utf8)
        let notDirectory = try DaemonHarness.execute(productPath("reachd"), ["--check-config", "--config-dir", file])
        #expect(notDirectory.status == 2 && notDirectory.stderr.contains("\(file): not a directory"), "\(notDirectory)")
    }

    /// `reachd --bus-address garbage`: exit status 2, which the shipped unit names in
    /// RestartPreventExitStatus= (so systemd does not restart it), with a message in words.
    /// A well-formed address where no bus listens is a bus lost (1, restarted), also in words.
    @Test func reachdUsageErrorsExitWithTheCodeItsUnitDoesNotRestartOn() throws {
        let unit = try DocumentationTests.read("packaging/reachd.service")
        let prevented = unit.split(separator: "\n").first { $0.hasPrefix("RestartPreventExitStatus=") }
        #expect(prevented == "RestartPreventExitStatus=2", "\(String(describing: prevented))")
        for (arguments, words) in [
            (["--bus-address", "garbage"], "--bus-address 'garbage' is not a D-Bus address: 'garbage' has no TRANSPORT: before its keys"),
            (["--bus-address", "tcp:port=1"], "--bus-address 'tcp:port=1' is not a D-Bus address: tcp: needs host="),
            (["--bus-address"], "--bus-address needs a value"),
            (["--frob"], "unknown option '--frob'"),
            (["--netns", "nosuch-ns-\(getpid())"], "--netns 'nosuch-ns-\(getpid())': no such network namespace (/run/netns/nosuch-ns-\(getpid()))"),
        ] {
            let result = try DaemonHarness.execute(productPath("reachd"), arguments)
            #expect(result.status == 2, "\(arguments): \(result)")
            #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("address(") && !result.stderr.contains("System.Error"), "\(result.stderr)")
        }
        let nobody = "unix:path=/nonexistent-\(getpid())/bus"
        let lost = try DaemonHarness.execute(
            productPath("reachd"), ["--bus-address", nobody, "--rfkill-device", "none", "--dhcp-leases", "none"])
        #expect(lost.status == 1, "\(lost)")
        #expect(lost.stderr.contains("cannot start: connect to the bus at \(nobody): No such file or directory"), "\(lost.stderr)")
        #expect(!lost.stderr.contains("address(") && !lost.stderr.contains("System.Error"), "\(lost.stderr)")
    }
}

/// issue 42's text: `hold --json` is refused rather than ignored; a name reserved to fail
/// (RFC 6761 `.invalid`) fails the same with DNS or without, as the README's session shows.
@Suite
struct NewUserTextTests {
    @Test func holdRefusesJSONWhereverItStands() throws {
        for arguments in [["hold", "online", "--json"], ["--json", "hold", "online"]] {
            let result = try reachctl(arguments)
            #expect(result.status == 255 && result.stderr.contains("--json: hold prints no answer to parse"), "\(arguments): \(result)")
        }
    }

    /// No nameserver at all (a resolv.conf that names none): `.invalid` is still NXDOMAIN, at
    /// once, while another name has no DNS to ask.
    @Test(.enabled(if: isRoot, "needs root for a namespace"))
    func invalidNamesAreNotFoundWithoutAskingAnyone() throws {
        let ns = try TestNamespace()
        let scratch = try makeScratchDirectory("invalid-resolv")
        defer { removeTree(scratch) }
        try "# no nameserver\n".write(toFile: scratch + "/resolv.conf", atomically: true, encoding: .utf8)
        let options = ["--netns", ns.name, "--resolv-conf", scratch + "/resolv.conf", "--timeout", "1s"]
        for name in ["host.invalid", "HOST.INVALID.", "invalid"] {
            let result = try reachctl(["check", name] + options)
            #expect(result.status == 1, "\(name): \(result)")
            #expect(result.stdout == "\(name): not reachable: dnsNotFound (no such name (NXDOMAIN or no A/AAAA records))\n", "\(result.stdout)")
        }
        let other = try reachctl(["check", "host.example"] + options)
        #expect(other.status == 1 && !other.stdout.contains("dnsNotFound"), "\(other.stdout)")
    }
}
