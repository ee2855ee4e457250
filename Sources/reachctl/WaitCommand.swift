import ArgumentParser
import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until the host is online (or a target is reachable, or a link of a kind is usable).",
        discussion: """
            Returns as soon as the condition holds, at once when it already does, and never later \
            than --timeout: it follows changes as they happen (reachd's signals, or the kernel's \
            events in-process), it does not poll.

            The condition:
              (default)     the host is online: the kernel's default route leaves
                            through a ready link
              --target T    T (an address or a host name) is reachable now; a name
                            is resolved again after every change, within 5 s
              --kind K      a link of kind K (wired, wifi, cellular, vpn) is usable:
                            ready, with a default route (listed as "Available")
            systemd-networkd-wait-online's selectors, with its meanings:
              -i, --interface IF[:STATE]
                            wait for these links only (repeatable; all of them,
                            or one with --any), each at least in STATE: up
                            (networkd's no-carrier), ready (the default;
                            networkd's degraded: carrier and a usable address),
                            routable (a routable address, not link-local)
              -4, -6        an IPv4 (IPv6) address on each link waited for;
                            without --interface, an IPv4 (IPv6) internet path
              --any         one of the --interface links is enough (without
                            --interface, online already means one link)
              --dns         a configured nameserver is routable too
            A link reachd does not list (absent, or ignored by configuration) never \
            counts. Conditions given together must all hold. A host (or a target) whose path \
            is stalled (its own TCP traffic stopped flowing: see reachctl status --verbose) \
            does not count as online (or reachable) unless --allow-stalled is given.

            --from-config takes the timeout and the condition from the [WaitOnline] \
            section of reachd.conf (Timeout=, Target=, Kind=; see reachd.conf(5)), as \
            reachd-wait-online.service does; options given as well take precedence.

            Examples:
              reachctl wait                            until online, at most 30 s
              reachctl wait --timeout 2m --kind wired  until a wired uplink works
              reachctl wait --timeout '1h 30min'       systemd's time spans work too
              reachctl wait --target 192.0.2.1 --timeout 10s && mount /srv/backup
              reachctl wait --timeout 5s || echo "offline: using the cache"
              reachctl wait --internet --timeout 1m    until reachd's probe gets its answer
              reachctl wait -i eth0 -i wlan0 --any -4  until eth0 or wlan0 has IPv4
              reachctl wait --interface eth0:routable --dns

            In a systemd unit, to start a service only once its server can be reached \
            (a timeout fails the start; write ExecStartPre=-/usr/bin/reachctl ... to start \
            anyway):
              [Unit]
              Wants=reachd.service
              After=reachd.service
              [Service]
              ExecStartPre=/usr/bin/reachctl wait --timeout 60s --target api.example.com

            Prints the final state (the status line, or the target's answer) on success; on a \
            timeout, says on standard error what it waited for and what it saw instead. With --json it prints one object \
            either way: the status keys (as `status --json`), "satisfied" (true or false), and \
            "check" (the target's answer) with --target.

            When reachd goes away while waiting (a restart), wait says so once on standard \
            error and goes on waiting for reachd to return, within the same --timeout; with \
            --daemon it fails at once (exit 255). With --internet and reachd's probe off, wait \
            fails at once (exit 255) and says so: the verdict it waits for never comes. A hung reachd is asked every 2 s and said \
            within 5 s, once, and its return too; with --daemon it fails (exit 255).

            Exit status: 0 the condition holds, 1 the timeout passed first, 255 usage or error \
            (an invalid target; with --daemon, reachd went away or stopped answering).
            """
    )

    // .unconditional: `--timeout -1s` reaches the duration parser, which says what is wrong,
    // instead of being taken for an unknown option.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("How long to wait at most, as a systemd time span: 500ms, 30s, 2min, 1h 30min, or seconds (default: 30s).", valueName: "duration"),
        transform: parseDurationArgument)
    var timeout: Duration?

    @Option(help: ArgumentHelp("Wait until this address or host name is reachable.", valueName: "target"))
    var target: String?

    @Option(help: ArgumentHelp("Wait until a link of this kind is usable.", valueName: "kind"))
    var kind: WaitKind?

    @Flag(help: "Take the timeout and condition from [WaitOnline] in reachd.conf (what reachd-wait-online.service runs); options given too win.")
    var fromConfig = false

    /// Without --timeout or [WaitOnline] Timeout=.
    static let defaultTimeout: Duration = .seconds(30)

    @Flag(help: ArgumentHelp(
        "Wait until the internet really answers: reachd's connectivity probe says full (needs reachd running with [Connectivity] URL= in reachd.conf; a captive portal or a dead uplink keeps waiting)."))
    var internet = false

    @Flag(help: "Return on a path whose traffic is stalled too (by default a stalled host is not online enough).")
    var allowStalled = false

    @Option(
        name: [.customShort("i"), .customLong("interface")],
        help: ArgumentHelp("Wait for this link, at least in STATE (up, ready, routable; default ready), ignoring the others; repeatable.", valueName: "if[:state]"),
        transform: parseInterfaceRequirement)
    var interfaceRequirements: [InterfaceRequirement] = []

    @Flag(name: [.customShort("4"), .customLong("ipv4")], help: "Require an IPv4 address on each link waited for (without --interface: an IPv4 internet path).")
    var ipv4 = false

    @Flag(name: [.customShort("6"), .customLong("ipv6")], help: "Require an IPv6 address on each link waited for (without --interface: an IPv6 internet path).")
    var ipv6 = false

    @Flag(help: "With --interface, one of the links is enough instead of all of them.")
    var any = false

    @Flag(help: "Require a routable nameserver too (SupportsDNS).")
    var dns = false

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    /// The kinds a user waits for (`InterfaceKind` without the ones that never carry an uplink).
    enum WaitKind: String, ExpressibleByArgument, CaseIterable, Sendable {
        case wired, wifi, cellular, vpn
        var interfaceKind: InterfaceKind { InterfaceKind(rawValue: rawValue)! }
    }

    func run() async throws {
        // A bad reachd.conf is refused here, by FILE:LINE, as reachd refuses it (exit 255).
        let settings = fromConfig ? try options.settings() : nil
        let timeout = self.timeout ?? settings?.waitOnlineTimeout ?? Self.defaultTimeout
        let target = self.target ?? settings?.waitOnlineTarget
        let kind = self.kind?.interfaceKind ?? settings?.waitOnlineKind
        let deadline = ContinuousClock.now + timeout
        let condition = Condition(
            target: target, kind: kind, internet: internet, allowStalled: allowStalled,
            selectors: Selectors(interfaces: interfaceRequirements, any: any, ipv4: ipv4, ipv6: ipv6, dns: dns))
        let final = try await reportingErrors {
            // The probe may not eat the whole budget: without an answer, in-process it is.
            let source = try options.openSource(probeTimeout: min(CommonOptions.probeTimeout, timeout))
            defer { source.stop() }
            if internet, !(source is DaemonSource) {
                // Only reachd probes: in-process the answer would stay unknown until the timeout.
                throw ReachctlError("--internet needs reachd running with [Connectivity] URL= set in reachd.conf (the connectivity probe); reachd is not answering on the bus")
            }
            let internet = self.internet
            var final = try await Self.race(deadline: deadline) {
                if internet, let daemon = source as? DaemonSource, try await Self.probeIsOff(daemon) {
                    throw ReachctlError(Self.probeOff)
                }
                return try await Self.follow(source, until: condition, failFast: options.requireDaemon)
            } timedOut: {
                condition.state
            }
            // A target's answer can settle the wait before the first snapshot was recorded: the
            // report (status keys, summary line) still describes the host.
            // (Only then: after a timeout nothing may hold the process any longer.)
            if final.snapshot == nil, condition.holds(final) { final.snapshot = try? await source.snapshot() }
            return final
        }
        if final.answer?.result.reason == .invalidTarget, let answer = final.answer?.result {
            Terminal.write("reachctl: invalid target: \(answer.message ?? answer.target)\n", to: STDERR_FILENO)
            throw ExitStatus.error.exitCode
        }
        let satisfied = condition.holds(final)
        if output.json {
            Terminal.writeLine(Self.json(final, satisfied: satisfied).serialized())
        } else if satisfied {
            Terminal.writeLine(final.answer.map { MonitorCommand.render(TargetAnswer(result: $0.result, generation: nil)) }
                ?? renderSummary(final.snapshot?.host ?? HostStatus(), interfaces: final.snapshot?.interfaces ?? []))
        } else {
            // One line that a journal reader understands alone: what was waited for, what was seen.
            Terminal.write(
                "reachctl: gave up after \(DurationText.format(timeout)) waiting for \(condition.goal); saw: \(condition.missing(final))\n",
                to: STDERR_FILENO)
        }
        if !satisfied { throw ExitStatus.notReachable.exitCode }
    }

    /// Follows the source until the condition holds; returns the state then. Ends early (with
    /// the state so far) when a target turns out invalid. Asks reachd meanwhile whether it still
    /// answers (`ReachdHeartbeat`): a hung reachd is said, or with `failFast` ends the wait.
    static func follow(_ source: any ReachabilitySource, until condition: Condition, failFast: Bool = false) async throws -> State {
        let updates = try await source.updates()
        let answers: AsyncStream<TargetAnswer>? = if let target = condition.target {
            try await source.answers(for: [target])
        } else {
            nil
        }
        return try await withThrowingTaskGroup(of: State?.self) { group in
            group.addTask {
                for await update in updates { if let done = condition.record(update) { return done } }
                return nil
            }
            if let answers {
                group.addTask {
                    for await answer in answers { if let done = condition.record(answer) { return done } }
                    return nil
                }
            }
            if source is DaemonSource {
                // Ends only by throwing (--daemon and a hang) or by being cancelled below.
                group.addTask {
                    try await ReachdHeartbeat.run(source, failFast: failFast)
                    throw CancellationError()
                }
            }
            while let finished = try await group.next() {
                if let state = finished {
                    group.cancelAll()
                    return state
                }
                // A stream ended without the condition: the source is gone.
                group.cancelAll()
                // Only a source that fails fast ends: --daemon.
                throw ReachctlError("reachd went away while waiting (--daemon: not waiting for it to return)")
            }
            throw ReachctlError("nothing to wait for")
        }
    }

    static let probeOff = "--internet waits for the verdict of reachd's connectivity probe, and the probe is off: "
        + "set [Connectivity] URL= in reachd.conf to turn it on, or wait without --internet"

    /// Whether reachd's probe is off: --internet would wait for a verdict that never comes, and
    /// a timeout's exit status (1) reads as "skip" to ExecCondition=. Asked (Validate, which
    /// says `ConnectivityStatus.probeOff` exactly then) only while the verdict is unknown, under
    /// the deadline; an older reachd that does not say it is waited for as before.
    static func probeIsOff(_ daemon: DaemonSource) async throws -> Bool {
        guard try await daemon.snapshot().host.connectivity.verdict == .unknown else { return false }
        return try await daemon.validate().isProbeOff
    }

    /// Runs `body` against a deadline; whichever ends first wins. The loser is cancelled and
    /// not waited for, so a stuck call can never hold the process past the deadline.
    static func race(
        deadline: ContinuousClock.Instant,
        _ body: @escaping @Sendable () async throws -> State,
        timedOut: @escaping @Sendable () -> State
    ) async throws -> State {
        let outcome = Mutex<CheckedContinuation<Result<State, any Error>, Never>?>(nil)
        let finish: @Sendable (Result<State, any Error>) -> Void = { result in
            outcome.withLock { continuation in
                continuation?.resume(returning: result)
                continuation = nil
            }
        }
        var tasks: [Task<Void, Never>] = []
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<State, any Error>, Never>) in
            outcome.withLock { $0 = continuation }
            tasks.append(Task {
                do {
                    finish(.success(try await body()))
                } catch {
                    finish(.failure(error))
                }
            })
            tasks.append(Task {
                try? await Task.sleep(until: deadline, clock: .continuous)
                finish(.success(timedOut()))
            })
        }
        for task in tasks { task.cancel() }
        return try result.get()
    }

    static func json(_ state: State, satisfied: Bool) -> JSONValue {
        var members: [(String, JSONValue)] = []
        if case let .object(status)? = state.snapshot?.json { members = status }
        members.append(("satisfied", .bool(satisfied)))
        if let answer = state.answer { members.append(("check", answer.result.json)) }
        return .object(members)
    }
}
