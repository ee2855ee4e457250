import Foundation
import Testing
@testable import Reachability

/// reachctl's command line as a user of `ip`, `networkctl` or `systemctl` types it: the real
/// binary, answering in-process (`--sysfs-root /` never asks reachd), so no root is needed.
@Suite("reachctl command line")
struct ReachctlCommandLineTests {
    /// In-process without asking any bus: the answer comes from this process's own kernel view.
    static let local = ["--sysfs-root", "/"]

    @Test func globalOptionsGoBeforeOrAfterTheCommand() throws {
        for arguments in [["--json", "interfaces"] + Self.local, ["interfaces", "--json"] + Self.local, ["--json"] + Self.local + ["interfaces"]] {
            let result = try reachctl(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(try result.json()["interfaces"] is [Any], "\(arguments) prints JSON")
        }
        // --verbose before the default command reaches status.
        let verbose = try reachctl(["--verbose", "--json"] + Self.local)
        #expect([0, 1].contains(verbose.status), "\(verbose.stderr)")
        #expect(try verbose.json()["overruns"] != nil, "--verbose before the command adds the counters")
        // An option with a value before the command: its value is never taken for the command.
        let netns = try reachctl(["--netns", "no-such-ns-\(getpid())", "status"])
        #expect(netns.status == 255)
        #expect(netns.stderr.contains("no network namespace named 'no-such-ns-\(getpid())'"), "\(netns.stderr)")
        let missing = "unix:path=/nonexistent-\(getpid())/bus"
        let bus = try reachctl(["--bus-address", missing, "--json", "interfaces"])
        #expect(bus.status == 0, "\(bus.stderr)")
        #expect(bus.stderr.contains("cannot connect to the bus at \(missing)"), "the address before the command is the one asked")
        // The usage line of the top-level help offers them.
        let help = try reachctl(["--help"])
        for option in ["--json", "--verbose", "--netns", "--daemon", "--bus-address", "--version"] {
            #expect(help.stdout.contains(option), "reachctl --help lacks \(option)")
        }
    }

    @Test func versionIsReachds() throws {
        for arguments in [["--version"], ["status", "--version"]] {
            let result = try reachctl(arguments)
            #expect(result.status == 0)
            #expect(result.stdout == "reachctl \(BuildInfo.version)\n", "\(arguments)")
        }
    }

    @Test func commandsByPrefixAndAlias() throws {
        for (arguments, key) in [(["st", "--json"], "state"), (["int", "--json"], "interfaces"), (["interface", "--json"], "interfaces"),
                                 (["--json", "link"], "interfaces"), (["i", "--json"], "interfaces")] {
            let result = try reachctl(arguments + Self.local)
            #expect([0, 1].contains(result.status), "\(arguments): \(result.stderr)")
            #expect(try result.json()[key] != nil, "\(arguments) runs the command that has \(key)")
        }
        let ambiguous = try reachctl(["m"])
        #expect(ambiguous.status == 255)
        #expect(ambiguous.stderr.contains("'m' is ambiguous: it could be 'monitor' or 'metrics'; type more of it"), "\(ambiguous.stderr)")
        let help = try reachctl(["help", "int"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE: reachctl interfaces"), "\(help.stdout)")
    }

    @Test func unknownCommandsAreRefusedWithTheNearest() throws {
        let typo = try reachctl(["stauts"])
        #expect(typo.status == 255)
        #expect(typo.stdout == "")
        #expect(typo.stderr.hasPrefix("reachctl: unknown command 'stauts'; did you mean 'status'?"), "\(typo.stderr)")
        let afterOptions = try reachctl(["--json", "--netns=x", "intefaces"])
        #expect(afterOptions.status == 255)
        #expect(afterOptions.stderr.contains("did you mean 'interfaces'?"), "\(afterOptions.stderr)")
        let help = try reachctl(["help", "stauts"])
        #expect(help.status == 255)
        #expect(help.stdout == "", "no top-level help for a command that does not exist")
        #expect(help.stderr.hasPrefix("reachctl: help: unknown command 'stauts'; did you mean 'status'?"), "\(help.stderr)")
        let target = try reachctl(["example.org"])
        #expect(target.status == 255)
        #expect(target.stderr.contains("reachctl check example.org"), "\(target.stderr)")
        let far = try reachctl(["frobnicate"])
        #expect(far.status == 255)
        #expect(!far.stderr.contains("did you mean"), "no suggestion for a word far from every command: \(far.stderr)")
        #expect(far.stderr.contains("commands: status, interfaces, check, why, history, monitor, wait, is, hold, login-page, metrics, help"))
    }

    @Test func anAddressThatIsNoBusAddressIsAnError() throws {
        for (address, why) in [("garbage", "has no TRANSPORT:"), ("foo:bar=1", "unknown transport 'foo'"), ("unix:paht=/x", "unknown key 'paht'"), ("unix:", "needs abstract= or path=")] {
            let result = try reachctl(["status", "--json", "--bus-address", address])
            #expect(result.status == 255, "\(address)")
            #expect(result.stdout == "", "no answer in-process for \(address)")
            #expect(result.stderr.contains("--bus-address '\(address)' is not a D-Bus address: "), "\(result.stderr)")
            #expect(result.stderr.contains(why), "\(result.stderr)")
        }
        let (environment, _) = try reachctl(["interfaces"], environment: ["REACHCTL_BUS_ADDRESS": "junk"])
        #expect(environment.status == 255)
        #expect(environment.stderr.contains("$REACHCTL_BUS_ADDRESS 'junk' is not a D-Bus address"), "\(environment.stderr)")
        // A well-formed address where no bus listens is a bus without reachd: the answer comes
        // in-process, with the notice (globalOptionsGoBeforeOrAfterTheCommand).
    }

    @Test func durationsAreSystemdTimeSpans() throws {
        // An address is answered at once, whatever the deadline: the span only has to be read.
        for span in ["2min", "1min 30s", "1.5s", "500ms", "3"] {
            let result = try reachctl(["check", "127.0.0.1", "--timeout", span] + Self.local)
            #expect(result.status == 0, "--timeout \(span): \(result.stderr)")
        }
        // 1h is read (as 60m) and then refused by check's own limit, naming both.
        let long = try reachctl(["check", "127.0.0.1", "--timeout", "1h"] + Self.local)
        #expect(long.status == 255)
        #expect(long.stderr.contains("--timeout 60m is above the maximum of 5m"), "\(long.stderr)")
        let bad = try reachctl(["wait", "--timeout", "1h 30x"] + Self.local)
        #expect(bad.status == 255)
        #expect(bad.stderr.contains("invalid duration '1h 30x'"), "\(bad.stderr)")
        // wait reads the same spans: a short one ends at once, either way.
        let wait = try reachctl(["wait", "--timeout", "0.1s 100ms", "--json"] + Self.local)
        #expect([0, 1].contains(wait.status), "\(wait.stderr)")
        #expect(try wait.json()["satisfied"] is Bool)
    }

    @Test func metricsHelpOffersNoJSONAndJSONIsRefused() throws {
        let help = try reachctl(["metrics", "--help"])
        #expect(help.status == 0)
        #expect(!help.stdout.contains("\n  --json"), "metrics --help offers no --json option: \(help.stdout)")
        #expect(!help.stdout.contains("[--json]"))
        #expect(help.stdout.contains("--json is refused"), "its discussion says why")
        for arguments in [["metrics", "--json"], ["--json", "metrics"], ["--json", "me"]] {
            let result = try reachctl(arguments + Self.local)
            #expect(result.status == 255, "\(arguments)")
            #expect(result.stdout == "")
            #expect(result.stderr.contains("--json: metrics are printed only in Prometheus' text format"), "\(result.stderr)")
        }
        // The other commands offer it among their options.
        for command in ["status", "interfaces", "check", "monitor", "wait"] {
            let other = try reachctl([command, "--help"])
            #expect(other.stdout.contains("\n  --json"), "\(command) --help offers --json")
        }
    }

    /// The command word is found past every global option, and past the value of those that
    /// take one: each option reachctl declares at the top (from its own help dump) is known to
    /// CommandWord, so a new global option cannot make its value pass for the command.
    @Test func everyGlobalOptionIsSkippedToFindTheCommand() throws {
        let dump = try reachctl(["--experimental-dump-help"])
        let root = try #require(try dump.json()["command"] as? [String: Any])
        let arguments = try #require(root["arguments"] as? [[String: Any]])
        #expect(arguments.count >= 9, "\(arguments)")
        for argument in arguments {
            let names = try #require(argument["names"] as? [[String: String]])
            let name = try #require(names.last { $0["kind"] == "long" }?["name"] ?? names.first?["name"])
            let option = (names.contains { $0["kind"] == "long" } ? "--" : "-") + name
            let words = argument["kind"] as? String == "option" ? [option, "x", "stauts"] : [option, "stauts"]
            let result = try reachctl(words)
            #expect(result.status == 255, "\(words)")
            #expect(result.stderr.hasPrefix("reachctl: unknown command 'stauts'"), "\(words): \(result.stderr)")
        }
    }
}
