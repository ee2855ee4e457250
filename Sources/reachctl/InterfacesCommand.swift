import ArgumentParser
import Reachability

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

            With --json it prints {"generation": N, "interfaces": [...]}, each interface with the \
            keys index, name, kind, flags and addresses.

            Examples:
              reachctl interfaces
              reachctl interfaces --json | jq -r '.interfaces[] | select(.kind == "wifi") | .name'

            Exit status: 0 success, 255 error.
            """,
        // The singular, and the words of `ip link` and `networkctl list` for the same listing.
        aliases: ["interface", "link", "list"]
    )

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    func run() async throws {
        try await reportingErrors {
            let source = try options.openSource()
            defer { source.stop() }
            let snapshot = try await source.snapshot()
            if output.json {
                let value = JSONValue.object([
                    ("generation", .uint(snapshot.generation)),
                    ("interfaces", .array(snapshot.interfaces.map(\.json))),
                ])
                Terminal.writeLine(value.serialized())
            } else {
                Terminal.writeLine(renderInterfaces(snapshot, style: output.textStyle(verbose: options.verbose), legend: !output.noLegend))
            }
        }
    }
}
