internal import Reachability
internal import ReachabilityConfig
import Synchronization

/// Where the references of a process get their answers, chosen as reachctl chooses: reachd
/// when it answers on the system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured) within a short
/// probe, else the library in-process with the configuration reachd would read (/etc/reachd:
/// interface rules, priorities, `DefaultTimeout=`), so both give the same answers.
///
/// The choice is made once, at the first question, not when a reference is created (creating
/// never blocks). Once reachd answered, the service follows its bus name as `reachctl monitor`
/// does: while reachd is away (restarted, upgraded, crashed) questions and followed targets are
/// answered in-process in the interim and callbacks go on; when reachd owns its name again the
/// followed targets are watched by reachd anew, and a callback fires only where reachd's answer
/// differs from the last one its reference saw.
final class SCReachabilityService: Sendable {
    struct Settings: Sendable {
        /// Where to ask reachd; nil: never (answer in-process).
        var bus: BusAddress? = .system
        /// How long reachd has to answer the first call before the library answers in-process.
        var probeTimeout: Duration = .milliseconds(500)
        /// How long later calls to reachd may take (it answers from memory, at once).
        var callTimeout: Duration = .seconds(2)
        /// The in-process monitor's settings.
        var monitor = CoreConfiguration()
        /// The deadline of a host check: `DefaultTimeout=`.
        var hostTimeout: Duration = Configuration.default.defaultTimeout

        /// reachd's configuration (/etc/reachd) applied. A configuration reachd would refuse is
        /// not this library's to refuse: then the built-in defaults apply, as for a reachd that
        /// never read it.
        static func system() -> Settings {
            var settings = Settings()
            if case let .success(configuration) = Configuration.load() {
                configuration.apply(to: &settings.monitor)
                settings.hostTimeout = configuration.defaultTimeout
            }
            return settings
        }
    }

    let settings: Settings
    private let ids = Atomic<UInt64>(0)

    private struct Backends: ~Copyable {
        var daemon: SCDaemonBackend?
        /// reachd was asked once: it is not asked again (a probe costs up to `probeTimeout`).
        var daemonAsked = false
        var inProcess: SCInProcessBackend?
        var closed = false
    }
    private let backends = Mutex(Backends())

    init(settings: Settings) {
        self.settings = settings
    }

    /// The process's service, made at its first use.
    static let shared = SCReachabilityService(settings: .system())

    /// Replaces `shared` for the references created within a task (tests: one namespace and one
    /// reachd each).
    @TaskLocal static var override: SCReachabilityService?

    /// The service a reference created now uses.
    static var current: SCReachabilityService { override ?? shared }

    /// A new follower id, unique in the process.
    func nextID() -> UInt64 { ids.add(1, ordering: .relaxed).newValue }

    // MARK: choosing

    /// reachd if it answered the probe (also while it is away: it keeps the followers for its
    /// return), else the in-process library; nil when neither can run.
    private func preferred() -> (any SCBackend)? {
        backends.withLock { backends -> (any SCBackend)? in
            guard !backends.closed else { return nil }
            if let daemon = backends.daemon, !daemon.isClosed { return daemon }
            let daemon: SCDaemonBackend? = ReachdOrInProcess.choose(
                bus: backends.daemonAsked ? nil : settings.bus, probeTimeout: settings.probeTimeout,
                callTimeout: settings.callTimeout,
                daemon: { client, bus in
                    try SCDaemonBackend(
                        client: client, bus: bus, callTimeout: settings.callTimeout,
                        hostTimeout: settings.hostTimeout,
                        away: { [weak self] followers in self?.daemonAway(followers) },
                        back: { [weak self] ids in self?.daemonBack(ids) })
                },
                inProcess: { _ in nil })
            backends.daemonAsked = true
            if let daemon {
                backends.daemon = daemon
                return daemon
            }
            return Self.inProcess(&backends, settings)
        }
    }

    /// The in-process library, started at its first use.
    private func inProcess() -> SCInProcessBackend? {
        backends.withLock { backends in
            guard !backends.closed else { return nil }
            return Self.inProcess(&backends, settings)
        }
    }

    private static func inProcess(_ backends: inout Backends, _ settings: Settings) -> SCInProcessBackend? {
        if let running = backends.inProcess { return running }
        backends.inProcess = try? SCInProcessBackend(configuration: settings.monitor, hostTimeout: settings.hostTimeout)
        return backends.inProcess
    }

    /// reachd left the bus (or a follower came while it is away): the followers go on in-process
    /// until it returns (on the backend's thread).
    private func daemonAway(_ followers: [SCFollower]) {
        guard let interim = inProcess() else { return }
        for follower in followers { _ = interim.follow(follower) }
    }

    /// reachd returned and serves these followers again: the in-process library lets them go.
    private func daemonBack(_ ids: [UInt64]) {
        guard let interim = backends.withLock({ $0.inProcess }) else { return }
        for id in ids { interim.unfollow(id) }
    }

    /// Whether reachd answers now (for tests and diagnostics).
    var answersFromDaemon: Bool {
        backends.withLock { backends in backends.daemon.map { !$0.isClosed && !$0.isAway } ?? false }
    }

    /// Targets followed in-process now (for tests: released references leave none).
    var followerCount: Int {
        backends.withLock { $0.inProcess }?.followerCount ?? 0
    }

    // MARK: questions

    /// The target's flags now (a name within the deadline); nil when nobody could answer.
    func check(_ target: SCTarget) -> ReachabilityFlags? {
        let deadline = ContinuousClock.now + settings.hostTimeout
        guard var backend = preferred() else { return nil }
        // While reachd is away its questions are answered in-process (no call waits on its return).
        if let daemon = backend as? SCDaemonBackend, daemon.isAway, let interim = inProcess() { backend = interim }
        if let flags = backend.check(target, deadline: deadline) { return flags }
        // reachd went away or stalled during the call: answer in-process, as reachctl would.
        guard backend is SCDaemonBackend, let fallback = inProcess() else { return nil }
        return fallback.check(target, deadline: max(deadline, .now + .milliseconds(1)))
    }

    /// The last answer for a followed target, if one is known.
    func knownAnswer(for target: SCTarget) -> ReachabilityFlags? {
        let (daemon, inProcess) = backends.withLock { ($0.daemon, $0.inProcess) }
        return daemon?.knownAnswer(for: target) ?? inProcess?.knownAnswer(for: target)
    }

    /// Starts following; false when neither reachd nor the library can.
    func follow(_ follower: SCFollower) -> Bool {
        guard let backend = preferred() else { return false }
        if backend.follow(follower) { return true }
        // reachd refused (a watch limit) or went away: follow in-process instead.
        guard backend is SCDaemonBackend, let fallback = inProcess() else { return false }
        return fallback.follow(follower)
    }

    /// Stops following, wherever the follower is. Never waits.
    func unfollow(_ id: UInt64) {
        let (daemon, inProcess) = backends.withLock { ($0.daemon, $0.inProcess) }
        daemon?.unfollow(id)
        inProcess?.unfollow(id)
    }

    /// Stops both backends; references of this service answer no more (tests).
    func shutdown() {
        let (daemon, inProcess) = backends.withLock { backends in
            backends.closed = true
            return (backends.daemon, backends.inProcess)
        }
        daemon?.shutdown()
        inProcess?.shutdown()
    }
}
