#if canImport(Glibc)
import Glibc
#endif

/// Logging for journald: one line per event that matters, on stderr. Under systemd (stderr is
/// the journal: JOURNAL_STREAM is set) each line carries a `<N>` syslog priority prefix, which
/// journald turns into the entry's priority; by hand, lines say `warning:`/`error:` instead.
enum Log {
    nonisolated(unsafe) static var toJournal = getenv("JOURNAL_STREAM") != nil
    nonisolated(unsafe) static var verbose = false

    static func debug(_ message: @autoclosure () -> String) { if verbose { write(7, "", message()) } }
    static func info(_ message: String) { write(6, "", message) }
    static func warning(_ message: String) { write(4, "warning: ", message) }
    static func error(_ message: String) { write(3, "error: ", message) }

    /// The lanes of lines told by events from outside (`LogLane`).
    nonisolated(unsafe) private static var lanes = LogLane()

    /// A line of `lane`, at info (or `warning`) priority, within the lane's bound.
    static func event(_ lane: LogLane.Kind, _ message: String, warning: Bool = false) {
        let priority = warning ? 4 : 6
        guard lanes.admit(lane, priority: priority, message, now: .now, release: release) else { return }
        write(priority, warning ? "warning: " : "", message)
    }

    /// Says what the lanes held back once they have room again: run after each wake of the loop.
    static func flushLanes() { lanes.flush(now: .now, release: release) }

    private static func release(_ priority: Int, _ line: String) { write(priority, priority <= 4 ? "warning: " : "", line) }

    /// One line per event: control characters in the message (names and URIs from outside)
    /// are written out, never passed to the journal or a terminal raw.
    private static func write(_ priority: Int, _ label: String, _ message: String) {
        let line = (toJournal ? "<\(priority)>" : label) + message.escapingControlCharacters() + "\n"
        _ = line.withCString { Glibc.write(STDERR_FILENO, $0, strlen($0)) }
    }
}
