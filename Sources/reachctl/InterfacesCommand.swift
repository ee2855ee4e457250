import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

struct InterfacesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "interfaces",
        abstract: "List the network interfaces with their kind, reachability flags and addresses.",
        discussion: """
            One row per interface that is not ignored by configuration, by index. KIND is what \
            reachd classified the link as (loopback, wired, wifi, cellular, vpn, bridge, virtual, \
            other); STATE says whether the link could carry traffic now: ready (up, carrier and a \
            usable address), not ready (up, but no carrier or no usable address yet), radio off \
            (its Wi-Fi or cellular radio is switched off), down; then stalled, metered or \
            constrained when they apply. On a terminal the states are coloured (--no-color, \
            NO_COLOR or TERM=dumb turn it off). --verbose adds a FLAGS column with \
            SCNetworkReachability's names (reachable, connectionRequired, kind flags); \
            --no-legend leaves out the header line, for scripts that read the columns.

            Names or shell patterns after the command list only those interfaces (quote a \
            pattern so that the shell leaves it alone): reachctl interfaces eth0, reachctl \
            interfaces 'en*' 'wl*'. A name or pattern that matches no interface is said on \
            standard error.

            With --json it prints {"generation": N, "interfaces": [...]}, each interface with the \
            keys index, name, kind, state (ready, not ready, radio off or down), flags, \
            addresses, stalled, expensiveReason and networkID.

            Examples:
              reachctl interfaces
              reachctl interfaces 'en*'
              reachctl interfaces --json | jq -r '.interfaces[].state'

            Exit status: 0 success, 1 a name or pattern matched no interface, 255 error.
            """,
        // The singular, and the words of `ip link` and `networkctl list` for the same listing.
        aliases: ["interface", "link", "list"]
    )

    @Argument(help: ArgumentHelp("Only the interfaces with these names or shell patterns ('en*').", valueName: "interface"))
    var names: [String] = []

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let allMatched = try await reportingErrors {
            let source = try options.openSource()
            defer { source.stop() }
            let snapshot = try await source.snapshot()
            let (interfaces, allMatched) = Self.select(names, from: snapshot)
            if output.json {
                Terminal.writeLine(Self.json(interfaces, generation: snapshot.generation).serialized())
            } else {
                Terminal.writeLine(renderInterfaceTable(interfaces, style: output.textStyle(verbose: options.verbose), legend: !output.noLegend))
            }
            return allMatched
        }
        if !allMatched { throw ExitStatus.notReachable.exitCode }
    }

    /// The interfaces `names` pick (every one when there are none), each name or pattern that
    /// picked none said on standard error; and whether every one picked some.
    static func select(_ names: [String], from snapshot: ReachabilitySnapshot) -> (interfaces: [InterfaceStatus], allMatched: Bool) {
        guard !names.isEmpty else { return (snapshot.interfaces, true) }
        let (selected, unmatched) = selectInterfaces(names, from: snapshot.interfaces)
        for name in unmatched { Terminal.write("reachctl: no interface matches '\(name.escapingControlCharacters())'\n", to: STDERR_FILENO) }
        return (selected, unmatched.isEmpty)
    }

    /// `{"generation": N, "interfaces": [...]}`.
    static func json(_ interfaces: [InterfaceStatus], generation: UInt64) -> JSONValue {
        .object([("generation", .uint(generation)), ("interfaces", .array(interfaces.map(\.json)))])
    }
}
