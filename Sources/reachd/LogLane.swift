import Reachability

/// Lines told by events from outside, each kind in a lane with a bound: a link's change, the
/// host's state, the core's incidents, the probe's verdicts. A storm (100,000 carrier flaps
/// wrote 67,475 entries in 22 s) would otherwise flood the journal, where journald's own limit
/// then drops everyone's lines, reachd's first ones included. Each lane passes `burst` lines at
/// once and `perSecond` after (`UserRate`'s bucket, one user per lane); what it holds back is
/// counted, and said in one line with the last of it ("N further link lines suppressed; the last:
/// ...") as soon as the lane has room again: at its next line, or after the loop's next wake-up
/// (`flush`), so the journal ends with the latest state. Loop-thread only.
struct LogLane {
    enum Kind: UInt32, CaseIterable {
        case links, state, incidents, probe

        var noun: String {
            switch self {
            case .links: "link"
            case .state: "state"
            case .incidents: "incident"
            case .probe: "connectivity"
            }
        }
    }

    static let settings = UserRate.Settings(perSecond: 2, burst: 20)

    private var rate = UserRate(LogLane.settings)
    private var suppressed: [Kind: (count: Int, last: (priority: Int, line: String))] = [:]

    /// Whether `kind`'s line may be written now; when not, it is counted and kept as the last.
    /// Before a line that passes, the count held back (if any) is written by `release`.
    mutating func admit(_ kind: Kind, priority: Int, _ line: String, now: ContinuousClock.Instant, release: (Int, String) -> Void) -> Bool {
        // Lanes are users of the bucket; uid 0 is never counted, so they start at 1.
        guard rate.admit(kind.rawValue + 1, now: now) else {
            suppressed[kind] = ((suppressed[kind]?.count ?? 0) + 1, (priority, line))
            return false
        }
        if let held = suppressed.removeValue(forKey: kind) {
            release(held.last.priority, "\(held.count) further \(kind.noun) line(s) suppressed; the last: \(held.last.line)")
        }
        return true
    }

    /// Says what each lane held back, once it has room again (after a wake-up of the loop).
    mutating func flush(now: ContinuousClock.Instant, release: (Int, String) -> Void) {
        for (kind, held) in suppressed where rate.admit(kind.rawValue + 1, now: now) {
            suppressed[kind] = nil
            release(held.last.priority, "\(held.count) further \(kind.noun) line(s) suppressed; the last: \(held.last.line)")
        }
    }
}
