import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// `reachctl is CONDITION...`: whether the host's network meets every condition named, as an
/// exit status made for systemd's `ExecCondition=` and for scripts (reachctl(1), "is").
struct IsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: name,
        abstract: "Test conditions on the host's network (online, internet, unmetered, ...) for ExecCondition= and scripts.",
        discussion: """
            Exits 0 when every condition named holds, 1 when one does not (with a line on standard \
            error naming it and why, which ExecCondition= puts in the journal), and 255 on a usage \
            error or when no answer can be had: systemd skips a unit quietly on 1 to 254 and fails \
            it on 255, so a typo fails the unit where an admin sees it instead of skipping it forever.

            Conditions:
              online        the default route leaves through a ready link
              internet      the connectivity probe's verdict is full (reachd with
                            [Connectivity] URL=); without one: online, not stalled
              unmetered     online, and the path is not expensive: not cellular,
                            not Metered=yes, not a phone's tether or hotspot,
                            not metered by DHCP or NetworkManager's setting
              no-portal     the probe met no captive portal (holds without it)
              not-stalled   the host's TCP traffic has not stopped flowing
              dns           a configured nameserver is routable through a
                            ready link
              via-KIND      online through a link of KIND: wired (or ethernet),
                            wifi, cellular, vpn, bridge, virtual, other; under a
                            VPN the kind of the link beneath it counts too

            With --unit NAME (reachd only), every condition also needs the systemd service \
            NAME's own traffic to reach the internet, judged as `check --unit` judges it (its \
            user, its namespace, IPAddressDeny=, RestrictNetworkInterfaces=, \
            RestrictAddressFamilies=): a service its sandbox keeps off fails each condition, \
            naming the setting, and so does a service reachd watches ([Units] Watch=) whose \
            own traffic stopped flowing. For ExecCondition= of a unit that depends on NAME's \
            reach.

            With --npd, node-problem-detector's custom plugin protocol instead: exit 0 \
            when every condition holds, 1 when one does not, 2 when there is no answer \
            (reachd does not answer with --daemon, a bad configuration or usage), and one \
            line on standard output that NPD makes the condition's message \
            (packaging/reachd-npd.json, installed in /usr/share/reachd).

            Examples:
              ExecCondition=/usr/bin/reachctl is unmetered internet
              reachctl is online --npd
              reachctl is via-vpn || exit 0
              reachctl is --json online unmetered | jq .holds
              ExecCondition=/usr/bin/reachctl is --unit backup.service internet
            """
    )

    /// The command's word, apart from `configuration` so that the quick path does not build that.
    static let name = "is"

    @Argument(help: ArgumentHelp("Conditions that must all hold.", valueName: "condition"))
    var conditions: [String] = []

    @Flag(name: .customLong("quiet"), help: "Say nothing when a condition does not hold: the exit status only.")
    var quiet = false

    @Flag(name: .customLong("npd"), help: "Answer as a node-problem-detector custom plugin: exit 0 ok, 1 a problem, 2 unknown, and one line on standard output.")
    var npd = false

    @OptionGroup var unitOption: UnitQuestion.Option

    var unit: String? { unitOption.unit }

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    func validate() throws {
        try Self.validate(conditions)
        if unit != nil, npd { throw ValidationError("--unit and --npd: node-problem-detector asks about the node, not one service; drop one.") }
        if quiet, output.json { throw ValidationError("--quiet and --json: --json says everything on standard output; drop one.") }
        if npd, quiet || output.json {
            throw ValidationError("--npd and \(quiet ? "--quiet" : "--json"): --npd says one line on standard output, for node-problem-detector; drop one.")
        }
    }

    /// At least one condition, each a word `is` takes: what `is` and `hold` refuse alike.
    static func validate(_ conditions: [String]) throws {
        guard !conditions.isEmpty else {
            throw ValidationError("Name at least one condition: \(words.joined(separator: ", ")).")
        }
        for word in conditions where HostCondition(word: word) == nil {
            throw ValidationError(refusal(of: word))
        }
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
        var unitFailure: String?
        do {
            snapshot = try await reportingErrors {
                let source = try options.openSource()
                defer { source.stop() }
                return try await source.snapshot()
            }
            if let unit {
                let (answer, explanation) = try await reportingErrors { try await UnitQuestion.ask(unit, "", options: options) }
                if !answer.isReachable {
                    unitFailure = "\(answer.message ?? "\(unit)'s traffic cannot reach the internet (\(answer.reason?.rawValue ?? "noRoute"))")"
                } else if let own = UnitQuestion.ownTraffic(explanation), own.status == .broken {
                    // A watched unit whose own traffic stopped flowing reaches nothing, whatever its route.
                    unitFailure = "\(explanation.unit ?? unit)'s own traffic stopped flowing (stalled)"
                }
            }
        } catch let code as ExitCode where npd && code != .success {
            throw ExitCode(NodeProblemDetector.cannotTell())
        }
        let conditions = conditions.compactMap(HostCondition.init(word:))
        if npd {
            let status = NodeProblemDetector.report(conditions, in: snapshot)
            if status != NodeProblemDetector.ok { throw ExitCode(status) }
            return
        }
        let status = Self.report(conditions, in: snapshot, json: output.json, quiet: quiet, unitFailure: unitFailure)
        if status != ExitStatus.success.rawValue { throw ExitCode(status) }
    }

    /// Says what `conditions` make of `snapshot` (nothing when all hold, one line on standard
    /// error naming each that does not, or the JSON object) and returns the exit status.
    /// `unitFailure`: why `--unit`'s service cannot reach the internet, which fails every condition.
    static func report(_ conditions: [HostCondition], in snapshot: ReachabilitySnapshot, json: Bool, quiet: Bool, unitFailure: String? = nil) -> Int32 {
        let verdicts = conditions.map { (condition: $0, failure: $0.failure(in: snapshot) ?? unitFailure) }
        let failed = verdicts.filter { $0.failure != nil }
        if json {
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
        return failed.isEmpty ? ExitStatus.success.rawValue : ExitStatus.notReachable.rawValue
    }
}

// MARK: the quick path

extension IsCommand {
    /// The exit status of `reachctl is` for the command lines units hold (`is WORD... [--quiet]
    /// [--json] [--daemon] [--bus-address ADDRESS] [--config-dir DIR]...`), found without
    /// ArgumentParser and without the async runtime's work: called from every timer, the check
    /// must cost about what `ip -br addr` costs, and parsing the whole command tree (its
    /// reflection and generic metadata) cost more than the rest of the process (reachctl(1),
    /// "is"). reachd's answer is one `GetStatus`, sent behind the bus's Hello; without reachd,
    /// the state an in-process monitor would start from, without starting one
    /// (`ReachabilityCore.snapshot`). nil for anything else: other options, `--help`, a word
    /// that is no condition, an answer only the full path reads; the parser then answers it,
    /// errors included, so every command line has one meaning.
    static func quickStatus(_ arguments: [String]) -> Int32? {
        guard arguments.first == name else { return nil }
        var conditions: [HostCondition] = []
        var json = false, quiet = false, requireDaemon = false, npd = false
        var busAddress: String?
        var configDirectories: [String] = []
        var rest = arguments.dropFirst()[...]
        while let word = rest.popFirst() {
            // `--option=value` as ArgumentParser reads it.
            let equals = word.hasPrefix("--") ? word.firstIndex(of: "=") : nil
            let argument = equals.map { String(word[..<$0]) } ?? word
            let attached = equals.map { String(word[word.index(after: $0)...]) }
            switch argument {
            case "--json", "--quiet", "--daemon", NodeProblemDetector.flag:
                guard attached == nil else { return nil }
                switch argument {
                case "--json": json = true
                case "--quiet": quiet = true
                case "--daemon": requireDaemon = true
                default: npd = true
                }
            case "--bus-address", "--config-dir":
                // A value that looks like an option is the parser's to refuse.
                guard let value = attached ?? rest.popFirst(), !value.isEmpty, attached != nil || !value.hasPrefix("-") else { return nil }
                if argument == "--bus-address" { busAddress = value } else { configDirectories.append(value) }
            default:
                guard let condition = HostCondition(word: argument), attached == nil else { return nil }
                conditions.append(condition)
            }
        }
        guard !conditions.isEmpty, !(json && quiet), !(npd && (json || quiet)), !(requireDaemon && !configDirectories.isEmpty) else { return nil }
        let bus = CommonOptions.bus(option: busAddress)
        if case let .address(address) = bus, address.isEmpty || BusAddressSyntax.problem(in: address) != nil { return nil }
        // A `via` condition needs the interfaces' kinds: the probe's GetStatus carries them
        // (parsed only then: 15 page faults of a plain `is`).
        let needsKinds = conditions.contains { if case .via = $0 { true } else { false } }
        let (client, status): (ReachabilityClient, (host: HostStatus, generation: UInt64))
        do {
            (client, status) = try ReachdOrInProcess.probe(
                bus, probeTimeout: CommonOptions.probeTimeout, callTimeout: CommonOptions.probeTimeout, keepingSnapshot: needsKinds)
        } catch {
            let status = inProcessStatus(
                conditions, json: json, quiet: quiet, npd: npd, requireDaemon: requireDaemon,
                configDirectories: configDirectories, unavailable: error)
            return npd && status == ExitStatus.error.rawValue ? NodeProblemDetector.cannotTell() : status
        }
        // The interfaces only where a condition needs their kinds or a failure names them.
        var snapshot = ReachabilitySnapshot(generation: status.generation, host: status.host, interfaces: [])
        if needsKinds || conditions.contains(where: { $0.failure(in: snapshot) != nil }) {
            // ListInterfaces only from a reachd whose GetStatus has no interfaces, or to name a failure.
            guard let interfaces = client.probed?.snapshot.interfaces ?? (try? client.interfaces()) else { return nil }
            snapshot.interfaces = interfaces
        }
        return npd ? NodeProblemDetector.report(conditions, in: snapshot) : report(conditions, in: snapshot, json: json, quiet: quiet)
    }

    /// `quickStatus` when reachd does not answer: what the full path says and answers in-process
    /// (the notice, or with `--daemon` the error; the configuration's warnings or errors), from
    /// the state an in-process monitor starts with, with no thread, loop or parser.
    static func inProcessStatus(
        _ conditions: [HostCondition], json: Bool, quiet: Bool, npd: Bool, requireDaemon: Bool, configDirectories: [String],
        unavailable: ReachdUnavailable
    ) -> Int32 {
        guard let snapshot = CommonOptions.inProcessSnapshot(unavailable, requireDaemon: requireDaemon, configDirectories: configDirectories)
        else { return ExitStatus.error.rawValue }
        return npd ? NodeProblemDetector.report(conditions, in: snapshot) : report(conditions, in: snapshot, json: json, quiet: quiet)
    }
}
