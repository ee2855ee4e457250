import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// The outage counters (reachd(8), "METRICS"): time offline, degraded and down by cause, outages
/// by cause, time asleep or stopped, kept in an `OutageLedger` and carried across restarts in a
/// small state file (`--outage-clock`). It hears each change of an answer from the history (which
/// already names its cause), each sleep from `Sleep`, and the uplinks' kinds from the updates it
/// follows (a follower before the history, so that the update a record comes from is the one
/// whose kinds it reads).
///
/// Time accrues by timestamps: the totals are computed when read (a scrape, the textfile) and at
/// changes, so nothing wakes up while nothing changes. The file is written at changes, at most
/// once per `writeInterval` (a flapping link costs one write per interval, by a one-shot timer
/// that exists only while a write is held back), before the host sleeps, and when reachd stops.
final class OutageClock {
    /// The fewest seconds between two writes of the state file.
    static let writeInterval: Duration = .seconds(30)

    private var ledger: OutageLedger
    private let path: String?
    /// The interfaces of the last update told.
    private var interfaces: [InterfaceStatus]
    private let loop: EventLoop
    /// The one-shot timer of a write held back by `writeInterval`; nil while none is.
    private var heldWrite: (any LoopSource)?
    private var lastWrite: ContinuousClock.Instant?
    /// The kinds of the uplinks heard of, by name: an uplink removed is gone from the state.
    private var kinds: [String: InterfaceKind] = [:]
    /// The last failure to write, so a directory that stays unwritable is logged once.
    private var lastFailure: String?

    init(path: String?, first: CoreUpdate, loop: EventLoop) {
        self.path = path
        interfaces = first.snapshot.interfaces
        self.loop = loop
        ledger = OutageLedger()
        guard let path else {
            Log.info("outage clock: no state file (--outage-clock none, or no STATE_DIRECTORY): the counters start from zero at each start")
            return
        }
        let now = SystemClock.wallSeconds()
        switch Self.read(path, now: now) {
        case nil:
            Log.info("outage clock: no \(path) yet: counting from zero")
        case let .success(saved)?:
            ledger = OutageLedger(totals: saved.totals, hostWasDown: saved.hostDown)
            let stopped = max(0, now - saved.written)
            ledger.stopped(seconds: stopped)
            Log.info("outage clock: carried on from \(path); reachd was stopped for \(DurationText.format(.milliseconds(Int64(stopped * 1000))))")
        case let .failure(refusal)?:
            Log.warning("outage clock: refusing \(path): \(refusal); counting from zero")
        }
    }

    /// The counters as they stand now.
    var totals: OutageTotals { ledger.totals(at: Self.now()) }

    /// Keeps the uplinks' kinds while they exist (a removed uplink keeps the kind it had).
    func follow(_ update: CoreUpdate) {
        guard let change = update.change else { return }
        interfaces = update.snapshot.interfaces
        for status in change.changedInterfaces where kinds[status.name] != nil { kinds[status.name] = status.kind }
    }

    /// A change of an answer, as the history recorded it.
    func record(_ record: HistoryRecord) {
        // Sleep and stop are counted from their own signals, not from the history's word of them.
        guard record.condition != .unobserved else { return }
        let now = Self.now()
        let cause = OutageCause(record.cause)
        if record.lane.isEmpty {
            switch record.condition {
            case .up: ledger.host(.up, at: now)
            case .degraded: ledger.host(.degraded(cause == .traffic ? .traffic : .portal), at: now)
            case .down: ledger.host(.down(cause), at: now)
            case .unobserved: break
            }
        } else {
            let kind = interfaces.first { $0.name == record.lane }?.kind ?? kinds[record.lane] ?? .other
            if kinds[record.lane] == nil, kinds.count >= OutageLedger.maximumUplinks { kinds.removeAll() }
            kinds[record.lane] = kind
            let down = record.condition == .down ? OutageTotals.UplinkKey(kind: kind, cause: OutageCause.uplinkCauses.contains(cause) ? cause : .route) : nil
            ledger.uplink(record.lane, down: down, at: now)
        }
        save()
    }

    /// logind said the host goes to sleep: written now, in case it never wakes up.
    func sleeping() {
        ledger.sleeping(at: Self.now())
        write()
    }

    func resumed() {
        ledger.resumed(at: Self.now())
        save()
    }

    /// reachd stops: the counters up to now go to the file.
    func stop() {
        heldWrite?.cancel()
        heldWrite = nil
        write()
    }

    /// CLOCK_BOOTTIME with how far it is ahead of CLOCK_MONOTONIC (the time slept).
    static func now() -> OutageLedger.Instant {
        let suspended = SystemClock.suspendedMicroseconds()
        return OutageLedger.Instant(boot: SystemClock.monotonicMicroseconds() + suspended, suspended: suspended)
    }

    /// Writes now, or once `writeInterval` has passed since the last write.
    private func save() {
        guard path != nil, heldWrite == nil else { return }
        guard let lastWrite, ContinuousClock.now < lastWrite + Self.writeInterval else { return write() }
        do {
            let timer = try loop.addTimer(urgent: false) { [unowned self] in
                self.heldWrite?.cancel()
                self.heldWrite = nil
                self.write()
            }
            timer.schedule(at: lastWrite + Self.writeInterval)
            heldWrite = timer
        } catch {
            write()
        }
    }

    /// Replaces the file atomically: a temporary file beside it, fsync'd, renamed over it.
    private func write() {
        guard let path else { return }
        lastWrite = .now
        let saved = OutageLedgerFile.Saved(totals: totals, hostDown: ledger.hostDown, written: SystemClock.wallSeconds())
        let bytes = Array(OutageLedgerFile.encode(saved).utf8)
        let temporary = path + ".tmp"
        let file = Descriptor(open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600))
        guard file.rawValue >= 0 else { return fail("cannot create \(temporary)", errno) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(file.rawValue, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return fail("cannot write \(temporary)", errno, removing: temporary) }
            written += count
        }
        // The data reaches the disk before the name points at it: a crash leaves the old file or the new one.
        guard fsync(file.rawValue) == 0 else { return fail("cannot sync \(temporary)", errno, removing: temporary) }
        file.close()
        guard rename(temporary, path) == 0 else { return fail("cannot rename \(temporary) to \(path)", errno, removing: temporary) }
        if lastFailure != nil { Log.info("outage clock: writing \(path) again") }
        lastFailure = nil
    }

    private func fail(_ what: String, _ code: Int32, removing temporary: String? = nil) {
        if let temporary { unlink(temporary) }
        let message = "outage clock: \(what): \(String(cString: strerror(code))); the counters stay in memory"
        if message != lastFailure { Log.warning(message) }
        lastFailure = message
    }

    /// The file's totals, nil when there is none; at most `maximumBytes` + 1 are read.
    static func read(_ path: String, now: Double) -> Result<OutageLedgerFile.Saved, OutageLedgerFile.Refusal>? {
        let file = Descriptor(open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK))
        guard file.rawValue >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            return .failure(.init("cannot open it: \(String(cString: strerror(code)))"))
        }
        var status = stat()
        guard fstat(file.rawValue, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return .failure(.init("not a regular file")) }
        var bytes = [UInt8](repeating: 0, count: OutageLedgerFile.maximumBytes + 1)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Glibc.read(file.rawValue, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return .failure(.init("cannot read it: \(String(cString: strerror(errno)))")) }
            if count == 0 { break }
            filled += count
        }
        return OutageLedgerFile.decode(Array(bytes[..<filled]), now: now)
    }
}
