import ArgumentParser
import Dispatch
import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Print the current state, then one line for every change, until interrupted.",
        discussion: """
            Without targets: the host. A line is printed once per change of the host's answer \
            (state, flags, primary, underlying or available interfaces, the source address, \
            the primary's addresses, the nameservers), never for kernel noise \
            or for an interface that carries none of this host's paths (a container's veth or \
            bridge appearing). With --interfaces, changes of any interface's flags, kind or \
            addresses are printed too, each with the interfaces that changed. Each line is \
            written at once, so the output can be piped.

            Every line starts with when it was written, in local time with milliseconds (as \
            ip -ts monitor), and has one shape: the host's state first, then each interface \
            that changed with its kind and state (the first line: the host as it is, and with \
            --interfaces every interface):
              [2026-11-27T17:40:01.123+01:00] online via eth0 (wired); wlan0 (wifi): removed
            A host change whose source address went away or was replaced (sockets bound to it \
            must be made anew) says "(rebind)" after the host's state. --verbose adds the \
            generation (it increments with every change, host or interface; a gap means a change \
            was not printed), SCNetworkReachability's flags, none when empty, and what moved:
              [...] gen 8: online via eth0 (wired) [reachable|isWired] (rebind) {primary,sourceAddress}; wlan0 (wifi): removed

            With --json: the first line is the full snapshot (as `status --json`), then one \
            object per change with the host keys, generation, changedInterfaces (full objects), \
            removedInterfaces (names), changed (what of the host's answer moved: state, primary, \
            sourceAddress, addresses, deprecated, gateway, dns, expensive, constrained, stall, \
            connectivity, portal, ...; empty for an interface-only change) and rebind (true when a \
            source address went away or was replaced); every object ends with "timestamp", in UTC \
            with milliseconds (2026-11-27T16:40:01.123Z).

            With targets (addresses or host names): the first answer for each target, then one \
            line whenever a target's answer changes (reachable or not, flags, interface, reason); \
            a change that leaves every answer as it was prints nothing. reachd follows each target \
            with a watch; in-process, the targets are checked again after every change. A text \
            line reads (--verbose adds gen N: and the flags):
              [2026-11-27T17:40:02.456+01:00] 192.0.2.1: not reachable via eth0: linkDown
            and a JSON line:
              {"target":"192.0.2.1","flags":["connectionRequired"],"interface":"eth0","reason":"linkDown","generation":9,"timestamp":"2026-11-27T16:40:02.456Z"}
            ("generation" is the network state the answer rests on, left out when unknown).

            Examples:
              reachctl monitor
              reachctl monitor --json | jq -c 'select(.state != "online")'
              reachctl monitor 192.0.2.1 example.org
              reachctl monitor --json vpn.example.com | jq -r .reason

            When reachd goes away (a restart, an upgrade, a crash), the monitor says so once on \
            standard error and waits for it to return (the bus starts it where D-Bus activation \
            is installed); then it watches anew and prints only what differs from the last line \
            printed. A bus that goes away is connected to again when it returns. A hung reachd \
            (stopped, deadlocked) keeps its name and goes quiet: the monitor asks it every 2 s \
            and says so within 5 s, once, and its return too. With --daemon the monitor fails \
            fast instead: reachd going away or not answering ends it (exit 255).

            \(KindOptions.discussion)

            The monitor prints the first path, then one line each time that path changes: it is \
            the library's PathMonitor, as a program of yours would use it (through reachd's \
            WatchPath while reachd runs, in-process while it is away, the same answers either way; \
            with --daemon, reachd going away ends it):
              reachctl monitor --kind wifi
              reachctl monitor --not-kind cellular --json

            Stops on SIGINT (Ctrl-C) or SIGTERM. Exit status: 0 when stopped by a signal, 255 \
            error (an invalid target; with --daemon, reachd went away or stopped answering).
            """
    )

    @Argument(help: ArgumentHelp("Addresses or host names to follow instead of the host.", valueName: "target"))
    var targets: [String] = []

    @Flag(help: "Also print changes of single interfaces (flags, kind, addresses) that leave the host's answer as it was.")
    var interfaces = false

    @OptionGroup var kinds: KindOptions

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    /// reachd follows each target with a watch, and one client may hold 64 (MaxWatchesPerClient=
    /// by default): a longer list is refused up front, not cut off in the middle.
    static let maximumTargets = 64

    func validate() throws {
        if kinds.restriction != nil {
            if !targets.isEmpty { throw ValidationError("--kind/--not-kind follow the host's path, not targets: drop the targets or the kinds.") }
            if interfaces { throw ValidationError("--interfaces prints the host's interface changes, not a path restricted by --kind/--not-kind: drop one.") }
        }
        if targets.count > Self.maximumTargets {
            throw ValidationError(
                "monitor follows at most \(Self.maximumTargets) targets at once (one watch each; reachd's MaxWatchesPerClient=), "
                    + "got \(targets.count): split them over several monitors.")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let json = output.json
            let style = output.textStyle(verbose: options.verbose)
            if let restriction = kinds.restriction {
                let (monitor, whyReachdOnly) = try options.openPathMonitor(restriction)
                defer { monitor.monitor?.stop() }
                let end = whyReachdOnly.map { "reachd went away (\($0): not waiting for it to return)" } ?? "the path monitor ended"
                try await Self.untilSignalled(monitor, whyItEnds: end) { path in
                    Terminal.writeLine(json ? Self.stamped(path.json(restriction)).serialized() : Self.stamped(renderPath(path, restriction, style: style)))
                }
                return
            }
            let source = try options.openSource()
            defer { source.stop() }
            // A hung reachd keeps its name and goes quiet: asked every 2 s, and said.
            let failFast = options.requireDaemon
            let heartbeat: @Sendable () async throws -> Void = { try await ReachdHeartbeat.run(source, failFast: failFast) }
            if targets.isEmpty {
                let interfaces = self.interfaces
                let known = KnownInterfaces()
                // Written where each update arrives (reachd's client thread): no task woken per line.
                let updates = try await source.updates { update in
                    // Every update, shown or not, keeps the kinds known for the lines to come.
                    let before = known.record(update)
                    guard let shown = Self.shown(update, interfaces: interfaces) else { return }
                    Terminal.writeLine(Self.render(shown, json: json, style: style, interfaces: interfaces, known: before))
                }
                try await Self.untilSignalled(updates, alongside: heartbeat) { _ in }
            } else {
                let answers = try await source.answers(for: targets)
                let shown = ShownAnswers()
                try await Self.untilSignalled(answers, alongside: heartbeat) { answer in
                    if answer.result.reason == .invalidTarget {
                        throw ReachctlError("invalid target: \(answer.result.message ?? answer.result.target)")
                    }
                    guard shown.isNew(answer) else { return }
                    Terminal.writeLine(json ? Self.stamped(Self.json(answer)).serialized() : Self.stamped(Self.render(answer, style: style)))
                }
            }
        }
    }

    /// Runs `body` for each element until SIGINT or SIGTERM (a normal end), or until `stream`
    /// ends on its own (an error saying `whyItEnds`: only a source that fails fast ends) or
    /// `body` throws (an error). `alongside` runs meanwhile; only its error ends the monitor.
    private static func untilSignalled<Stream: AsyncSequence & Sendable>(
        _ stream: Stream, whyItEnds: String = "reachd went away (--daemon: not waiting for it to return)",
        alongside: (@Sendable () async throws -> Void)? = nil, _ body: @escaping @Sendable (Stream.Element) throws -> Void
    ) async throws where Stream.Element: Sendable, Stream.Failure == Never {
        let stopSignals = SignalStream(signals: [SIGINT, SIGTERM])
        defer { stopSignals.close() }
        let outcome = await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                do {
                    for await element in stream { try body(element) }
                } catch {
                    return .failed(String(describing: error))
                }
                return .updatesEnded
            }
            group.addTask {
                for await _ in stopSignals.stream { return .signalled }
                return .signalled
            }
            if let alongside {
                group.addTask {
                    do {
                        try await alongside()
                    } catch is CancellationError {
                        return .signalled
                    } catch {
                        return .failed(String(describing: error))
                    }
                    // Done without a word (no reachd to ask): waits for the others.
                    while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                    return .signalled
                }
            }
            let first = await group.next() ?? .updatesEnded
            group.cancelAll()
            return first
        }
        switch outcome {
        case .signalled: return
        case .updatesEnded: throw ReachctlError(whyItEnds)
        case let .failed(message): throw ReachctlError(message)
        }
    }

    private enum Outcome: Sendable, Equatable { case updatesEnded, signalled, failed(String) }

    /// What of `update` is printed: every snapshot; a change only when the host's answer changed
    /// (with the interfaces that changed along), unless `interfaces` asks for every change.
    static func shown(_ update: ReachabilityUpdate, interfaces: Bool) -> ReachabilityUpdate? {
        guard case let .change(change) = update, !interfaces, !change.hostChanged else { return update }
        return nil
    }

    /// One line of the monitor's one shape: the first (a snapshot) as a change of everything,
    /// the host and, with `interfaces`, every interface; `known`: the interfaces before it.
    static func render(
        _ update: ReachabilityUpdate, json: Bool, style: TextStyle = .plain, interfaces: Bool = false, known: [InterfaceStatus] = []
    ) -> String {
        switch update {
        case .snapshot(let snapshot):
            if json { return stamped(snapshot.json).serialized() }
            let whole = ReachabilityChange(
                generation: snapshot.generation, host: snapshot.host, hostChanged: true,
                changedInterfaces: interfaces ? snapshot.interfaces : [], removedInterfaces: [])
            return stamped(renderChange(whole, known: snapshot.interfaces, style: style))
        case .change(let change):
            return json ? stamped(change.json).serialized() : stamped(renderChange(change, known: known, style: style))
        }
    }

    /// `line` after the local time it is written: `[2026-11-27T17:40:01.123+01:00] line`.
    static func stamped(_ line: String, at time: Timestamp = .now()) -> String {
        "[\(time.local)] " + line
    }

    /// `value` (an object) with "timestamp" last, in UTC: `"2026-11-27T16:40:01.123Z"`.
    static func stamped(_ value: JSONValue, at time: Timestamp = .now()) -> JSONValue {
        guard case let .object(members) = value else { return value }
        return .object(members + [("timestamp", .string(time.utc))])
    }

    /// `192.0.2.1: not reachable via eth0: linkDown`; verbose:
    /// `gen 9: 192.0.2.1: not reachable via eth0 [connectionRequired]: linkDown`.
    static func render(_ answer: TargetAnswer, style: TextStyle = .plain) -> String {
        let result = answer.result
        var line = style.verbose ? answer.generation.map { "gen \($0): " } ?? "" : ""
        line += "\(result.target): " + (result.isReachable ? style.paint("reachable", .good) : style.paint("not reachable", .bad))
        if !result.interface.isEmpty { line += " via \(result.interface)" }
        if style.verbose { line += " [\(renderFlags(result.flags))]" }
        if let reason = result.reason { line += ": \(reason.rawValue)" }
        return line
    }

    /// `{"target":...,"flags":[...],"interface":...,"reason":...,"generation":9}`
    static func json(_ answer: TargetAnswer) -> JSONValue {
        let result = answer.result
        var members: [(String, JSONValue)] = [
            ("target", .string(result.target)),
            ("flags", result.flags.json),
            ("interface", .string(result.interface)),
            ("reason", .string(result.reason?.rawValue ?? "")),
        ]
        if let generation = answer.generation { members.append(("generation", .uint(generation))) }
        return .object(members)
    }
}

/// The interfaces seen so far, kept whole from the snapshot and each change, so that every line
/// names the kind of the interfaces it mentions, the primary's too when it did not change.
final class KnownInterfaces: Sendable {
    private let picture = Mutex<ReachabilitySnapshot?>(nil)

    /// Takes in `update`; returns the interfaces known before it, by index.
    func record(_ update: ReachabilityUpdate) -> [InterfaceStatus] {
        picture.withLock { picture in
            let before = picture?.interfaces ?? []
            switch update {
            case let .snapshot(snapshot): picture = snapshot
            case let .change(change): picture = picture?.applying(change)
            }
            return before
        }
    }
}

/// The last answer printed per target, so a repeat prints nothing.
final class ShownAnswers: Sendable {
    private let shown = Mutex<[String: TargetAnswer.Essence]>([:])

    /// Whether `answer` differs from the last one shown for its target (and remembers it).
    func isNew(_ answer: TargetAnswer) -> Bool {
        shown.withLock { shown in
            guard shown[answer.result.target] != answer.essence else { return false }
            shown[answer.result.target] = answer.essence
            return true
        }
    }
}

/// Delivers the given signals as values instead of letting them end the process, until `close()`
/// restores their default action.
final class SignalStream: @unchecked Sendable {
    // @unchecked: `sources` is written only in init and read in close(), both on the owning task.
    let stream: AsyncStream<Int32>
    private let signals: [Int32]
    private var sources: [any DispatchSourceSignal] = []

    init(signals: [Int32]) {
        self.signals = signals
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        for number in signals {
            // Dispatch only sees a signal that the default action does not handle first.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            sources.append(source)
        }
    }

    func close() {
        for source in sources { source.cancel() }
        for number in signals { signal(number, SIG_DFL) }
    }
}
