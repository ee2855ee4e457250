import Reachability

/// The object `/org/reachd/Reachability1`: a table from D-Bus members to the Engine's answers.
/// No logic of its own: validation and checks live in the library, limits in `WatchRegistry`.
/// Checks answer as the caller's traffic is routed (its Unix user from `CallerIdentities`); the
/// host's properties are the system's view (uid 0).
final class ReachabilityService: BusObject {
    /// The state, for the questions calls ask of it (address checks, explanations, counters).
    private let state: SharedState
    /// The update last told: every property read answers from it, so a client told of a change
    /// reads the values the change's signals carried.
    private var update: CoreUpdate
    private let bus: BusConnection
    private let watches: WatchRegistry
    private let checks: HostCheckCalls
    /// `Validate` for a Unix user: probe (or answer the last verdict, see `Probes.validate`).
    private let validate: (UInt32, @escaping (ConnectivityStatus) -> Void) -> Void
    /// Who calls (their Unix user), for Validate.
    private let callers: Callers
    /// `GetMetrics`: the exposition.
    private let metricsText: () -> String
    /// `CheckUnit`: a service's answer, judged by its sandbox.
    private let units: UnitChecks
    /// `GetHistory`: the recorded changes of answers (set once the history follows the core).
    var history: History?
    /// GetHistory's replies are the largest reachd makes (176 KB with the ring full): each user
    /// but root may ask for 8 at once and 4 a second, however many connections it opens. Two
    /// users asking in a loop held root's CheckAddress 615 ms at p99 before.
    private var historyRate = UserRate(.init(perSecond: 4, burst: 8))
    /// CheckHost's deadline when the caller gives none (`DefaultTimeout=`; a reload changes it).
    var defaultTimeout: Duration

    init(
        state: SharedState, first: CoreUpdate, bus: BusConnection, watches: WatchRegistry, checks: HostCheckCalls, defaultTimeout: Duration,
        callers: Callers, validate: @escaping (UInt32, @escaping (ConnectivityStatus) -> Void) -> Void,
        metricsText: @escaping () -> String, units: UnitChecks
    ) {
        self.callers = callers
        self.state = state
        update = first
        self.bus = bus
        self.watches = watches
        self.checks = checks
        self.defaultTimeout = defaultTimeout
        self.validate = validate
        self.metricsText = metricsText
        self.units = units
    }

    static let vtable = BusVTable(ReachdContract.serviceMembers)

    static let maximumTimeoutMilliseconds = UInt32(ReachdContract.maximumCheckTimeout.wholeMilliseconds)

    static func historyRefusal(_ uid: UInt32, _ rate: UserRate.Settings) -> BusError {
        BusError(
            name: ReachdContract.ErrorName.limitExceeded,
            message: "Unix user \(uid) asked for the history more than \(rate.burst) times at once or \(rate.perSecond) a second, "
                + "the most one user may; ask again in a moment, with since_usec to have only what is new")
    }

    static func invalidTarget(_ message: String) -> BusError {
        BusError(name: ReachdContract.ErrorName.invalidTarget, message: message)
    }

    /// The core's first follower: the properties read while the others are told (sd-bus reads
    /// them as PropertiesChanged is sent) are the update's.
    func follow(_ update: CoreUpdate) { self.update = update }

    func property(_ name: String, into reply: BusMessage) throws(BusError) {
        try Self.append(name, of: update.snapshot, to: reply)
    }

    /// The value of the property `name` in `snapshot`: what Get answers and GetStatus carries.
    static func append(_ name: String, of snapshot: ReachabilitySnapshot, to reply: BusMessage) throws(BusError) {
        guard try HostProperty.append(name, of: snapshot, to: reply) else { throw BusError.unknownProperty(name) }
    }

    /// A GetStatus entry of values by interface name (`a{ss}`): what ListInterfaces' fixed struct
    /// cannot carry.
    static func appendByInterface(_ reply: BusMessage, _ entry: String, _ values: [(String, String)]) throws(BusError) {
        try reply.appendEntry(entry, "a{ss}") { message throws(BusError) in
            try message.open("a", "{ss}")
            for (name, value) in values {
                try message.open("e", "ss")
                try message.append(name)
                try message.append(value)
                try message.close()
            }
            try message.close()
        }
    }

    /// GetStatus's entries: the host's properties and Generation, each with its signature.
    static let statusEntries: [(name: String, signature: String)] =
        HostProperty.all.map { ("\($0.name)", "\($0.signature)") } + [(HostProperty.generation, "t")]

    /// The methods, by name: the contract's (`ReachdContract.serviceMembers`) each answered by
    /// one function of this type, so a method added is one row and one function.
    private static let methods: [String: @Sendable (ReachabilityService) -> (BusMessage) throws(BusError) -> BusReply] = [
        "GetStatus": getStatus, "ListInterfaces": listInterfaces, "CheckAddress": checkAddress, "Explain": explain,
        "CheckHost": { service in { message throws(BusError) in try service.checkHost(message) } },
        "CheckHostAsUser": { service in { message throws(BusError) in try service.checkHost(message, asUser: true) } },
        "Validate": validate, "GetMetrics": getMetrics, "GetHistory": getHistory, "Watch": watch, "WatchPath": watchPath,
        "Unwatch": unwatch, "CheckUnit": { service in { message throws(BusError) in try service.units.check(message) } },
    ]

    func call(_ method: String, _ message: BusMessage) throws(BusError) -> BusReply {
        guard let answer = Self.methods[method] else { throw BusError.unknownMethod(method) }
        return try answer(self)(message)
    }

    private func getStatus(_ message: BusMessage) throws(BusError) -> BusReply {
        let snapshot = update.snapshot
        let counters = state.counters
        let interfaces = snapshot.interfaces
        return .now { reply throws(BusError) in
            try reply.open("a", "{sv}")
            for (name, signature) in Self.statusEntries {
                try reply.appendEntry(name, signature) { message throws(BusError) in try Self.append(name, of: snapshot, to: message) }
            }
            try reply.appendEntry("Overruns", "t") { message throws(BusError) in try message.append(counters.overruns) }
            try reply.appendEntry("Resyncs", "t") { message throws(BusError) in try message.append(counters.resyncs) }
            let reasons = interfaces.compactMap { status in status.expensiveReason.map { (status.name, $0.rawValue) } }
            try Self.appendByInterface(reply, ReachdContract.interfaceExpensiveReasons, reasons)
            let networks = interfaces.filter { !$0.networkID.isEmpty }.map { ($0.name, $0.networkID) }
            try Self.appendByInterface(reply, ReachdContract.interfaceNetworkIDs, networks)
            try reply.appendEntry(ReachdContract.interfaceFacts, "a{sa{sv}}") { message throws(BusError) in
                try InterfaceFact.append(interfaces, to: message)
            }
            try reply.appendEntry(ReachdContract.interfaces, "a(issuas)") { message throws(BusError) in try Self.appendInterfaces(message, interfaces) }
            if let evidence = snapshot.stallEvidence { try Self.appendStallEvidence(reply, evidence) }
            if let nat64 = snapshot.host.nat64Prefix {
                try reply.appendEntry(ReachdContract.Nat64Entry.router, "s") { message throws(BusError) in try message.append(nat64.router.description) }
                try reply.appendEntry(ReachdContract.Nat64Entry.interface, "s") { message throws(BusError) in try message.append(nat64.interfaceName) }
            }
            try reply.close()
        }
    }

    private func listInterfaces(_ message: BusMessage) throws(BusError) -> BusReply {
        let interfaces = update.snapshot.interfaces
        return .now { reply throws(BusError) in try Self.appendInterfaces(reply, interfaces) }
    }

    private func checkAddress(_ message: BusMessage) throws(BusError) -> BusReply {
        let target = try message.readString("address", maximumBytes: ReachdContract.Bound.address, refusal: ReachdContract.ErrorName.invalidTarget)
        return try callers.identities.answering(message) { [state] uid throws(BusError) in
            let result = state.check(address: target, uid: uid)
            if result.reason == .invalidTarget { throw Self.invalidTarget(result.message ?? "invalid address \(target.inertExcerpt())") }
            return .now { reply throws(BusError) in
                try reply.append(result.flags.rawValue)
                try reply.append(result.interface)
                try reply.append(result.reason?.rawValue ?? "")
                try Self.appendDetails(reply, result)
            }
        }
    }

    /// An address or "" (the host), answered from the mirror at once as the caller's traffic is
    /// routed; a host name is the caller's to resolve first (CheckHost), as reachctl does.
    private func explain(_ message: BusMessage) throws(BusError) -> BusReply {
        let target = try message.readString("target", maximumBytes: ReachdContract.Bound.address, refusal: ReachdContract.ErrorName.invalidTarget)
        return try callers.identities.answering(message) { [state] uid throws(BusError) in
            let explanation: Explanation
            switch state.explain(target, uid: uid) {
            case let .success(found): explanation = found
            case let .failure(refusal): throw Self.invalidTarget(refusal.description)
            }
            return .now { reply throws(BusError) in try Self.appendExplanation(reply, explanation) }
        }
    }

    /// Replies when the probe answers (within its Timeout=), never blocking the loop.
    private func validate(_ message: BusMessage) throws(BusError) -> BusReply {
        let call = OwnedBusMessage(retaining: message)
        try callers.withCaller(of: message) { [unowned self] caller in
            defer { self.callers.forgetIfIdle(call.message.sender ?? "") }
            let known: UInt32
            switch caller {
            case let .success(caller): known = caller.uid
            case let .failure(error): return self.bus.reply(to: call.message, error: error)
            }
            self.validate(known) { status in
                do {
                    try self.bus.reply(to: call.message) { reply throws(BusError) in
                        try reply.append(status.verdict.rawValue)
                        try reply.append(status.portal)
                        try reply.append(status.detail)
                    }
                } catch {
                    Log.warning("cannot reply to Validate: \(error)")
                }
            }
        }
        return .later
    }

    private func getMetrics(_ message: BusMessage) throws(BusError) -> BusReply {
        let text = metricsText()
        return .now { reply throws(BusError) in try reply.append(text) }
    }

    /// Answered from memory at once: at most the ring's bound of records.
    private func getHistory(_ message: BusMessage) throws(BusError) -> BusReply {
        let since = try message.readUInt64()
        return try callers.identities.answering(message) { [unowned self] uid throws(BusError) in
            guard historyRate.admit(uid, now: .now) else { throw Self.historyRefusal(uid, historyRate.settings) }
            let ring = history?.ring ?? HistoryRing()
            let records = ring.records(since: since)
            return .now { reply throws(BusError) in try Self.appendHistory(reply, oldest: ring.oldestHostRecord ?? 0, records) }
        }
    }

    private func watch(_ message: BusMessage) throws(BusError) -> BusReply {
        let target = try message.readString("target", maximumBytes: ReachdContract.Bound.target, refusal: ReachdContract.ErrorName.invalidTarget)
        return try watches.add(target: target, caller: message)
    }

    private func watchPath(_ message: BusMessage) throws(BusError) -> BusReply {
        try watches.addPath(caller: message)
    }

    private func unwatch(_ message: BusMessage) throws(BusError) -> BusReply {
        let path = try message.readObjectPath("watch", maximumBytes: ReachdContract.Bound.watchPath)
        try watches.remove(path: path, caller: message.sender ?? "")
        return .now { _ in }
    }

    /// CheckHost replies later: a slow DNS answer must never delay other callers.
    private func checkHost(_ message: BusMessage, asUser: Bool = false) throws(BusError) -> BusReply {
        let host = try message.readString(asUser ? "target" : "host", maximumBytes: ReachdContract.Bound.target, refusal: ReachdContract.ErrorName.invalidTarget)
        let milliseconds = try message.readUInt32()
        let named = asUser ? try message.readUInt32() : nil
        guard milliseconds <= Self.maximumTimeoutMilliseconds else {
            throw BusError(
                name: "org.freedesktop.DBus.Error.InvalidArgs",
                message: "timeout_ms \(milliseconds) is above the maximum of \(Self.maximumTimeoutMilliseconds); 0 means the default")
        }
        let timeout = milliseconds == 0 ? defaultTimeout : .milliseconds(Int64(milliseconds))
        if AddressTarget.looksLikeAddress(host) {
            return try callers.identities.answering(message) { [state] uid throws(BusError) in
                let result = state.check(address: host, uid: try Callers.routedAs(named, caller: uid))
                if result.reason == .invalidTarget { throw Self.invalidTarget(result.message ?? "invalid address \(host.inertExcerpt())") }
                return .now { reply throws(BusError) in try Self.appendHostReply(reply, result) }
            }
        }
        if case let .failure(error) = HostName.validate(host) { throw Self.invalidTarget(error.description) }
        return try checks.start(host, timeout: timeout, asUser: named, call: message)
    }

    /// Explain's reply: the first broken layer ("" when none), then every layer in order as
    /// (layer, status, evidence, fix).
    static func appendExplanation(_ reply: BusMessage, _ explanation: Explanation) throws(BusError) {
        try reply.append(explanation.brokenLayer?.rawValue ?? "")
        try reply.open("a", "(ssass)")
        for layer in explanation.layers {
            try reply.open("r", "ssass")
            try reply.append(layer.name.rawValue)
            try reply.append(layer.status.rawValue)
            try reply.append(layer.evidence)
            try reply.append(layer.fix)
            try reply.close()
        }
        try reply.close()
    }

    /// GetHistory's reply: how far back the host's records reach (0: none), then each record as
    /// (time_usec, lane, condition, state, primary, reason, cause_layer, interface, generation).
    static func appendHistory(_ reply: BusMessage, oldest: UInt64, _ records: [HistoryRecord]) throws(BusError) {
        try reply.append(oldest)
        try reply.open("a", "(tssssssst)")
        for record in records {
            try reply.open("r", "tssssssst")
            try reply.append(record.time)
            try reply.append(record.lane)
            try reply.append(record.condition.rawValue)
            try reply.append(record.state)
            try reply.append(record.primary)
            try reply.append(record.reason)
            try reply.append(record.cause?.rawValue ?? "")
            try reply.append(record.interface)
            try reply.append(record.generation)
            try reply.close()
        }
        try reply.close()
    }

    /// `a(issuas)`: index, name, kind, flags, addresses; ListInterfaces and InterfacesChanged.
    static func appendInterfaces(_ message: BusMessage, _ interfaces: [InterfaceStatus]) throws(BusError) {
        try message.open("a", "(issuas)")
        for interface in interfaces {
            try message.open("r", "issuas")
            try message.append(interface.index)
            try message.append(interface.name)
            try message.append(interface.kind.rawValue)
            try message.append(interface.flags.rawValue)
            try message.append(interface.addresses.map(\.description))
            try message.close()
        }
        try message.close()
    }

    /// `elapsed`: from the call's dispatch to this reply, for a check that waited for DNS.
    static func appendHostReply(_ reply: BusMessage, _ result: CheckResult, elapsed: Duration? = nil) throws(BusError) {
        try reply.append(result.flags.rawValue)
        try reply.append(result.interface)
        try reply.append(result.addresses.map(\.description))
        try reply.append(result.reason?.rawValue ?? "")
        try appendDetails(reply, result, elapsed: elapsed)
    }

    /// The trailing `a{sv}` of the check replies: what the verdict rests on, so an answer through
    /// reachd carries what the in-process one does. Keys are left out when unknown: "Gateway" s
    /// (the next hop), "Source" s (the source address the kernel would use), "Message" s, and
    /// for a CheckHost that waited for DNS "ElapsedUSec" t: microseconds from when reachd took
    /// the call to its reply, so a caller can tell reachd's time from the bus's (a crowded
    /// bus delays a call before reachd sees it, and that part is not reachd's to keep).
    static func appendDetails(
        _ reply: BusMessage, _ result: CheckResult, elapsed: Duration? = nil, trafficScope: Explanation.TrafficScope? = nil
    ) throws(BusError) {
        try reply.open("a", "{sv}")
        if let trafficScope {
            try reply.appendEntry(ReachdContract.trafficScope, "s") { message throws(BusError) in try message.append(trafficScope.rawValue) }
        }
        if let elapsed {
            try reply.appendEntry("ElapsedUSec", "t") { message throws(BusError) in try message.append(elapsed.unsignedMicroseconds) }
        }
        if let gateway = result.gateway {
            try reply.appendEntry("Gateway", "s") { message throws(BusError) in try message.append(gateway.description) }
        }
        if let source = result.source {
            try reply.appendEntry("Source", "s") { message throws(BusError) in try message.append(source.description) }
        }
        if let text = result.message {
            try reply.appendEntry("Message", "s") { message throws(BusError) in try message.append(text) }
        }
        try reply.close()
    }

    /// The figures behind `Stalled` (`ReachdContract.StallEntry`).
    private static func appendStallEvidence(_ reply: BusMessage, _ evidence: StallEvidence) throws(BusError) {
        typealias Key = ReachdContract.StallEntry
        try reply.appendEntry(Key.sockets, "u") { message throws(BusError) in try message.append(UInt32(clamping: evidence.socketsJudged)) }
        try reply.appendEntry(Key.socketsFailing, "u") { message throws(BusError) in try message.append(UInt32(clamping: evidence.socketsFailing)) }
        try reply.appendEntry(Key.owners, "u") { message throws(BusError) in try message.append(UInt32(clamping: evidence.owners)) }
        try reply.appendEntry(Key.secondsWaiting, "t") { message throws(BusError) in
            try message.append(UInt64(clamping: evidence.waiting.components.seconds))
        }
        if let since = evidence.sinceReceive {
            try reply.appendEntry(Key.secondsSinceReceive, "t") { message throws(BusError) in
                try message.append(UInt64(clamping: since.components.seconds))
            }
        }
        try reply.appendEntry(Key.dnsTimeouts, "u") { message throws(BusError) in try message.append(UInt32(clamping: evidence.dnsTimeouts)) }
        if evidence.nameserverSilent {
            try reply.appendEntry(Key.nameserverSilent, "b") { message throws(BusError) in try message.append(true) }
        }
    }
}
