/// The settings of reachd, as `/etc/reachd/reachd.conf` and its drop-ins give them
/// (reachd.conf(5), `packaging/man/reachd.conf.5`).
///
/// A plain value: `Configuration.default` is what reachd uses without any file, `parse` applies one
/// file's text on top of a value, `load` reads the files from disk in systemd's order, and `mergedText`
/// writes the effective value back as a file that parses to the same value.
package struct Configuration: Sendable, Equatable {
    /// `[Checks] DefaultTimeout`: the deadline of a host check when the caller gives none.
    package var defaultTimeout: Duration
    /// `[Checks] MaxConcurrentLookups`: DNS lookups in flight at once; more wait their turn.
    package var maxConcurrentLookups: Int
    /// `[Checks] NegativeCacheTime`: how long a "no such host" answer is remembered; zero remembers none.
    package var negativeCacheTime: Duration
    /// `[Checks] LookupsPerUserPerSecond`: new DNS lookups one Unix user other than root may start
    /// per second (a token bucket); 0: no bound.
    package var lookupsPerUserPerSecond: Int
    /// `[Checks] LookupBurstPerUser`: the bucket's size, lookups one such user may start at once.
    package var lookupBurstPerUser: Int
    /// `[Limits] MaxWatchesPerClient`: D-Bus watch objects one client (unique bus name) may hold.
    package var maxWatchesPerClient: Int
    /// `[Limits] MaxWatches`: D-Bus watch objects of all clients together.
    package var maxWatches: Int
    /// `[Limits] MaxWatchesPerUser` as written: nil for `auto`, the default (see `maxWatchesPerUser`).
    package var maxWatchesPerUserSetting: Int?
    /// `[Limits] MaxHostChecks`: CheckHost calls in flight from all callers together, the last
    /// quarter kept for root.
    package var maxHostChecks: Int
    /// `[Limits] MaxHostChecksPerUser`: CheckHost calls in flight from one Unix user other than root.
    package var maxHostChecksPerUser: Int
    /// `[Priorities]`: the priority of every kind (lower is preferred). Always holds every kind.
    package var priorities: [InterfaceKind: Int]
    /// `[Connectivity]`: the opt-in probe of the internet through the host's path.
    package var connectivity = ConnectivitySettings()
    /// `[Portal]`: the network's own captive-portal API.
    package var portal = PortalSettings()
    /// `[Metrics]`: the opt-in node_exporter textfile.
    package var metrics = MetricsSettings()
    /// `[Interface]` sections, in order: for each property the first matching rule that sets it wins.
    package var rules: [InterfaceRule]
    /// `[Network]` sections: one rule per network, by its name; they win over interface rules.
    package var networks: [NetworkRule] = []
    /// `[WaitOnline] Timeout`: how long reachd-wait-online.service waits before it fails.
    package var waitOnlineTimeout: Duration
    /// `[WaitOnline] Target`: an address or host name that must be reachable; nil for none.
    package var waitOnlineTarget: String?
    /// `[WaitOnline] Kind`: a kind of link that must be usable (one of `waitOnlineKinds`); nil for none.
    package var waitOnlineKind: InterfaceKind?
    /// `[Compatibility] NetworkManager`: serve the subset of org.freedesktop.NetworkManager that
    /// GLib's and Qt's network monitors read. Off by default: nothing is claimed on the bus.
    package var networkManagerCompatibility: Bool
    /// `[Stall] Detect`: passive stall detection from the host's own TCP sockets. On by default:
    /// it sends nothing, and reads only counters the kernel keeps anyway.
    package var stallDetection = true
    /// `[Stall]`'s thresholds and poll interval (Android's defaults).
    package var stall = StallSettings()
    /// `[Units] Watch=`: the services whose own traffic reachd judges apart, in the order
    /// written (each line adds; at most `watchedUnitsLimit`). None by default.
    package var watchedUnits: [String] = []
    /// Each watched unit is one evaluator's memory, one cgroup looked up per poll and, with
    /// metrics, one series: a bound an administrator's list of services stays well within.
    package static let watchedUnitsLimit = 32
    /// The files read, in the order they were applied; empty for the built-in defaults.
    package var sources: [String]
    /// What was odd but not wrong (a dangling symbolic link among the drop-ins), to be logged.
    package var warnings: [ConfigurationError] = []

    /// The built-in defaults: the values `packaging/reachd.conf` documents (a test holds them equal).
    package static let `default` = Configuration()

    package init() {
        // reachd.conf(5), [Checks] DefaultTimeout=: a host check answers within 5 s by default.
        defaultTimeout = .seconds(5)
        // Enough for a burst of checks at a network change; each lookup costs a socket or two.
        maxConcurrentLookups = 64
        // Long enough to absorb a burst of checks of a mistyped name, short enough that a newly published
        // name shows up quickly; the same as the resolver cache's own `HostCache.negativeTTL`.
        negativeCacheTime = HostCache.negativeTTL
        // A desktop checks a few names a second at most; a burst covers a session's accounts and
        // feeds after a network change. 3,800 a second from one client was the pump this bounds.
        lookupsPerUserPerSecond = 20
        lookupBurstPerUser = 64
        // A desktop applet watches a handful of targets; 64 leaves room without letting one client hog.
        maxWatchesPerClient = 64
        // 64 clients at their full share.
        maxWatches = 4096
        // auto: follows MaxWatches (see `maxWatchesPerUser`).
        maxWatchesPerUserSetting = nil
        // Each holds a message and, while its lookup waits or runs, little else: a bound on
        // memory rather than DNS. A quarter for one user leaves root its reserve with three at
        // their share.
        maxHostChecks = 4096
        maxHostChecksPerUser = 1024
        priorities = Dictionary(uniqueKeysWithValues: InterfaceKind.allCases.map { ($0, $0.defaultPriority) })
        rules = []
        // Long enough for DHCP on a slow link, short enough that a boot without an uplink goes on
        // within half a minute (networkd-wait-online's 2 minutes are what users complain about).
        waitOnlineTimeout = .seconds(30)
        waitOnlineTarget = nil
        waitOnlineKind = nil
        networkManagerCompatibility = false
        sources = []
    }

    /// `[Limits] MaxWatchesPerUser`: D-Bus watch objects the clients of one Unix user may hold
    /// together, root included, so one user opening many connections cannot take every watch.
    /// `auto` (the default) is half of MaxWatches, so one user cannot starve the others, but at
    /// least `minimumAutoWatchesPerUser`, so one service may still watch thousands of targets, and
    /// at most MaxWatches, which bounds them all anyway.
    package var maxWatchesPerUser: Int {
        maxWatchesPerUserSetting ?? min(maxWatches, max(Self.minimumAutoWatchesPerUser, maxWatches / 2))
    }

    /// Copies what the core takes: rules, priorities, the lookup limit and rate, the negative cache
    /// time and stall detection. reachd uses the rest itself (timeouts of its calls, watch limits).
    package func apply(to monitor: inout CoreConfiguration) {
        monitor.rules = rules
        monitor.networks = networks
        monitor.priorities = priorities
        monitor.maximumConcurrentLookups = maxConcurrentLookups
        monitor.negativeCacheTime = negativeCacheTime
        monitor.lookupsPerUserPerSecond = lookupsPerUserPerSecond
        monitor.lookupBurstPerUser = lookupBurstPerUser
        monitor.stall = stallDetection ? stall : nil
    }
}

// MARK: - Bounds

extension Configuration {
    /// Below 10 ms no DNS server can answer even on the LAN; above 5 min a caller is better served by
    /// "not reachable" and a watch than by a check that hangs (docs/ARCHITECTURE.md: nothing blocks).
    package static let defaultTimeoutRange: ClosedRange<Duration> = .milliseconds(10) ... .seconds(300)
    /// At least one lookup must run. 4096 is a sanity bound: each lookup holds a socket or two, so a value
    /// near it also needs a raised `LimitNOFILE=`.
    package static let maxConcurrentLookupsRange: ClosedRange<Int> = 1 ... 4096
    /// Zero turns negative caching off; an hour is the common resolver cap on negative TTLs (RFC 2308
    /// suggests up to three hours, but reachd must notice a newly registered name sooner).
    package static let negativeCacheTimeRange: ClosedRange<Duration> = .zero ... .seconds(3600)
    /// Zero turns the bound off; 100,000 a second is past what any resolver serves one host.
    package static let lookupsPerUserPerSecondRange: ClosedRange<Int> = 0 ... 100_000
    /// At least one lookup must start; the upper bound matches the rate's.
    package static let lookupBurstPerUserRange: ClosedRange<Int> = 1 ... 100_000
    /// A client needs at least one watch to use watches at all; 100,000 bounds the memory one client costs.
    package static let maxWatchesPerClientRange: ClosedRange<Int> = 1 ... 100_000
    /// The total bound on watch objects, and so on the daemon's memory for them.
    package static let maxWatchesRange: ClosedRange<Int> = 1 ... 1_000_000
    package static let maxWatchesPerUserRange: ClosedRange<Int> = 1 ... 1_000_000
    /// At least one check must be possible; a million messages in flight is past any host's memory.
    package static let maxHostChecksRange: ClosedRange<Int> = 1 ... 1_000_000
    /// The least `MaxWatchesPerUser=auto` gives (unless MaxWatches is smaller): one service (a
    /// monitoring agent, a fleet of containers) may watch that many targets.
    package static let minimumAutoWatchesPerUser = 2048
    /// Route metrics in practice stay far below this; the cap keeps arithmetic on priorities safe.
    package static let priorityRange: ClosedRange<Int> = 0 ... 100_000
    /// Below 100 ms nothing could come up; 24 hours is reachctl's own bound on any duration.
    package static let waitOnlineTimeoutRange: ClosedRange<Duration> = .milliseconds(100) ... DurationText.maximum
    /// Below 2 s one retransmission timeout of a healthy path would be a stall; past 10 minutes a
    /// stall is old news.
    package static let stallAfterRange: ClosedRange<Duration> = .seconds(2) ... .seconds(600)
    /// 1 lets one socket (one dead peer) flag a link; more than 1,000 is never reached.
    package static let stallMinSocketsRange: ClosedRange<Int> = 1 ... 1000
    /// 0 turns DNS evidence off.
    package static let stallDNSTimeoutsRange: ClosedRange<Int> = 0 ... 1000
    /// Below 1 s a poll would judge a single retransmission timeout; above 1 h a stall is old news.
    package static let stallIntervalRange: ClosedRange<Duration> = .seconds(1) ... .seconds(3600)
    /// Without traffic to judge, the interval doubles up to this many times `Interval=` (160 s by
    /// default).
    package static let stallBackOffFactor = 8
    /// The kinds `[WaitOnline] Kind=` takes: those `reachctl wait --kind` takes, the ones that carry an uplink.
    package static let waitOnlineKinds: [InterfaceKind] = [.wired, .wifi, .cellular, .vpn]

    /// A configuration file larger than this is refused unread: real ones are a few KiB, and the bound
    /// keeps a mistaken path (a log, a disk image) from costing memory.
    package static let maximumFileBytes = 1 << 20
    /// Lines per file, for the same reason.
    package static let maximumLines = 10_000
    /// `[Interface]` rules in all files together: each link is matched against every rule.
    package static let maximumRules = 1_000
    /// Drop-in files in all directories together; bounds what a runaway directory costs.
    package static let maximumDropIns = 1_000
    /// The file name looked for in each configuration directory.
    package static let fileName = "reachd.conf"
    /// The directory of drop-ins next to it.
    package static let dropInDirectoryName = "reachd.conf.d"
    /// Where reachd looks, in priority order.
    package static let defaultDirectories = ["/etc/reachd"]
}
