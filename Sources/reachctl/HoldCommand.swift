import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// `reachctl hold CONDITION...`: runs exactly while the conditions hold, for the template unit
/// reachd-is@.service (reachctl(1), "hold"; docs/services.md). It waits until every condition
/// holds, then tells systemd it is ready (sd_notify READY=1), and exits 0 as soon as one stops
/// holding, so a unit with `BindsTo=reachd-is@unmetered.service` is stopped by systemd at once.
/// It follows changes as they come (reachd's signals, or the kernel's events in-process) and
/// never polls; when reachd goes away it goes on in-process, from the kernel's own events.
struct HoldCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hold",
        abstract: "Run while conditions on the host's network hold (reachd-is@.service): ready when they begin, exit when they end.",
        discussion: """
            Waits until every condition named holds (the words of `reachctl is`), then sends \
            READY=1 to systemd (sd_notify; outside systemd it prints one line) and keeps \
            running while they hold. When one stops holding it says which and why in one line on \
            standard error and exits 0. It follows reachd's signals (or, without reachd, the \
            kernel's events in-process); it never polls. When reachd goes away (killed, restarted, \
            or ended by its watchdog when hung) it says so and goes on in-process, from the \
            kernel's own events; so it does when reachd hangs (asked every 2 s, said within 5 s). \
            With --daemon it fails instead (exit 255). It prints no answer \
            to parse: --json is refused.

            Made for the template unit reachd-is@.service, which runs `reachctl hold %i` and \
            restarts it after each end, so that the unit is active exactly while the condition \
            holds. A service that should run only then says:
              [Unit]
              BindsTo=reachd-is@unmetered.service
              After=reachd-is@unmetered.service
              [Install]
              WantedBy=reachd-is@unmetered.service

            Examples:
              systemctl start reachd-is@via-vpn.service
              reachctl hold unmetered && echo "the network became metered"

            Exit status: 0 the conditions held and then one ended, 255 usage or error (an \
            unknown condition; with --daemon, reachd went away or stopped answering).
            """
    )

    @Argument(help: ArgumentHelp("Conditions that must all hold (as for reachctl is).", valueName: "condition"))
    var conditions: [String] = []

    // Held, not shown: a global --json (reachctl --json hold online) reaches this group too, and
    // is refused rather than ignored.
    @OptionGroup(visibility: .private) var output: OutputOptions

    @OptionGroup var options: CommonOptions

    func validate() throws {
        try IsCommand.validate(conditions)
        if output.json {
            throw ValidationError("--json: hold prints no answer to parse; it tells systemd (READY=1, STATUS=) and says on standard error why it ends. For JSON, ask reachctl is --json or monitor --json.")
        }
    }

    func run() async throws {
        let conditions = self.conditions.compactMap(HostCondition.init(word:))
        var hold = Holding(conditions: conditions)
        try await reportingErrors {
            // Through reachd, the updates end when it goes away (killed, or ended by systemd's
            // watchdog when hung): its last answer is then nobody's, and a unit bound to a
            // condition that ended meanwhile would run on. So the answers go on in-process, from
            // the kernel itself, as `is` answers without reachd.
            let source = try options.openSource(followsReachd: false)
            let ended = try await hold.follow(source)
            source.stop()
            if ended { return }
            guard !options.requireDaemon, !(source is InProcessSource) else {
                throw ReachctlError("reachd went away while holding \(hold.words) (--daemon: not answering in-process)")
            }
            Terminal.write("reachctl: reachd went away; holding \(hold.words) in-process from now on\n", to: STDERR_FILENO)
            let local = try options.inProcessSource()
            defer { local.stop() }
            if try await hold.follow(local) { return }
            throw ReachctlError("the kernel's events ended while holding \(hold.words)")
        }
    }
}

/// Whether the conditions hold, followed through one source's updates and then another's.
private struct Holding {
    let conditions: [HostCondition]
    var words: String { conditions.map(\.word).joined(separator: " ") }
    private var holding = false
    private var waitingFor: String?

    init(conditions: [HostCondition]) { self.conditions = conditions }

    /// Follows `source` until a condition that held ends (true) or its updates end (false).
    mutating func follow(_ source: any ReachabilitySource) async throws -> Bool {
        // Through reachd they end when it stops answering, too (asked every 2 s).
        let updates = try await ReachdHeartbeat.updatesUntilHung(source)
        // Keeps the picture whole from the first snapshot and each change after it, as
        // `wait` does; its own condition (online) is not what is asked here.
        let picture = WaitCommand.Condition(target: nil, kind: nil)
        for await update in updates {
            _ = picture.record(update)
            guard let snapshot = picture.state.snapshot else { continue }
            let failures = conditions.compactMap { condition in condition.failure(in: snapshot).map { "\(condition.word): no, \($0)" } }
            if failures.isEmpty {
                guard !holding else { continue }
                holding = true
                // READY=1 is what starts the units ordered after reachd-is@...service.
                if !ServiceManager.notify("READY=1\nSTATUS=holds: \(words)") { Terminal.writeLine("holds: \(words)") }
                continue
            }
            let why = failures.joined(separator: "; ")
            if holding {
                // One line for the journal: what ended and why; then the exit, which stops
                // every unit bound to this one.
                Terminal.write("reachctl: no longer holds: \(why)\n", to: STDERR_FILENO)
                ServiceManager.notify("STOPPING=1\nSTATUS=ended: \(why)")
                return true
            }
            if why != waitingFor {
                waitingFor = why
                ServiceManager.notify("STATUS=waiting: \(why)")
            }
        }
        return false
    }
}
