/// What the core watches and how: the in-process monitor's settings, and reachd's (filled from
/// reachd.conf by `Configuration.apply(to:)`).
package struct CoreConfiguration: Sendable {
    /// Where sysfs is mounted; tests point this at a fake tree.
    public var sysfsRoot: String = "/sys"
    /// rfkill's event device (read-only, no privilege needed); nil, or a path that cannot be
    /// opened, reads radio switches from sysfs on each link event instead (`RadioFollower`).
    public var rfkillDevicePath: String? = "/dev/rfkill"
    /// Interface rules from configuration, in order.
    public var rules: [InterfaceRule] = []
    /// Rules for networks by their name (`NetworkRule`), over the interface rules.
    public var networks: [NetworkRule] = []
    /// Priority overrides per kind.
    public var priorities: [InterfaceKind: Int] = [:]
    /// A network namespace to watch (e.g. `/run/netns/NAME`); nil for the caller's own.
    public var namespacePath: String? = nil
    /// The monitor socket's receive buffer. Tests make it tiny to force overruns.
    public var receiveBufferBytes: Int32 = 8 << 20
    /// An rtnetlink socket handed over by systemd (reachd.socket), used as the monitor socket
    /// instead of opening one; the core owns it from then on. Its buffer is left as set.
    public var monitorSocket: Int32? = nil
    /// The resolv.conf host checks read (once per version of the file); nil for the system's.
    public var resolvConfPath: String? = nil
    /// systemd-resolved's list of its upstream servers, read when resolv.conf names only stubs on
    /// loopback (`NameserverWatch`); nil never reads one. Tests point it elsewhere.
    public var resolvedUpstreamPath: String? = "/run/systemd/resolve/resolv.conf"
    /// Where systemd-networkd records its DHCP leases, one file per link (`DHCPLeases`: a
    /// server's metered hint); nil reads none. Tests point it elsewhere.
    public var dhcpLeasesDirectory: String? = "/run/systemd/netif/leases"
    /// Where ISC dhclient records its leases (`DHCPClientLeases`: the captive-portal URIs of
    /// DHCPv4 option 114 and DHCPv6 option 103); nil: not read.
    public var dhcpClientLeasesDirectory: String? = "/var/lib/dhcp"
    /// Where systemd-networkd keeps each link's state, one file per link (`NetworkdLinks`: the
    /// captive-portal URI it chose, networkd 254 and later); nil: not read.
    public var networkdLinksDirectory: String? = "/run/systemd/netif/links"
    /// Where dhcpcd keeps its leases (`DhcpcdLeases`: options 114 and 103); nil: not read.
    public var dhcpcdLeasesDirectory: String? = "/var/lib/dhcpcd"
    /// Follows changes to resolv.conf with inotify (one instance per core, of the 128 a user
    /// has by default); off, the nameservers are read once. Tests with no DNS turn it off.
    public var followsResolvConf = true
    /// Host lookups running at once; more wait their turn (never past their deadline).
    public var maximumConcurrentLookups = 64
    /// How long host checks remember that a name does not exist.
    public var negativeCacheTime: Duration = HostCache.negativeTTL
    /// New DNS lookups one Unix user other than root may start per second, and at once from a
    /// full bucket; 0: no bound (the in-process monitor's default: it serves one user).
    public var lookupsPerUserPerSecond = 0
    public var lookupBurstPerUser = 0

    package var lookupRate: LookupRate.Settings? {
        lookupsPerUserPerSecond > 0 ? LookupRate.Settings(perSecond: lookupsPerUserPerSecond, burst: max(1, lookupBurstPerUser)) : nil
    }
    /// Passive stall detection's thresholds and intervals (`[Stall]` in reachd.conf); nil turns
    /// it off: no socket dumps, never `stalled`.
    public var stall: StallSettings? = StallSettings()

    public init() {}

    package var resolverOptions: HostResolver.Options {
        HostResolver.Options(
            maxConcurrent: maximumConcurrentLookups, resolvConfPath: resolvConfPath, negativeCacheTime: negativeCacheTime)
    }

    /// The files DNS is configured by, read by the nameserver fact and the lookups alike.
    package func resolverFiles(warn: @escaping (String) -> Void) -> ResolverFiles {
        ResolverFiles(
            resolvConfPath: resolvConfPath ?? HostResolver.systemResolvConfPath, upstreamPath: resolvedUpstreamPath, warn: warn)
    }

    /// The state before the first dump: the classifier of these rules, and the host's key for
    /// network names (read from /etc/machine-id once per core).
    package var initialState: NetworkState {
        var state = NetworkState(classifier: classifier)
        state.networkKey = HostKey.networkKey().map { NetworkKey(k0: $0.0, k1: $0.1) } ?? .none
        return state
    }

    /// The rules, priorities and network rules as the Engine applies them.
    package var classifier: Classifier { Classifier(rules: rules, priorities: priorities, networks: networks) }

    package var sourceOptions: KernelSource.Options {
        var options = KernelSource.Options()
        options.namespacePath = namespacePath
        options.sysfs = SysfsReader(root: sysfsRoot)
        options.receiveBufferBytes = receiveBufferBytes
        options.adoptedMonitorSocket = monitorSocket
        options.rfkillDevicePath = rfkillDevicePath
        return options
    }
}
