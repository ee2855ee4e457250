import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

struct MetricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print reachd's Prometheus metrics once, in the text exposition format.",
        discussion: """
            The same text as reachd's /metrics (reachd-metrics.socket) and its node_exporter \
            textfile ([Metrics] in reachd.conf), from reachd over D-Bus (GetMetrics). In-process \
            (no reachd, or --netns) the state and netlink counters are the library's own, the \
            start time is reachctl's, and the counters of checks, watches and probes are 0. \
            reachd(8) lists every metric. The format is Prometheus' own: --json is refused.

            Examples:
              reachctl metrics
              reachctl metrics | promtool check metrics
              reachctl metrics | grep '^reachd_host_state'

            Exit status: 0 success, 255 error.
            """
    )

    // Held, not shown: a global --json given before the command (reachctl --json metrics)
    // reaches this group too, and is refused rather than ignored.
    @OptionGroup(visibility: .private) var output: OutputOptions

    @OptionGroup var options: CommonOptions

    func validate() throws {
        if output.json {
            throw ValidationError("--json: metrics are printed only in Prometheus' text format.")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let source = try options.openSource()
            defer { source.stop() }
            Terminal.write(try await source.metrics(), to: STDOUT_FILENO, raw: true)
        }
    }
}
