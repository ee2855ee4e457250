import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

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

            The answer is the calling user's: the kernel routes each user's traffic by its \
            rules (ip rule ... uidrange), and reachd asks as the caller. --user asks as another \
            user (root only; reachd, or in-process as root).

            Reasons when not reachable: noRoute, linkDown, noAddress, policyBlocked (an \
            unreachable, prohibit or blackhole route or rule: a kill switch), dnsTimeout, \
            dnsNotFound, dnsFailure, invalidTarget, firewallRefused.

            With --port, as root, the host's own firewall is judged too: the nftables rules of \
            its output and postrouting hooks, for a TCP connection (or --udp) to that port. A rule certain to \
            drop or reject it makes the answer firewallRefused, naming the rule; one that \
            depends on what is not known before the connection (its source port, a rate) \
            does not. reachd runs unprivileged and cannot read them.

            --unit NAME answers as the systemd service NAME's traffic would go (reachd only): \
            reachd reads its sandbox from systemd and routes as its user, in its network \
            namespace (NetworkNamespacePath=, PrivateNetwork=), then applies its \
            RestrictAddressFamilies=, IPAddressAllow=/IPAddressDeny= and RestrictNetworkInterfaces=; \
            what denies is the message (reason policyBlocked), and `why --unit` names it in its \
            policy layer. Without a target, the internet. Root may ask about any service, \
            another user about the services that run as that user.

            --validate (no target) asks whether the internet really answers through the host's \
            path: reachd's connectivity probe runs now (or the one in flight is joined) and its \
            verdict is printed: full, portal (with where it was redirected), limited or none, \
            and what the probe saw. It needs reachd running with [Connectivity] URL= in \
            reachd.conf: the probe runs only in reachd, never in-process.

            Examples:
              reachctl check 192.0.2.1
              reachctl check example.org --timeout 500ms
              reachctl check --json fe80::1%wlan0 | jq -r .reason
              sudo reachctl check --user nobody 198.51.100.7
              sudo reachctl check 198.51.100.7 --port 443
              reachctl check --validate --json | jq -r .connectivity
              reachctl check --unit backup.service 198.51.100.7

            Exit status: 0 reachable, 1 not reachable, 255 invalid target or error. With \
            --validate: 0 full, 1 portal, limited, none or no verdict yet, 255 error (reachd not answering, or its \
            probe off).
            """
    )

    @Argument(help: "An IPv4/IPv6 address or a host name.")
    var target: String?

    @Flag(name: .customLong("validate"), help: "Ask reachd's connectivity probe whether the internet answers through the host's path, now (needs reachd with [Connectivity] URL=).")
    var validateInternet = false

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "How long a host name may take to resolve, as a systemd time span: 500ms, 2s, 1min 30s, or seconds (default: DefaultTimeout= of reachd.conf, 5s unless configured).",
            valueName: "duration"),
        transform: parseDurationArgument)
    var timeout: Duration?

    @Option(
        name: .customLong("user"),
        help: ArgumentHelp("Answer as this user's traffic is routed (a name or a uid; only root may name another user).", valueName: "user"))
    var user: String?

    @OptionGroup var unitOption: UnitQuestion.Option

    var unit: String? { unitOption.unit }

    @OptionGroup var firewall: FirewallOptions

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    /// `--user` as a uid: a number as written, else the name from the user database.
    static func uid(of user: String) -> UInt32? {
        if let uid = UInt32(user) { return uid }
        return getpwnam(user).map { $0.pointee.pw_uid }
    }

    func validate() throws {
        if validateInternet, let target {
            throw ValidationError("--validate takes no target: it asks whether the internet answers through the host's path ('\(target)' was given).")
        }
        if validateInternet, timeout != nil {
            throw ValidationError("--validate takes no --timeout: the probe's own Timeout= of reachd.conf bounds it.")
        }
        if let user {
            if validateInternet { throw ValidationError("--validate takes no --user: the probe answers for the host's path.") }
            guard let uid = Self.uid(of: user) else { throw ValidationError("--user \(user): no such user (give a user name or a uid).") }
            if getuid() != 0, uid != getuid() {
                throw ValidationError("--user \(user): only root may ask as another user (you are uid \(getuid())).")
            }
        }
        if let unit {
            if validateInternet || user != nil { throw ValidationError("--unit \(unit) takes neither --validate nor --user: the unit's own user and sandbox decide.") }
            if let port = firewall.port {
                throw ValidationError(
                    "--unit \(unit) takes no --port \(port): the service may run in a network namespace whose firewall reachctl does not read; "
                        + "`reachctl check TARGET --port \(port)` judges the host's own rules.")
            }
        }
        if !validateInternet, target == nil, unit == nil {
            throw ValidationError("Missing expected argument '<target>' (an address or a host name), or --validate.")
        }
        if let timeout, timeout > ReachdContract.maximumCheckTimeout {
            throw ValidationError(
                "--timeout \(DurationText.format(timeout)) is above the maximum of \(DurationText.format(ReachdContract.maximumCheckTimeout)) "
                    + "a host check may take; to wait longer for a host, use `reachctl wait --target HOST --timeout ...`.")
        }
        if let timeout, timeout <= .zero {
            throw ValidationError("--timeout must be above zero; leave it out for the configured default (DefaultTimeout=).")
        }
    }

    func run() async throws {
        if let unit {
            let result = try await reportingErrors { try await UnitQuestion.ask(unit, target ?? "", options: options, timeout: timeout).result }
            return try report(result)
        }
        guard let target else { return try await runValidation() }
        var result = try await reportingErrors {
            let source = try options.openSource()
            defer { source.stop() }
            return try await source.check(target, timeout: timeout, asUser: user.flatMap(Self.uid(of:)))
        }
        if result.isReachable, let address = result.addresses.first, let (judgement, question) = firewall.judge(address, uid: user.flatMap(Self.uid(of:)), namespacePath: try options.netns.map(CommonOptions.namespacePath(for:))) {
            result = judgement.applied(to: result, question)
        }
        try report(result)
    }

    private func report(_ result: CheckResult) throws {
        if result.reason == .invalidTarget, !output.json {
            Terminal.write("reachctl: invalid target: \(result.message ?? result.target)\n", to: 2)
            throw ExitStatus.error.exitCode
        }
        Terminal.writeLine(output.json ? result.json.serialized() : renderCheck(result, style: output.textStyle(verbose: options.verbose)))
        if result.reason == .invalidTarget { throw ExitStatus.error.exitCode }
        if !result.isReachable { throw ExitStatus.notReachable.exitCode }
    }

    static let validationNeedsReachd = "--validate needs reachd running with [Connectivity] URL= in reachd.conf: the connectivity probe runs only in reachd, on its event loop"

    /// `--validate`: reachd's Validate, never in-process (there is no probe to run there).
    private func runValidation() async throws {
        let status = try await reportingErrors { () async throws -> ConnectivityStatus in
            guard !options.answersInProcess else { throw ReachctlError(Self.validationNeedsReachd + " (--netns and --sysfs-root answer in-process)") }
            let source: DaemonSource
            do {
                source = try DaemonSource.open(options.bus, probeTimeout: CommonOptions.probeTimeout)
            } catch {
                throw ReachctlError(Self.validationNeedsReachd + "; reachd is not answering: \(error)")
            }
            defer { source.stop() }
            return try await source.validate()
        }
        Terminal.writeLine(output.json ? status.json.serialized() : renderValidation(status))
        switch status.verdict {
        case .full: return
        case .portal, .limited, .none: throw ExitStatus.notReachable.exitCode
        // No verdict because the probe is off (said so, or an older reachd's bare unknown): an
        // error (255). No verdict yet, with its reason (the host went to sleep): not known (1).
        case .unknown where status.isProbeOff || status.detail.isEmpty:
            Terminal.write("reachctl: reachd's connectivity probe is off: set [Connectivity] URL= in reachd.conf to turn it on\n", to: 2)
            throw ExitStatus.error.exitCode
        case .unknown:
            throw ExitStatus.notReachable.exitCode
        }
    }
}
