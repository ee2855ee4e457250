#if canImport(Glibc)
import Glibc
#endif
import Reachability

/// The watched units' own traffic (`[Units] Watch=`): each unit's cgroup, as systemd names it
/// (`ControlGroup`, one asynchronous Get: nothing else of its sandbox), looked up in the unified
/// hierarchy for its id (the inode number of its directory, which the kernel gives each socket
/// as INET_DIAG_CGROUP_ID), handed to the core's stall polls, and each poll's verdicts of that
/// cgroup's sockets kept by unit. A unit that restarts gets a new cgroup, so the id is looked
/// up again at every poll (one stat per unit on cgroupfs, which never blocks); a unit that does
/// not run is asked of systemd again at most every `rereadInterval`, while no answer is pending.
/// Loop-thread only.
final class UnitTraffic {
    private struct Watched {
        var controlGroup = ""
        var group: UInt64 = 0
        var verdicts: [LinkStall] = []
        /// The Get of its ControlGroup while it is pending (released: cancelled).
        var reading: BusSlot?
        var lastRead: ContinuousClock.Instant?
        var stalled: Bool { verdicts.contains(where: \.isStalled) }
    }

    /// A unit not running is asked about again no sooner than this: its cgroup appears as it starts.
    static let rereadInterval: Duration = .seconds(10)

    private let sandboxes: ServiceSandboxes
    /// The unified hierarchy's mount point; nil when there is none (no unit can be judged).
    private let hierarchy: String?
    private var order: [String] = []
    private var units: [String: Watched] = [:]
    /// Told the cgroup ids to judge whenever they change (the core's stall source, `StallSource.controlGroups`).
    var judge: (Set<UInt64>) -> Void = { _ in }
    /// Told when a unit's verdict flipped (the metrics' textfile is written again).
    var flipped: () -> Void = {}

    init(bus: BusConnection, sysfsRoot: String) {
        sandboxes = ServiceSandboxes(bus: bus, sysfsRoot: sysfsRoot)
        hierarchy = UnitRoutes.unifiedHierarchy(sysfsRoot: sysfsRoot)
    }

    /// The units to watch (a reload's too): those kept keep their verdicts, new ones are read.
    func configure(_ watched: [String]) {
        order = watched
        units = units.filter { watched.contains($0.key) }
        for unit in watched where units[unit] == nil { units[unit] = Watched() }
        if !watched.isEmpty, hierarchy == nil {
            Log.warning("[Units] Watch=: no unified cgroup hierarchy (cgroup v2) under /sys/fs/cgroup: no unit's traffic can be told apart")
        }
        refresh()
    }

    /// The verdicts of `unit`'s own sockets at the last poll; nil when it is not watched.
    func verdicts(of unit: String) -> [LinkStall]? { units[unit]?.verdicts }

    /// Each watched unit and whether its own traffic is stalled, in the configured order.
    var stalls: [(unit: String, stalled: Bool)] { order.compactMap { unit in units[unit].map { (unit, $0.stalled) } } }

    /// A stall poll: each unit's verdicts by its group, then the groups looked up again.
    func polled(_ report: StallReport) {
        for unit in order {
            guard var watched = units[unit] else { continue }
            let was = watched.stalled
            watched.verdicts = watched.group == 0 ? [] : report.controlGroups[watched.group] ?? []
            units[unit] = watched
            if watched.stalled != was {
                let link = watched.verdicts.first(where: \.isStalled)?.evidence
                Log.info(watched.stalled
                    ? "\(unit): its own traffic is stalled (\(link.map { "\($0.socketsFailing) connection(s) failing for \($0.waiting.components.seconds)s" } ?? "")), "
                        + "judged apart from the host's"
                    : "\(unit): its own traffic flows again")
                flipped()
            }
        }
        refresh()
    }

    /// Looks each unit's cgroup up; asks systemd for those it does not know.
    private func refresh() {
        let before = Set(units.values.map(\.group))
        let now = ContinuousClock.now
        for unit in order {
            guard var watched = units[unit] else { continue }
            watched.group = hierarchy.flatMap { Self.groupID($0, watched.controlGroup) } ?? 0
            if watched.group == 0 {
                // Stopped: its verdict goes with it (said, and the metrics written again).
                if watched.stalled {
                    Log.info("\(unit): its own traffic is no longer judged: the unit does not run")
                    flipped()
                }
                watched.verdicts = []
                if watched.reading == nil, watched.lastRead.map({ now - $0 >= Self.rereadInterval }) ?? true { read(unit, &watched, at: now) }
            }
            units[unit] = watched
        }
        let after = Set(units.values.map(\.group)).subtracting([0])
        if after != before.subtracting([0]) { judge(after) }
    }

    private func read(_ unit: String, _ watched: inout Watched, at now: ContinuousClock.Instant) {
        watched.lastRead = now
        do {
            watched.reading = try sandboxes.readControlGroup(unit) { [weak self] result in
                guard let self, var watched = units[unit] else { return }
                // The finished call's slot goes after this handler returns.
                let finished = watched.reading
                watched.reading = nil
                switch result {
                case let .success(path): watched.controlGroup = path
                case let .failure(error): Log.debug("[Units] Watch=\(unit): \(error.message)")
                }
                units[unit] = watched
                if !watched.controlGroup.isEmpty { refresh() }
                withExtendedLifetime(finished) {}
            }
        } catch {
            Log.debug("[Units] Watch=\(unit): \(error.message)")
        }
    }

    /// The cgroup id of `path` under `hierarchy`: its directory's inode number; nil when it
    /// does not exist (the unit does not run) or the path is not systemd's kind.
    static func groupID(_ hierarchy: String, _ path: String) -> UInt64? {
        guard path.hasPrefix("/"), !path.split(separator: "/").contains(where: { $0 == ".." }) else { return nil }
        var info = stat()
        guard stat(hierarchy + path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        return UInt64(info.st_ino)
    }
}
