import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// The node_exporter textfile (`[Metrics] TextfileDirectory=`): `reachd.prom`, replaced
/// atomically (a hidden temporary file in the same directory, then rename(2)), so the collector
/// never reads half a file.
///
/// When: at start, within `MetricsSettings.coalescing` of a change (a burst of netlink batches
/// costs one write), and every `TextfileInterval=` (the heartbeat: the file's mtime tells a live
/// reachd from a dead one). One timer, which exists only while a directory is configured.
/// The write is a few KiB to a local directory: it does not wait on the network, so it stays
/// on the loop.
final class MetricsTextfile {
    private let loop: EventLoop
    let settings: MetricsSettings
    private let directory: String
    private let render: () -> String
    private var timer: (any LoopSource)?
    /// When the timer fires next.
    private var due = ContinuousClock.now
    /// The last failure logged, so a directory that stays unwritable is logged once, not at every heartbeat.
    private var lastFailure: String?

    init?(loop: EventLoop, settings: MetricsSettings, render: @escaping () -> String) {
        guard let directory = settings.textfileDirectory else { return nil }
        self.loop = loop
        self.settings = settings
        self.directory = directory
        self.render = render
    }

    var path: String { directory + "/" + MetricsSettings.textfileName }
    /// Not `*.prom`: node_exporter reads only those, so it never sees the file being written.
    private var temporaryPath: String { directory + "/." + MetricsSettings.textfileName + ".tmp" }

    func start() throws(SystemError) {
        timer = try loop.addTimer(urgent: false) { [unowned self] in self.fired() }
        Log.info("metrics: writing \(path) on change and every \(DurationText.format(settings.textfileInterval))")
        fired()
    }

    /// Something the metrics show changed: write within the coalescing time.
    func changed() {
        let soon = ContinuousClock.now + MetricsSettings.coalescing
        guard soon < due else { return }
        due = soon
        timer?.schedule(at: due)
    }

    /// Stops the timer and removes the file: numbers nobody updates any more would read as the truth.
    func stop() {
        timer?.cancel()
        timer = nil
        unlink(path)
    }

    private func fired() {
        write()
        due = .now + settings.textfileInterval
        timer?.schedule(at: due)
    }

    private func write() {
        let bytes = Array(render().utf8)
        let temporary = temporaryPath
        let file = Descriptor(open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644))
        let fd = file.rawValue
        guard fd >= 0 else { return fail("cannot create \(temporary)", errno) }
        // reachd.service runs with UMask=0077; node_exporter runs as another user and must read it.
        fchmod(fd, 0o644)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                let code = errno
                unlink(temporary)
                return fail("cannot write \(temporary)", code)
            }
            written += count
        }
        file.close()
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            return fail("cannot rename \(temporary) to \(path)", code)
        }
        if lastFailure != nil { Log.info("metrics: writing \(path) again") }
        lastFailure = nil
    }

    private func fail(_ what: String, _ code: Int32) {
        let message = "metrics: \(what): \(String(cString: strerror(code)))"
        if message != lastFailure { Log.warning(message) }
        lastFailure = message
    }
}
