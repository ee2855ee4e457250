import ArgumentParser
import Reachability

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether this host is online, through which interface, and which others could carry traffic.",
        discussion: """
            Prints the connectivity state, the usable interfaces in priority order, the families \
            and gateways of the internet path, whether a nameserver is reachable, and why the host \
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

            Examples:
              reachctl status
              reachctl status --json | jq -r .primaryInterface
              if reachctl status >/dev/null; then echo online; fi

            \(KindOptions.discussion)

            Examples with kinds:
              reachctl status --kind wifi
              reachctl status --not-kind cellular --not-kind vpn --json | jq .availableInterfaces

            Exit status: 0 online (with --kind/--not-kind: satisfied), 1 local or offline \
            (unsatisfied), 255 error.
            """
    )

    @OptionGroup var kinds: KindOptions

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    /// A global option (`reachctl --verbose` reads as `reachctl status --verbose`).
    var verbose: Bool { options.verbose }

    func run() async throws {
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
}
