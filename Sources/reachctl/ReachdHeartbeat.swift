import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// While `wait` and `monitor` follow reachd, whether it still answers. A reachd that dies is
/// seen at once (the bus says its name has no owner); a hung one (stopped, deadlocked, its loop
/// stuck) keeps its name and just goes quiet, which reads like a network where nothing changes.
/// So reachctl asks it every `interval` (one status call, answered from memory) and says so when
/// no reply comes within `DaemonSource.callTimeout`: within `interval + callTimeout` (4 s) of
/// the hang. reachctl(1) states that bound.
enum ReachdHeartbeat {
    /// Between two questions: a D-Bus round trip every 2 s is nothing to reachd, and with the
    /// 2 s call timeout a hang is said within 4 s, inside the 5 s reachctl(1) promises.
    static let interval: Duration = .seconds(2)

    /// Asks `source` (when it is reachd) until cancelled. A reply missing for the call timeout is
    /// said once on standard error, and its return once; with `failFast` (--daemon) the first
    /// missing reply ends the command instead (thrown). A call refused at once is reachd gone,
    /// which the source itself says.
    static func run(_ source: any ReachabilitySource, failFast: Bool) async throws {
        guard let daemon = source as? DaemonSource else { return }
        var quiet = false
        while !Task.isCancelled {
            try await Task.sleep(for: interval)
            do {
                try await daemon.ping()
                if quiet {
                    quiet = false
                    Terminal.write("reachctl: reachd answers again\n", to: STDERR_FILENO)
                }
            } catch let error as BusError where isTimeout(error) {
                if failFast { throw ReachctlError(hung(" (--daemon: not waiting for it)")) }
                guard !quiet else { continue }
                quiet = true
                Terminal.write("reachctl: \(hung("; its last answers may be stale: waiting for it to answer again"))\n", to: STDERR_FILENO)
            } catch is CancellationError {
                return
            } catch {
                // Gone (the source says so) or the bus itself: not a hang.
                continue
            }
        }
    }

    /// `source`'s updates, ended when reachd stops answering (said once on standard error), as
    /// they end when it goes away: for `hold`, whose answer must not outlive the reachd it
    /// came from.
    static func updatesUntilHung(_ source: any ReachabilitySource) async throws -> AsyncStream<ReachabilityUpdate> {
        let inner = try await source.updates()
        guard source is DaemonSource else { return inner }
        let (stream, continuation) = AsyncStream.makeStream(of: ReachabilityUpdate.self, bufferingPolicy: .unbounded)
        let forward = Task {
            for await update in inner { continuation.yield(update) }
            continuation.finish()
        }
        let beat = Task {
            do {
                try await run(source, failFast: true)
            } catch is ReachctlError {
                Terminal.write("reachctl: \(hung(""))\n", to: STDERR_FILENO)
                continuation.finish()
            } catch {
                return
            }
        }
        continuation.onTermination = { _ in
            forward.cancel()
            beat.cancel()
        }
        return stream
    }

    static func hung(_ then: String) -> String {
        "reachd does not answer (no reply within \(DurationText.format(DaemonSource.callTimeout)): hung or stopped?)\(then)"
    }

    static func isTimeout(_ error: BusError) -> Bool {
        ["org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.NoReply", "System.Error.\(ETIMEDOUT)"].contains(error.name)
    }
}
