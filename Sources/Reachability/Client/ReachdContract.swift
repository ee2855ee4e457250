/// reachd's D-Bus contract, spelled once: the names, the members with their signatures, the
/// errors and the bounds that reachd serves and `ReachabilityClient` asks for.
/// packaging/org.reachd.Reachability1.xml documents it and .conf grants it; `BusContractTests`
/// checks both against this file, and DaemonBusTests checks the live daemon against the XML.
package enum ReachdContract {
    public static let busName = "org.reachd.Reachability1"
    public static let objectPath = "/org/reachd/Reachability1"
    public static let interface = "org.reachd.Reachability1"
    public static let watchInterface = "org.reachd.Reachability1.Watch"
    /// Watch objects live under this path (`.../watch/N`).
    public static let watchPathNamespace = "/org/reachd/Reachability1/watch"
    /// The interface of WatchPath's objects (under `watchPathNamespace` too: they are watches).
    public static let pathInterface = "org.reachd.Reachability1.Path"

    /// WatchPath's option keys.
    public enum PathOption {
        /// s: the one interface kind the path may use (NWPathMonitor's requiredInterfaceType).
        public static let requiredKind = "RequiredKind"
        /// as: interface kinds the path must not use (prohibitedInterfaceTypes).
        public static let prohibitedKinds = "ProhibitedKinds"
    }

    /// The error names reachd answers with.
    public enum ErrorName {
        public static let invalidTarget = "org.reachd.Reachability1.Error.InvalidTarget"
        public static let limitExceeded = "org.reachd.Reachability1.Error.LimitExceeded"
        public static let timeout = "org.reachd.Reachability1.Error.Timeout"
        /// CheckUnit: systemd has no such unit, does not run, or cannot tell its sandbox.
        public static let noSuchUnit = "org.reachd.Reachability1.Error.NoSuchUnit"
    }

    /// The most a caller's argument may hold, checked while it is read: a string's bytes are
    /// counted before it becomes a Swift string, an array is read one element at a time and
    /// refused at the first one past its bound, so no call keeps reachd's loop longer than a few
    /// milliseconds whatever the bus lets through (32 MiB per message). Each is well above any
    /// real use; a refusal is InvalidArgs naming the argument and its bound. The contract
    /// (packaging/org.reachd.Reachability1.xml) states them.
    public enum Bound {
        /// CheckAddress's `address`: a full IPv6 address with brackets and a scope of IFNAMSIZ.
        public static let address = AddressTarget.maximumLength
        /// CheckHost's `host`, CheckHostAsUser's and Watch's `target` (a name or an address): the
        /// longest host name and its trailing dot.
        public static let target = HostName.maximumLength + 1
        /// CheckUnit's `unit`: systemd's longest unit name.
        public static let unit = UnitName.maximumLength
        /// Unwatch's `watch`: reachd's own watch paths are about 40 bytes.
        public static let watchPath = 255
        /// WatchPath's `options`: each key's bytes. Each known key may appear once, and an unknown
        /// one is refused, so at most two entries are ever read.
        public static let optionKey = 64
        /// ProhibitedKinds' entries (there are 8 kinds; repeats are
        /// allowed and count), and the bytes of each kind name, RequiredKind's too.
        public static let kinds = 32
        public static let kindName = 32
    }

    /// The longest CheckHost timeout (`timeout_ms`) reachd accepts: a check is not a way to hang a
    /// client. The client clamps longer ones.
    public static let maximumCheckTimeout: Duration = .seconds(300)

    /// How long reachd waits for systemd's answers to CheckUnit's questions; a client waits
    /// longer (`checkUnitTimeout`), so that it hears reachd say systemd did not answer.
    public static let systemdTimeout: Duration = .seconds(2)
    public static let checkUnitTimeout: Duration = .seconds(5)
    /// CheckUnit's details entry (s) saying whose TCP traffic its `traffic` layer judged
    /// (`Explanation.TrafficScope`): "unit" for a unit of `[Units] Watch=`, else "host".
    public static let trafficScope = "TrafficScope"

    /// GetStatus's entries with the figures behind `Stalled`, for the host's path at the last
    /// poll; absent when that path had nothing to judge (or detection is off).
    public enum StallEntry {
        /// u: TCP sockets judged (connections the host started beyond the link's subnets).
        public static let sockets = "StallSockets"
        /// u: sockets in retransmission back-off with nothing received since they began waiting.
        public static let socketsFailing = "StallSocketsFailing"
        /// u: the owners of those (root, the host's own, and each other uid).
        public static let owners = "StallOwners"
        /// t: seconds the oldest of them has waited with nothing received.
        public static let secondsWaiting = "StallSecondsWaiting"
        /// t: seconds since a judged socket last received a segment; absent when none ever did.
        public static let secondsSinceReceive = "StallSecondsSinceReceive"
        /// u: the system's DNS lookups that timed out in a row.
        public static let dnsTimeouts = "StallDNSTimeouts"
        /// b: reachd's own queries to a nameserver beyond the link went unanswered too; absent
        /// when they did not (or were not asked).
        public static let nameserverSilent = "StallNameserverSilent"
    }

    /// GetStatus's entry with each expensive interface's reason (a{ss}: name -> `ExpensiveReason`):
    /// ListInterfaces' struct is fixed, so the per-interface reasons travel beside it.
    public static let interfaceExpensiveReasons = "InterfaceExpensiveReasons"
    /// GetStatus's `a{ss}`: each interface's network name (`NetworkID`), for those that have one.
    public static let interfaceNetworkIDs = "InterfaceNetworkIDs"
    /// GetStatus's `a(issuas)`: every interface as ListInterfaces gives it, in the reply that
    /// carries the host's state, so a client reads one generation's whole picture in one call
    /// (before, GetStatus, ListInterfaces and GetStatus again to see that nothing moved between).
    public static let interfaces = "Interfaces"
    /// GetStatus's `a{sa{sv}}`: every interface's facts beyond ListInterfaces' struct, by
    /// interface name then fact name (`InterfaceFact.all`); the two tables above repeat two of
    /// them for older clients. Its presence also tells a client that reachd sends `FactsChanged`.
    public static let interfaceFacts = "InterfaceFacts"

    /// GetStatus's entries on where `Nat64Prefix` came from (s each): the announcing router and
    /// the link it was announced on; absent when no prefix is.
    public enum Nat64Entry {
        public static let router = "Nat64Router"
        public static let interface = "Nat64Interface"
    }

    /// The members of `interface` at `objectPath`: the host's properties (`HostProperty.all`)
    /// and Generation, then the methods and signals.
    public static let serviceMembers: [BusVTable.Member] =
        HostProperty.all.map { .property($0.name, signature: $0.signature, emitsChange: true) } + [
        .property("Generation", signature: "t", emitsChange: true),
        .method("GetStatus", signature: "", result: "a{sv}", names: "status\0"),
        .method("ListInterfaces", signature: "", result: "a(issuas)", names: "interfaces\0"),
        .method("CheckAddress", signature: "s", result: "ussa{sv}", names: "address\0flags\0interface\0reason\0details\0"),
        .method(
            "CheckHost", signature: "su", result: "usassa{sv}",
            names: "host\0timeout_ms\0flags\0interface\0addresses\0reason\0details\0"),
        .method(
            "CheckHostAsUser", signature: "suu", result: "usassa{sv}",
            names: "target\0timeout_ms\0uid\0flags\0interface\0addresses\0reason\0details\0"),
        .method("Validate", signature: "", result: "sss", names: "connectivity\0portal\0detail\0"),
        .method("Explain", signature: "s", result: "sa(ssass)", names: "target\0broken_layer\0layers\0"),
        .method(
            "CheckUnit", signature: "ss", result: "ussa{sv}sa(ssass)",
            names: "unit\0target\0flags\0interface\0reason\0details\0broken_layer\0layers\0"),
        .method("GetMetrics", signature: "", result: "s", names: "exposition\0"),
        .method("GetHistory", signature: "t", result: "ta(tssssssst)", names: "since_usec\0oldest_usec\0records\0"),
        .method("Watch", signature: "s", result: "o", names: "target\0watch\0"),
        .method("WatchPath", signature: "a{sv}", result: "o", names: "options\0watch\0"),
        .method("Unwatch", signature: "o", result: "", names: "watch\0"),
        .signal("Changed", signature: "ust", names: "flags\0primary_interface\0generation\0"),
        .signal("InterfacesChanged", signature: "a(issuas)ast", names: "changed\0removed\0generation\0"),
        .signal("HostChangeDescribed", signature: "a{sv}", names: "description\0"),
        .signal("FactsChanged", signature: "a{sa{sv}}a{sv}t", names: "interfaces\0host\0generation\0"),
        .signal(
            "Updated", signature: "ta{sv}a{sv}a(issuas)asa{sa{sv}}",
            names: "generation\0host\0description\0interfaces\0removed\0facts\0"),
    ]

    /// The entries of `HostChangeDescribed`, sent right after each `Changed` of the same
    /// generation: what the host change changed and whether clients must rebind.
    public enum HostChangeEntry {
        public static let generation = "generation"  // t
        public static let changed = "changed"  // as, HostChange.Aspect's words
        public static let rebind = "rebind"  // b
        public static let primary = "primary"  // s
        public static let sourceAddress = "sourceAddress"  // s, empty without one
        public static let previousSourceAddress = "previousSourceAddress"  // s, empty without one
    }

    /// `FactsChanged(a{sa{sv}} interfaces, a{sv} host, t generation)`: what the other signals'
    /// fixed shapes cannot carry, sent before the PropertiesChanged of the same generation when a
    /// changed interface has facts (`interfaces`: `InterfaceFact.all` of each changed interface
    /// that has any; one left out has none) or the host's NAT64 prefix moved (`host`: the
    /// `Nat64Entry` entries of the prefix now, none without one). With Changed, InterfacesChanged
    /// and the values of PropertiesChanged, a client keeps its snapshot without asking.

    /// `Updated(t generation, a{sv} host, a{sv} description, a(issuas) interfaces, as removed,
    /// a{sa{sv}} facts)`: a whole generation in one signal, sent before its other signals, so
    /// that a client keeping a snapshot applies it on one wake-up. `host`: the values of the host
    /// properties that moved (Flags and PrimaryInterface always when the host's answer changed)
    /// and the `Nat64Entry` entries when the NAT64 prefix moved; `description`: HostChangeDescribed's
    /// entries when the host's answer changed, else none; then InterfacesChanged's interfaces and
    /// removed names, and FactsChanged's facts of those interfaces.

    /// The members of `watchInterface` on each watch object.
    public static let watchMembers: [BusVTable.Member] = [
        .property("Target", signature: "s", emitsChange: false),
        .property("Flags", signature: "u", emitsChange: true),
        .property("Interface", signature: "s", emitsChange: true),
        .property("Reason", signature: "s", emitsChange: true),
    ]

    /// The members of `pathInterface` on each WatchPath object: the path's properties
    /// (`PathProperty.all`), then the restriction it was asked with.
    public static let pathMembers: [BusVTable.Member] =
        PathProperty.all.map { .property($0.name, signature: $0.signature, emitsChange: true) } + [
            .property("RequiredKind", signature: "s", emitsChange: false),
            .property("ProhibitedKinds", signature: "as", emitsChange: false),
        ]
}
