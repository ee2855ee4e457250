import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// `--json`, global as `CommonOptions` are, but a group of its own: `metrics` holds it without
/// showing it (its format is Prometheus' own), so that its help does not offer what it refuses.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON (lowerCamelCase D-Bus names) instead of text (every command but metrics, hold and login-page, which refuse it).")
    var json = false

    @Flag(
        name: .customLong("no-color"),
        help: "Never colour the states in text. Colour is also off when NO_COLOR is set (to anything but empty), when TERM is unset or dumb, and when standard output is not a terminal.")
    var noColour = false

    // Global as systemctl's is (`reachctl --no-legend interfaces`); only tables have a legend.
    @Flag(name: .customLong("no-legend"), help: "Leave out the header line of tables (interfaces), as systemctl's --no-legend does.")
    var noLegend = false

    /// How text is written: colour by the terminal's conventions, detail by `--verbose`.
    func textStyle(verbose: Bool) -> TextStyle { Self.textStyle(refusingColour: noColour, verbose: verbose) }

    /// `textStyle(verbose:)` without the parsed options (`StatusCommand.quickStatus`).
    static func textStyle(refusingColour: Bool, verbose: Bool) -> TextStyle {
        var environment: [String: String] = [:]
        for name in ["NO_COLOR", "TERM"] {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        let colour = TextStyle.wantsColour(refused: refusingColour, environment: environment, isTerminal: isatty(STDOUT_FILENO) == 1)
        if colour { Terminal.passesColours = true }
        return TextStyle(colour: colour, verbose: verbose)
    }
}

/// The options every subcommand takes: global, so they go before or after the command as a
/// user of `ip` or `systemctl` is used to (`reachctl --json interfaces`, `reachctl interfaces
/// --json`). Reachctl and each subcommand hold them as an `@OptionGroup`; ArgumentParser parses
/// the root's group wherever the options stand and hands the same value to the subcommand.
struct CommonOptions: ParsableArguments {
    @Flag(help: "Say more where a command has more to say: Apple's flag names (reachable|isWired) beside the words, and the generation; status adds the netlink receive-buffer overruns and resyncs since start and the figures behind the stall verdict, interfaces a FLAGS column.")
    var verbose = false

    @Option(
        name: .customLong("netns"),
        help: ArgumentHelp(
            "Watch a network namespace: a NAME from /run/netns (like `ip -n NAME`), or a PATH to a namespace file. Always answered in-process: reachd watches only its own namespace.",
            valueName: "name-or-path"))
    var netns: String?

    @Flag(
        name: .customLong("daemon"),
        help: "Answer only from reachd: when it does not answer, fail (exit 255) instead of answering in-process; monitor and wait fail fast (exit 255) when reachd goes away or stops answering instead of waiting for its return.")
    var requireDaemon = false

    @Option(
        name: .customLong("bus-address"),
        help: ArgumentHelp(
            "Ask the reachd on the D-Bus bus at this address (unix:path=...); default: $REACHCTL_BUS_ADDRESS, else the system bus.",
            valueName: "address"))
    var busAddress: String?

    @Option(
        name: .customLong("config-dir"),
        help: ArgumentHelp(
            "When answering in-process, read DIR/reachd.conf and DIR/reachd.conf.d/*.conf instead of /etc/reachd, as `reachd --config-dir` does: interface rules, priorities, metered links and the default DNS deadline apply, so the answer is reachd's. Repeatable: the directories are searched in the order given and earlier ones take precedence, as for reachd (reachd.conf(5)). reachd itself answers with its own configuration, so not with --daemon.",
            valueName: "dir"))
    var configDirectories: [String] = []

    @Option(
        name: .customLong("resolv-conf"),
        help: ArgumentHelp(
            "When answering in-process, read nameservers from PATH instead of /etc/resolv.conf, as `reachd --resolv-conf` does (host checks and supportsDNS). Not with --daemon.",
            valueName: "path"))
    var resolvConf: String?

    @Option(
        name: .customLong("sysfs-root"),
        help: ArgumentHelp(
            "Read device facts from this directory instead of /sys (for tests with a fake tree).",
            valueName: "path", visibility: .hidden))
    var sysfsRoot: String?

    func validate() throws {
        if answersInProcess, requireDaemon {
            throw ValidationError("\(netns != nil ? "--netns" : "--sysfs-root") is answered in-process, never by reachd: drop --daemon, or it.")
        }
        if netns != nil, busAddress != nil {
            throw ValidationError("--netns is answered in-process, never by reachd: drop --bus-address, or --netns.")
        }
        if let directory = configDirectories.first, requireDaemon {
            throw ValidationError("--config-dir '\(directory)' applies only in-process; with --daemon reachd answers with its own configuration: drop one of them.")
        }
        if let resolvConf, requireDaemon {
            throw ValidationError("--resolv-conf '\(resolvConf)' applies only in-process; with --daemon reachd reads its own: drop one of them.")
        }
        if let busAddress, busAddress.isEmpty { throw ValidationError("--bus-address needs an address, like \(BusAddressSyntax.example).") }
        if !answersInProcess, case let .address(address) = bus, let problem = BusAddressSyntax.problem(in: address) {
            let origin = busAddress != nil ? "--bus-address" : "$\(Self.busAddressVariable)"
            throw ValidationError("\(origin) '\(address)' is not a D-Bus address: \(problem); give TRANSPORT:KEY=VALUE, like \(BusAddressSyntax.example).")
        }
        if let netns { _ = try Self.namespacePath(for: netns) }
        if let sysfsRoot, !Self.isDirectory(sysfsRoot) {
            throw ValidationError("--sysfs-root '\(sysfsRoot)' is not a directory.")
        }
    }

    /// The configuration reachd would read (`/etc/reachd`, or `--config-dir`). A bad one is
    /// refused as reachd refuses it, every error as FILE:LINE: [Section] Key: message (exit 255).
    /// `reporting: false`: nothing written, a rejection thrown as one error naming every problem.
    func settings(reporting: Bool = true) throws -> Configuration {
        try Self.settings(directories: configDirectories, reporting: reporting)
    }

    /// `settings(reporting:)` from the `--config-dir` directories (none: /etc/reachd), for `is`'s
    /// quick path, which has no options.
    static func settings(directories: [String], reporting: Bool) throws -> Configuration {
        let named = !directories.isEmpty
        switch Configuration.load(directories: named ? directories : Configuration.defaultDirectories, named: named) {
        case let .success(configuration):
            guard reporting else { return configuration }
            for warning in configuration.warnings { Terminal.write("reachctl: warning: \(warning.description)\n", to: STDERR_FILENO) }
            return configuration
        case let .failure(errors):
            guard reporting else { throw ReachctlError(errors.errors.map(\.description).joined(separator: "; ")) }
            for error in errors.errors { Terminal.write("reachctl: \(error.description)\n", to: STDERR_FILENO) }
            Terminal.write("reachctl: configuration rejected: \(errors.errors.count) error(s)\n", to: STDERR_FILENO)
            throw ExitStatus.error.exitCode
        }
    }

    /// The in-process source these options ask for, with the configuration reachd would use.
    func inProcessSource() throws -> InProcessSource {
        let (configuration, settings) = try inProcessConfiguration()
        return try InProcessSource(configuration: configuration, defaultTimeout: settings.defaultTimeout)
    }

    /// The in-process monitor's configuration these options ask for, and reachd.conf's settings.
    func inProcessConfiguration(reporting: Bool = true) throws -> (CoreConfiguration, Configuration) {
        let settings = try settings(reporting: reporting)
        var configuration = Self.coreConfiguration(settings)
        if let sysfsRoot { configuration.sysfsRoot = sysfsRoot }
        if let resolvConf { configuration.resolvConfPath = resolvConf }
        if let netns { configuration.namespacePath = try Self.namespacePath(for: netns) }
        return (configuration, settings)
    }

    /// The in-process core's configuration from reachd.conf's `settings` alone, before options.
    static func coreConfiguration(_ settings: Configuration) -> CoreConfiguration {
        var configuration = CoreConfiguration()
        settings.apply(to: &configuration)
        return configuration
    }

    /// The environment variable naming a bus address, like `--bus-address`.
    static let busAddressVariable = "REACHCTL_BUS_ADDRESS"

    /// How long reachd has to answer the first call before reachctl answers in-process.
    static let probeTimeout: Duration = .milliseconds(500)

    /// The bus where reachd is asked: `--bus-address`, else $REACHCTL_BUS_ADDRESS, else the
    /// system bus (whose own $DBUS_SYSTEM_BUS_ADDRESS sd-bus honours).
    var bus: BusAddress { Self.bus(option: busAddress) }

    /// The bus `--bus-address` (nil: not given) names, as `bus` reads it: `is` reads its quick
    /// command lines without ArgumentParser (`IsCommand.quickStatus`) and asks the same bus.
    static func bus(option busAddress: String?) -> BusAddress {
        if let busAddress { return .address(busAddress) }
        if let value = getenv(busAddressVariable), value.pointee != 0 { return .address(String(cString: value)) }
        return .system
    }

    /// Whether these options need the library in-process: a namespace, or a fake sysfs tree.
    var answersInProcess: Bool { netns != nil || sysfsRoot != nil }

    /// Opens the source of answers: reachd when it answers a status call within `probeTimeout`,
    /// else the library in-process, saying so in one line on standard error. `--daemon` makes
    /// a missing reachd an error (exit 255); `--netns` (and `--sysfs-root`) answer in-process
    /// without asking reachd.
    /// `followsReachd`: updates wait for reachd across its restarts (unless `--daemon`); without,
    /// they end when it goes away.
    func openSource(probeTimeout: Duration = CommonOptions.probeTimeout, followsReachd: Bool = true) throws -> any ReachabilitySource {
        try ReachdOrInProcess.choose(
            bus: answersInProcess ? nil : bus, probeTimeout: probeTimeout,
            callTimeout: max(probeTimeout, DaemonSource.callTimeout),
            daemon: { client, _ throws -> any ReachabilitySource in
                try DaemonSource(client: client, follows: followsReachd && !requireDaemon)
            }
        ) { unavailable in
            try notice(unavailable)
            return try inProcessSource()
        }
    }

    /// Says why reachd does not answer before answering in-process; with `--daemon`, fails.
    func notice(_ unavailable: ReachdUnavailable?) throws {
        try Self.notice(unavailable, requireDaemon: requireDaemon)
    }

    /// What the quick paths (`is`, `status`) answer when reachd does not: as the full path does,
    /// the notice (or with `--daemon` the error) and the configuration's warnings or errors, then
    /// the state an in-process monitor starts with, with no thread, loop or parser; nil once the
    /// error is said.
    static func inProcessSnapshot(_ unavailable: ReachdUnavailable, requireDaemon: Bool, configDirectories: [String]) -> ReachabilitySnapshot? {
        do {
            try notice(unavailable, requireDaemon: requireDaemon)
            let settings = try settings(directories: configDirectories, reporting: true)
            return try ReachabilityCore.snapshot(configuration: coreConfiguration(settings))
        } catch is ExitCode {
            return nil
        } catch {
            Terminal.write("reachctl: \(error)\n", to: STDERR_FILENO)
            return nil
        }
    }

    /// `notice(_:)` for `is`'s quick path, which reads `--daemon` itself.
    static func notice(_ unavailable: ReachdUnavailable?, requireDaemon: Bool) throws {
        guard let unavailable else { return }
        if requireDaemon {
            Terminal.write("reachctl: reachd is not available: \(unavailable.reason)\n", to: STDERR_FILENO)
            throw ExitStatus.error.exitCode
        }
        Terminal.write("reachctl: reachd is not running (\(unavailable.reason)); answering in-process\n", to: STDERR_FILENO)
    }

    /// The library's `PathMonitor` for `restriction`, as a program of a user's would make it:
    /// through reachd (a WatchPath object, following its name) when it answers, else in-process
    /// with the configuration reachd would read; `--netns` in-process in that namespace.
    /// reachd's answers need none of reachd.conf: while reachd answers, a configuration that
    /// cannot be read only costs the in-process answers for the time it is away (`--daemon`
    /// never wants them), and `whyReachdOnly` says why when that time comes.
    func openPathMonitor(_ restriction: Path.Restriction) throws -> (monitor: PathMonitor, whyReachdOnly: String?) {
        try ReachdOrInProcess.choose(
            bus: answersInProcess ? nil : bus, probeTimeout: Self.probeTimeout, callTimeout: DaemonSource.callTimeout,
            daemon: { _, bus in
                if requireDaemon { return (PathMonitor(reachdOn: bus, restriction: restriction, configuration: nil), "--daemon") }
                do {
                    let configuration = try inProcessConfiguration(reporting: false).0
                    return (PathMonitor(reachdOn: bus, restriction: restriction, configuration: configuration), nil)
                } catch {
                    return (PathMonitor(reachdOn: bus, restriction: restriction, configuration: nil), "cannot answer in-process: \(error)")
                }
            }
        ) { unavailable in
            try notice(unavailable)
            let monitor = PathMonitor(
                monitor: try ReachabilityMonitor(configuration: try inProcessConfiguration().0),
                requiredInterfaceType: restriction.requiredInterfaceType, prohibitedInterfaceTypes: restriction.prohibitedInterfaceTypes)
            return (monitor, nil)
        }
    }

    /// `--netns` as a path (`NetworkNamespace.path(forName:)`, as reachd reads it): a value
    /// containing `/` is a path as given; anything else names a namespace in /run/netns. The file
    /// must exist.
    static func namespacePath(for value: String) throws -> String {
        guard value.contains("/") || !["", ".", ".."].contains(value) else {
            throw ValidationError("--netns needs a namespace name (see `ip netns list`) or a path, not '\(value)'.")
        }
        let path = NetworkNamespace.path(forName: value)
        guard access(path, F_OK) == 0 else {
            let reason = String(cString: strerror(errno))
            if value.contains("/") {
                throw ValidationError("--netns: cannot use namespace file '\(path)': \(reason).")
            }
            throw ValidationError(
                "--netns: no network namespace named '\(value)' (\(path): \(reason)); `ip netns list` shows the names.")
        }
        return path
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}

/// Reads a duration option (`--timeout 2s`) with the library's `DurationText`, for the commands
/// that take one (`check`, `wait`): `@Option(transform: parseDurationArgument) var timeout: Duration`.
/// ArgumentParser shows the thrown message, which names the text and the accepted forms.
@Sendable func parseDurationArgument(_ text: String) throws -> Duration {
    do {
        return try DurationText.parse(text)
    } catch {
        throw ValidationError(error.description)
    }
}
