import ArgumentParser
import Reachability

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check whether a packet to an address or host could leave this host now, and through which interface.",
        discussion: """
            An address (192.0.2.1, 2001:db8::1, fe80::1%eth0) is answered from the kernel's routing \
            table and the links' states, at once and without DNS. 0.0.0.0 and :: ask whether there \
            is general connectivity.

            A host name is resolved (A and AAAA, /etc/hosts first, then the system's DNS servers) \
            under a hard deadline, and is reachable when any of its addresses is. When no link \
            could carry traffic, or no DNS server is routable, the answer comes at once without \
            sending a query. A dead DNS server costs exactly the --timeout, never more.

            Reasons when not reachable: noRoute, linkDown, noAddress, dnsTimeout, dnsNotFound, \
            dnsFailure, invalidTarget.

            Examples:
              reachctl check 192.0.2.1
              reachctl check example.org --timeout 500ms
              reachctl check --json fe80::1%wlan0 | jq -r .reason

            Exit status: 0 reachable, 1 not reachable, 2 invalid target or error.
            """
    )

    @Argument(help: "An IPv4/IPv6 address or a host name.")
    var target: String

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "How long a host name may take to resolve: 500ms, 2s, 1m, or seconds (default: DefaultTimeout= of reachd.conf, 5s unless configured).",
            valueName: "duration"),
        transform: parseDurationArgument)
    var timeout: Duration?

    @OptionGroup var options: CommonOptions

    func validate() throws {
        if let timeout, timeout > ReachabilityClient.maximumCheckTimeout {
            throw ValidationError(
                "--timeout \(DurationText.format(timeout)) is above the maximum of \(DurationText.format(ReachabilityClient.maximumCheckTimeout)) "
                    + "a host check may take; to wait longer for a host, use `reachctl wait --target HOST --timeout ...`.")
        }
        if let timeout, timeout <= .zero {
            throw ValidationError("--timeout must be above zero; leave it out for the configured default (DefaultTimeout=).")
        }
    }

    func run() async throws {
        let result = try await reportingErrors {
            let source = try options.openSource()
            defer { source.stop() }
            return try await source.check(target, timeout: timeout)
        }
        if result.reason == .invalidTarget, !options.json {
            Terminal.write("reachctl: invalid target: \(result.message ?? result.target)\n", to: 2)
            throw ExitStatus.error.exitCode
        }
        Terminal.writeLine(options.json ? result.json.serialized() : renderCheck(result))
        if result.reason == .invalidTarget { throw ExitStatus.error.exitCode }
        if !result.isReachable { throw ExitStatus.notReachable.exitCode }
    }
}
