import ArgumentParser
import Dispatch
import Reachability
#if canImport(Glibc)
import Glibc
#endif

struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Print the current state, then one line for every change, until interrupted.",
        discussion: """
            A change is printed once per real change of what a user can see (host state, flags, \
            primary or available interfaces, an interface's flags, kind or addresses), never for \
            kernel noise that changes nothing. Each line is written at once, so the output can be \
            piped. The generation increments with every change; a gap means a change was missed.

            A text line reads:
              gen 8: online via eth0 (wired) [reachable|isWired]; wlan0: removed

            With --json: the first line is the full snapshot (as `status --json`), then one \
            object per change with the host keys, generation, changedInterfaces (full objects) \
            and removedInterfaces (names).

            Examples:
              reachctl monitor
              reachctl monitor --json | jq -c 'select(.state != "online")'

            Stops on SIGINT (Ctrl-C) or SIGTERM. Exit status: 0 when stopped by a signal, 2 error.
            """
    )

    @OptionGroup var options: CommonOptions

    func run() async throws {
        try await reportingErrors {
            let source = try options.openSource()
            defer { source.stop() }
            let updates = try await source.updates()
            let stopSignals = SignalStream(signals: [SIGINT, SIGTERM])
            defer { stopSignals.close() }

            let json = options.json
            let outcome = await withTaskGroup(of: Outcome.self) { group in
                group.addTask {
                    for await update in updates { Terminal.writeLine(Self.render(update, json: json)) }
                    return .updatesEnded
                }
                group.addTask {
                    for await _ in stopSignals.stream { return .signalled }
                    return .signalled
                }
                let first = await group.next() ?? .updatesEnded
                group.cancelAll()
                return first
            }
            if outcome == .updatesEnded { throw ReachctlError("the monitor stopped unexpectedly") }
        }
    }

    private enum Outcome: Sendable { case updatesEnded, signalled }

    static func render(_ update: ReachabilityUpdate, json: Bool) -> String {
        switch update {
        case .snapshot(let snapshot): json ? snapshot.json.serialized() : renderStatus(snapshot)
        case .change(let change): json ? change.json.serialized() : renderChange(change)
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
