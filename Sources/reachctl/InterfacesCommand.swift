import ArgumentParser
import Reachability

struct InterfacesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "interfaces",
        abstract: "List the network interfaces with their kind, reachability flags and addresses.",
        discussion: """
            One row per interface that is not ignored by configuration, by index. KIND is what \
            reachd classified the link as (loopback, wired, wifi, cellular, vpn, bridge, virtual, \
            other); FLAGS says whether the link could carry traffic now (reachable) or is up but \
            not ready (connectionRequired), plus its kind flags.

            With --json it prints {"generation": N, "interfaces": [...]}, each interface with the \
            keys index, name, kind, flags and addresses.

            Examples:
              reachctl interfaces
              reachctl interfaces --json | jq -r '.interfaces[] | select(.kind == "wifi") | .name'

            Exit status: 0 success, 2 error.
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
                Terminal.writeLine(renderInterfaces(snapshot))
            }
        }
    }
}
