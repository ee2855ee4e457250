/// Passive stall detection as one of the core's inputs: a `StallWatch` while `StallDetection=`
/// is on (started, retuned or stopped by a reload), its verdicts submitted like any other input,
/// told after each turn whether the host is online and whenever reachd's own lookups time out.
/// Loop-thread only, as every source.
package final class StallSource: CoreSource {
    private var settings: StallSettings?
    private let namespacePath: String?
    private var context: CoreSourceContext?
    private var watch: StallWatch?

    /// Told of every stall poll while online (reachd runs its probe on a suspicion).
    package var polled: ((StallReport) -> Void)? {
        didSet { watch?.polled = polled }
    }
    /// The control groups (cgroup v2 ids) whose own traffic the polls judge apart
    /// (`StallReport.controlGroups`): reachd's watched units.
    package var controlGroups: Set<UInt64> = [] {
        didSet { watch?.controlGroups = controlGroups }
    }

    /// `settings` nil: off until a reload turns it on.
    package init(settings: StallSettings?, namespacePath: String?) {
        (self.settings, self.namespacePath) = (settings, namespacePath)
    }

    /// The last poll's report while online; nil before the first, offline, or when off.
    package var lastReport: StallReport? { watch?.lastReport }

    package func start(_ context: CoreSourceContext) throws(SystemError) {
        self.context = context
        configure(settings)
    }

    package func reconfigured(_ configuration: CoreConfiguration) { configure(configuration.stall) }

    package func turnTaken(_ state: borrowing NetworkState) {
        watch?.follow(online: state.host.state == .online)
    }

    package func dnsTimeoutsMoved() { watch?.evidenceArrived() }

    /// The core is going: the watch's loop sources end with it, and no verdict is handed back.
    package func cancel() {
        watch = nil
        context = nil
    }

    /// Starts, retunes or stops the watch. Off, every verdict is forgotten.
    private func configure(_ settings: StallSettings?) {
        self.settings = settings
        guard let context else { return }
        guard let settings else {
            watch?.cancel()
            watch = nil
            return
        }
        if let watch { return watch.settings = settings }
        do {
            let shared = context.shared, dnsTimeouts = context.dnsTimeouts, submit = context.submit
            let watch = try StallWatch(
                settings: settings, namespacePath: namespacePath, loop: context.loop, warn: context.warn,
                context: {
                    let timeouts = dnsTimeouts()
                    return shared.withState {
                        StallContext(addresses: $0.addresses, dnsTimeouts: $0.dnsTimeoutsByLink(consecutive: timeouts), nameservers: $0.stallNameservers)
                    }
                },
                verdicts: { submit(.events([.stalls($0)])) })
            watch.polled = polled
            watch.controlGroups = controlGroups
            self.watch = watch
            shared.withState { turnTaken($0) }
        } catch {
            context.warn("stall detection off: cannot open a sock_diag socket: \(error)")
        }
    }
}
