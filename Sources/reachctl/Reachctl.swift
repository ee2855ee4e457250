import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

@main
struct Reachctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachctl",
        abstract: "Ask whether this host can reach the network, through which interface, and watch it change.",
        discussion: """
            reachctl answers from the kernel's routing truth: the host is online when the default \
            route the kernel would use right now leaves through a link that is up, has carrier and \
            has a usable address. It never waits for DNS.

            Without a subcommand it runs `status`. Every subcommand but metrics, hold and login-page (which refuse it) takes --json for scripts. \
            The options below are global: they go before or after the command \
            (reachctl --json interfaces, reachctl interfaces --json). A command may be shortened \
            to any unique prefix (reachctl st, reachctl int), as ip reads its objects.

            Answers come from reachd over D-Bus (the system bus, or --bus-address) when it is \
            running; otherwise reachctl runs the same library in-process and says so in one line \
            on standard error. --daemon refuses that fallback; --netns is always in-process.

            Examples:
              reachctl                     state, flags and usable interfaces
              reachctl interfaces          every interface: kind, flags, addresses
              reachctl --json int          the same as JSON (a unique prefix names it)
              reachctl check example.org   can a packet get there now, and how
              reachctl why                 each layer from radio to probe, the first broken
              reachctl history --since 1d  outages of the last day: when, how long, why
              reachctl monitor --json      the snapshot, then a JSON line per change
              reachctl monitor 192.0.2.1   a line whenever that address's answer changes
              reachctl wait --timeout 1m   block until online (exit 1 after a minute)
              reachctl is unmetered internet   for ExecCondition=: exit 0 when both hold
              reachctl status --netns ns1  the same question inside namespace ns1
              reachctl status >/dev/null && echo online
              reachctl metrics             the Prometheus metrics, once

            Exit status, the same rule for every command: 0 it holds (online, reachable, the \
            condition met, success), 1 it does not (why: a layer is broken; wait: the timeout \
            passed first), 255 usage or service error (which ExecCondition= takes as a failure, \
            not a skip).
            """,
        // As reachd's, from the one BuildInfo (`reachd --version`, reachd_build_info).
        version: "reachctl \(BuildInfo.version)",
        subcommands: [StatusCommand.self, InterfacesCommand.self, CheckCommand.self, WhyCommand.self, HistoryCommand.self, MonitorCommand.self, WaitCommand.self, IsCommand.self, HoldCommand.self, LoginPageCommand.self, MetricsCommand.self],
        defaultSubcommand: StatusCommand.self
    )

    // Parsed wherever the options stand; each subcommand's own groups receive these values.
    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    /// How the command word is read: the subcommands' names and aliases, and the options that may
    /// stand before it (OutputOptions', CommonOptions' and ArgumentParser's own), those with a
    /// value apart; ReachctlCommandLineTests holds this list to the help dump's.
    static let commandWord = CommandWord(
        commands: configuration.subcommands.map { CommandWord.Command(name: $0._commandName, aliases: $0.configuration.aliases) }
            + [CommandWord.Command(name: "help", aliases: [])],
        valueOptions: ["--netns", "--bus-address", "--config-dir", "--resolv-conf", "--sysfs-root", "--generate-completion-script"],
        flags: ["--json", "--no-color", "--no-legend", "--verbose", "--daemon", "-h", "--help", "--version", "--experimental-dump-help"])

    /// The options whose value is a time or a span, which may begin with a minus (`--since -2h`).
    static let timeOptions: Set<String> = ["--since", "--timeout"]

    /// ArgumentParser's own main, except that usage errors and any error it would exit 1 for exit
    /// with `ExitStatus.error` (reachctl(1), "EXIT STATUS": 1 means "does not hold", so it cannot
    /// also mean "you typed it wrong").
    static func main() async {
        let words = Array(CommandLine.arguments.dropFirst())
        if let status = IsCommand.quickStatus(words) ?? StatusCommand.quickStatus(words) { Glibc.exit(status) }
        let arguments: [String]
        do {
            arguments = CommandWord.joiningSignedValues(
                try commandWord.resolve(Array(CommandLine.arguments.dropFirst())), of: timeOptions)
        } catch {
            Terminal.write("reachctl: \(error)\nSee 'reachctl --help'.\n", to: STDERR_FILENO)
            Glibc.exit(ExitStatus.error.rawValue)
        }
        do {
            var command = try await asyncParseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if error is ExitCode || exitCode(for: error) == .success { exit(withError: error) }
            Terminal.write(fullMessage(for: error) + "\n", to: STDERR_FILENO)
            // node-problem-detector reads 2 as unknown; 255 is for ExecCondition=.
            if NodeProblemDetector.requested(arguments) { Glibc.exit(NodeProblemDetector.cannotTell("usage error; see reachctl's standard error")) }
            Glibc.exit(ExitStatus.error.rawValue)
        }
    }
}

/// The exit codes every subcommand shares (reachctl(1), "EXIT STATUS"; the README and docs/admins.md).
/// They are API: scripts test them.
enum ExitStatus: Int32 {
    /// Online (status), or the command did what was asked.
    case success = 0
    /// Not online (status).
    case notReachable = 1
    /// Usage error, or the answer could not be obtained (no reachd with --daemon, no probe,
    /// a bad configuration). 255, not 2: `ExecCondition=` takes 1-254 as "skip the unit
    /// quietly" and only 255 as a failure (systemd.service(5)), so a typo in a unit's condition
    /// fails where an admin sees it instead of skipping the unit at every start.
    case error = 255

    var exitCode: ExitCode { ExitCode(rawValue) }
}

/// An error reachctl reports in its own words.
struct ReachctlError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`; any error other than an `ExitCode` is printed as `reachctl: <error>` on standard
/// error and turned into exit status 255.
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let code as ExitCode {
        throw code
    } catch {
        Terminal.write("reachctl: \(error)\n", to: STDERR_FILENO)
        throw ExitStatus.error.exitCode
    }
}
