import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// `reachctl is CONDITION...`: whether the host's network meets every condition named, as an
/// exit status made for systemd's `ExecCondition=` and for scripts (reachctl(1), "is").
struct IsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "is",
        abstract: "Test conditions on the host's network (online, internet, unmetered, ...) for ExecCondition= and scripts.",
        discussion: """
            Exits 0 when every condition named holds, 1 when one does not (with a line on standard \
            error naming it and why, which ExecCondition= puts in the journal), and 255 on a usage \
            error or when no answer can be had: systemd skips a unit quietly on 1 to 254 and fails \
            it on 255, so a typo fails the unit where an admin sees it instead of skipping it forever.

            Conditions:
              online        the default route leaves through a ready link
              internet      the connectivity probe's verdict is full (reachd with [Connectivity] \
            URL=); without a verdict: online and not stalled
              unmetered     online, and the path is neither cellular nor metered (nor a tunnel over such a link)
              no-portal     the connectivity probe did not meet a captive portal (holds without the probe)
              not-stalled   the host's TCP traffic through its path has not stopped flowing
              via-KIND      online through a link of KIND: wired (or ethernet), wifi, cellular, vpn, \
            bridge, virtual, other; under a VPN the carrier's kind counts too

            Examples:
              ExecCondition=/usr/bin/reachctl is unmetered internet
              reachctl is via-vpn || exit 0
              reachctl is --json online unmetered | jq .holds
            """
    )

    /// The exit status of a usage error or of no answer: 255 makes `ExecCondition=` fail the
    /// unit rather than skip it (systemd.service(5)), so a mistake does not pass for "not now".
    static let errorStatus: Int32 = 255

    @Argument(help: ArgumentHelp("Conditions that must all hold.", valueName: "condition"))
    var conditions: [String] = []

    @Flag(name: .customLong("quiet"), help: "Say nothing when a condition does not hold: the exit status only.")
    var quiet = false

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    func validate() throws {
        guard !conditions.isEmpty else {
            throw ValidationError("Name at least one condition: \(Self.words.joined(separator: ", ")).")
        }
        for word in conditions where HostCondition(word: word) == nil {
            throw ValidationError(Self.refusal(of: word))
        }
        if quiet, output.json { throw ValidationError("--quiet and --json: --json says everything on standard output; drop one.") }
    }

    /// The words `is` takes, in documented order.
    static let words = HostCondition.all.map(\.word)

    /// `unknown condition 'unmeterd'; did you mean 'unmetered'? (conditions: ...)`.
    static func refusal(of word: String) -> String {
        let known = words + HostCondition.aliases.keys.sorted()
        var message = "unknown condition '\(word)'"
        let scored = known.map { (word: $0, distance: CommandWord.editDistance(Array(word), Array($0))) }
        if let best = scored.min(by: { $0.distance < $1.distance }), best.distance <= (word.count <= 4 ? 1 : 2) {
            message += "; did you mean '\(best.word)'?"
        } else if let kind = InterfaceKind(rawValue: word) ?? (word == "ethernet" ? .wired : nil) {
            message += "; did you mean 'via-\(kind.rawValue)'?"
        }
        return message + " (conditions: \(words.joined(separator: ", ")))"
    }

    func run() async throws {
        let snapshot: ReachabilitySnapshot
        do {
            snapshot = try await reportingErrors {
                let source = try options.openSource()
                defer { source.stop() }
                return try await source.snapshot()
            }
        } catch let code as ExitCode where code.rawValue == ExitStatus.error.rawValue {
            throw ExitCode(Self.errorStatus)
        }
        let verdicts = conditions.compactMap(HostCondition.init(word:)).map { (condition: $0, failure: $0.failure(in: snapshot)) }
        let failed = verdicts.filter { $0.failure != nil }
        if output.json {
            let members: [JSONValue] = verdicts.map { verdict in
                .object([
                    ("condition", .string(verdict.condition.word)), ("holds", .bool(verdict.failure == nil)),
                    ("why", .string(verdict.failure ?? "")),
                ])
            }
            Terminal.writeLine(JSONValue.object([("holds", .bool(failed.isEmpty)), ("conditions", .array(members))]).serialized())
        } else if !quiet, !failed.isEmpty {
            let text = failed.map { "\($0.condition.word): no, \($0.failure!)" }.joined(separator: "; ")
            Terminal.write("reachctl: \(text)\n", to: STDERR_FILENO)
        }
        if !failed.isEmpty { throw ExitStatus.notReachable.exitCode }
    }
}
