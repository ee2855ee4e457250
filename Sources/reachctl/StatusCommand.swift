import ArgumentParser
import Reachability

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether this host is online, through which interface, and which others could carry traffic.",
        discussion: """
            Prints the connectivity state, the usable interfaces in priority order, the families \
            and gateways of the internet path, the nameservers and whether each is routable (and lookups timed out), and why the host \
            is not online. States: online (the kernel's default route leaves through a ready \
            link), local (not online, but a link is ready with an address), offline (neither). \
            On a terminal the state is coloured: green online, yellow online but stalled or \
            short of the internet, or local, red offline (--no-color, NO_COLOR or TERM=dumb turn \
            it off). --verbose adds the flags of the general check (0.0.0.0 and ::) in \
            SCNetworkReachability's names and the generation.

            With --json it prints one object with the keys flags, state, primaryInterface, \
            availableInterfaces, underlyingInterface, the path facts supportsIPv4, supportsIPv6, \
            supportsDNS, gateways and reason, generation and interfaces (with --verbose \
            also overruns, resyncs and stallEvidence). stalled is true when this host's own TCP \
            traffic through its path stopped flowing: segments leave and are retransmitted, nothing \
            comes back (passive stall detection, no probe sent); --verbose shows the figures.

            Names or shell patterns after the command ask about those interfaces instead, as \
            networkctl status does: each link's state, addresses, whether the host's path or a \
            usable default route leaves through it, and whether it is metered; with --json, \
            {"generation": N, "interfaces": [...]} as interfaces --json prints them. Exit \
            status 0 when every one is ready, 1 when one is not or a name matches none.

            With --unit NAME (reachd only), the systemd service NAME's own path to the internet \
            instead, judged as `check --unit` judges it: online or offline, the interface, what \
            of its sandbox denies, and the facts it was judged by (its uid, its namespace, its \
            settings); for a unit reachd.conf's [Units] Watch= names, whether its own TCP \
            traffic is stalled, judged from its cgroup's sockets apart from the host's; --json: \
            unit, online, interface, reason, message, policy, stalled, traffic.

            Examples:
              reachctl status
              reachctl status --unit backup.service
              reachctl status --json | jq -r .primaryInterface
              if reachctl status >/dev/null; then echo online; fi
              reachctl status eth0
              reachctl status 'wl*' --json | jq -r '.interfaces[].state'

            \(KindOptions.discussion)

            Examples with kinds:
              reachctl status --kind wifi
              reachctl status --not-kind cellular --json | jq .availableInterfaces

            Exit status: 0 online (with --kind/--not-kind: satisfied), 1 local or offline \
            (unsatisfied), 255 error.
            """
    )

    @Argument(help: ArgumentHelp("Ask about these interfaces (names or shell patterns, 'en*') instead of the host.", valueName: "interface"))
    var names: [String] = []

    @OptionGroup var kinds: KindOptions

    @OptionGroup var unitOption: UnitQuestion.Option

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    /// A global option (`reachctl --verbose` reads as `reachctl status --verbose`).
    var verbose: Bool { options.verbose }

    func validate() throws {
        if let unit = unitOption.unit, !names.isEmpty || kinds.restriction != nil {
            throw ValidationError("--unit \(unit) and interfaces or kinds: ask about the service's path or about the host's, not both.")
        }
        if let name = names.first, kinds.restriction != nil {
            throw ValidationError("'\(name)' and --kind/--not-kind: ask about interfaces by name or by kind, not both.")
        }
    }

    func run() async throws {
        if let unit = unitOption.unit { return try await unitStatus(unit) }
        if !names.isEmpty { return try await links() }
        if let restriction = kinds.restriction {
            let satisfied = try await reportingErrors {
                let monitor = try options.openPathMonitor(restriction).monitor
                defer { monitor.monitor?.stop() }
                let path = monitor.askPath()
                Terminal.writeLine(output.json ? path.json(restriction).serialized() : renderPath(path, restriction, style: output.textStyle(verbose: verbose)))
                return path.status == .satisfied
            }
            if !satisfied { throw ExitStatus.notReachable.exitCode }
            return
        }
        let online = try await reportingErrors {
            let source = try options.openSource()
            defer { source.stop() }
            let snapshot = try await source.snapshot()
            let counters = verbose ? try await source.counters() : nil
            if output.json {
                var json = snapshot.json
                if let counters, case let .object(members) = json {
                    json = .object(members + [("overruns", .uint(counters.overruns)), ("resyncs", .uint(counters.resyncs))])
                }
                if verbose, case let .object(members) = json {
                    json = .object(members + [("stallEvidence", snapshot.stallEvidence?.json ?? .null)])
                }
                Terminal.writeLine(json.serialized())
            } else {
                var text = renderStatus(snapshot, style: output.textStyle(verbose: verbose))
                if let counters { text += "\nNetlink: \(counters.overruns) overrun(s), \(counters.resyncs) resync(s)" }
                if verbose { text += "\n" + renderStallEvidence(stalled: snapshot.host.stalled, snapshot.stallEvidence) }
                Terminal.writeLine(text)
            }
            return snapshot.host.state == .online
        }
        if !online { throw ExitStatus.notReachable.exitCode }
    }

    /// `status --unit NAME`: whether the service's own traffic reaches the internet (CheckUnit),
    /// through which interface, and its policy layer's facts; exit 1 when it does not.
    private func unitStatus(_ unit: String) async throws {
        let (result, explanation) = try await reportingErrors { try await UnitQuestion.ask(unit, "", options: options) }
        let name = explanation.unit ?? unit
        let policy = explanation[.policy]?.evidence ?? []
        // A watched unit's own traffic (reachd.conf [Units] Watch=) stands in for the host's.
        let own = UnitQuestion.ownTraffic(explanation)
        let stalled = own?.status == .broken
        if output.json {
            Terminal.writeLine(JSONValue.object([
                ("unit", .string(name)), ("online", .bool(result.isReachable)), ("interface", .string(result.interface)),
                ("reason", .string(result.reason?.rawValue ?? "")), ("message", .string(result.message ?? "")),
                ("policy", .array(policy.map { .string($0) })), ("stalled", .bool(stalled)),
                ("traffic", .array((own?.evidence ?? []).map { .string($0) })),
            ]).serialized())
        } else {
            var line = "\(name): " + (result.isReachable ? "online" : "offline")
            if !result.interface.isEmpty { line += " via \(result.interface)" }
            if let reason = result.reason { line += ": \(reason.rawValue)" + (result.message.map { " (\($0))" } ?? "") }
            if stalled { line += ", but its own traffic is stalled" }
            let traffic = (own?.evidence ?? []) + (own.map { $0.fix.isEmpty ? [] : ["fix: " + $0.fix] } ?? [])
            Terminal.writeLine(([line] + (policy + traffic).map { "  " + $0 }).joined(separator: "\n"))
        }
        if !result.isReachable { throw ExitStatus.notReachable.exitCode }
    }

    /// `status IFACE...`: each link picked, ready or not (exit 1 when one is not, or a name
    /// picks none).
    private func links() async throws {
        let allReady = try await reportingErrors {
            let source = try options.openSource()
            defer { source.stop() }
            let snapshot = try await source.snapshot()
            let (interfaces, allMatched) = InterfacesCommand.select(names, from: snapshot)
            if output.json {
                Terminal.writeLine(InterfacesCommand.json(interfaces, generation: snapshot.generation).serialized())
            } else if !interfaces.isEmpty {
                let style = output.textStyle(verbose: verbose)
                Terminal.writeLine(interfaces.map { renderLinkStatus($0, host: snapshot.host, style: style) }.joined(separator: "\n\n"))
            }
            return allMatched && interfaces.allSatisfy { $0.flags.contains(.reachable) }
        }
        if !allReady { throw ExitStatus.notReachable.exitCode }
    }
}
