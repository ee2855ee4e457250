import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// What reachd counts (docs/fleets.md, reachd(8) "METRICS") and every output that prints it: the textfile,
/// /metrics on reachd-metrics.socket's sockets, and GetMetrics. Counters are bumped where the
/// events happen; the outputs render from the mirror, the counters and the watch count.
final class DaemonMetrics {
    var counters = MetricsCounters()
    /// Distinct watches served, for the exposition (the watch registry knows).
    var watchCount: () -> Int = { 0 }
    /// What the callers hold besides watches, ledger by ledger.
    var heldForCallers: () -> HeldForCallers = { HeldForCallers() }
    /// The outage counters as they stand now (the outage clock knows).
    var outage: () -> OutageTotals? = { nil }
    /// The watched units' own verdicts (`UnitTraffic`).
    var unitStalls: () -> [(unit: String, stalled: Bool)] = { [] }
    private let loop: EventLoop
    private let mirror: SharedState
    /// When reachd started, in seconds since the Unix epoch (`reachd_start_time_seconds`).
    private let startTime: Double
    /// The mirror's counters as the outputs last heard of them.
    private var lastMirrorCounters = MirrorCounters()
    /// `[Metrics] TextfileDirectory=`: the node_exporter textfile; nil (no timer) when unset.
    private var textfile: MetricsTextfile?
    private var endpoints: [MetricsEndpoint] = []

    init(loop: EventLoop, mirror: SharedState) {
        self.loop = loop
        self.mirror = mirror
        startTime = SystemClock.wallSeconds()
    }

    /// The exposition every output prints.
    var text: String {
        var sample = MetricsSample(
            snapshot: mirror.snapshot, mirror: mirror.counters, counters: counters, watches: watchCount(), startTime: startTime,
            outage: outage())
        sample.held = heldForCallers()
        sample.unitStalls = unitStalls()
        return MetricsExposition.render(sample)
    }

    /// Something the metrics show moved: the textfile is rewritten soon (coalesced).
    func changed() { textfile?.changed() }

    /// The core's follower: Changed signals are counted, and any move of what is shown noted.
    func follow(_ update: CoreUpdate) {
        if update.change?.hostChanged == true { counters.changedEvents += 1 }
        let mirrored = mirror.counters
        if update.change != nil || mirrored != lastMirrorCounters {
            lastMirrorCounters = mirrored
            changed()
        }
    }

    /// One host check answered (CheckHost, a watch of a host name, the probe's lookup).
    func recordCheck(_ result: CheckResult, took elapsed: Duration) {
        counters.recordCheck(result, seconds: elapsed.inSeconds)
        changed()
    }

    /// Starts, moves or stops the textfile to match `[Metrics]` (at start and on every reload).
    func apply(_ settings: MetricsSettings) {
        if let current = textfile, current.settings == settings { return }
        textfile?.stop()
        textfile = MetricsTextfile(loop: loop, settings: settings) { [unowned self] in self.text }
        do {
            try textfile?.start()
        } catch {
            Log.error("metrics: cannot start the textfile timer: \(error)")
            textfile = nil
        }
    }

    /// /metrics on every socket reachd-metrics.socket passed; one that is not a listening
    /// stream socket (a drop-in gone wrong) is closed with a warning.
    func serve(_ sockets: [Int32]) {
        // Listening stream sockets, each (PassedSockets checked them before reachd opened any).
        for descriptor in sockets {
            let owned = Descriptor(descriptor)  // closed unless an endpoint takes it
            do {
                endpoints.append(try MetricsEndpoint(loop: loop, listening: owned) { [unowned self] in self.text } refused: { [unowned self] in
                    self.counters.scrapesRefused += 1
                    self.changed()
                } cutOff: { [unowned self] cut in
                    self.counters.recordCutOff(cut)
                    self.changed()
                })
            } catch {
                Log.error("metrics: cannot serve file descriptor \(descriptor): \(error)")
            }
        }
        if !endpoints.isEmpty {
            Log.info("metrics: serving \(MetricsHTTP.path) on \(endpoints.count) socket(s) from reachd-metrics.socket")
        }
    }

    func stop() { textfile?.stop() }
}
