import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// The questions a client asks reachd: status, interfaces, checks and validation, each one call.
extension ReachabilityClient {

    /// `GetStatus`: the host's state and the generation it belongs to. Unknown keys are skipped,
    /// missing ones keep their defaults, so newer and older reachd versions both answer.
    public func status() throws(BusError) -> (host: HostStatus, generation: UInt64) {
        let full = try fullStatus(interfaces: false)
        return (full.host, full.generation)
    }

    /// `status()` as the probe asks it, keeping the whole picture for the first `snapshot()`.
    package func probeStatus() throws(BusError) -> (host: HostStatus, generation: UInt64) {
        let full = try fullStatus(interfaces: true)
        if let interfaces = full.interfaces { probed = (Self.snapshot(full, interfaces), .now) }
        return (full.host, full.generation)
    }

    /// GetStatus's figures behind `Stalled`, read into `evidence` (created at the first one).
    private static func readStallEntry(_ key: String, _ message: BusMessage, into evidence: inout StallEvidence?) throws(BusError) -> Bool {
        typealias Key = ReachdContract.StallEntry
        switch key {
        case Key.sockets, Key.socketsFailing, Key.owners, Key.dnsTimeouts:
            guard let value = try variant(message, "u", { m throws(BusError) in try m.readUInt32() }) else { return true }
            var figures = evidence ?? StallEvidence()
            switch key {
            case Key.sockets: figures.socketsJudged = Int(value)
            case Key.socketsFailing: figures.socketsFailing = Int(value)
            case Key.owners: figures.owners = Int(value)
            default: figures.dnsTimeouts = Int(value)
            }
            evidence = figures
        case Key.secondsWaiting, Key.secondsSinceReceive:
            guard let value = try variant(message, "t", { m throws(BusError) in try m.readUInt64() }) else { return true }
            var figures = evidence ?? StallEvidence()
            let seconds = Duration.seconds(Int64(clamping: value))
            if key == Key.secondsWaiting { figures.waiting = seconds } else { figures.sinceReceive = seconds }
            evidence = figures
        case Key.nameserverSilent:
            guard let value = try variant(message, "b", { m throws(BusError) in try m.readBool() }) else { return true }
            var figures = evidence ?? StallEvidence()
            figures.nameserverSilent = value
            evidence = figures
        default:
            return false
        }
        return true
    }

    /// `GetMetrics`: reachd's Prometheus exposition (text format 0.0.4).
    public func metrics() throws(BusError) -> String {
        let reply = try call("GetMetrics")
        // The reply owns the message: it must outlive the read.
        return try withExtendedLifetime(reply) { () throws(BusError) in try reply.message.readString() }
    }

    /// `GetStatus` with the mirror's counters (nil from a reachd that does not send them).
    /// `stall`: the figures behind `Stalled` (nil when reachd sends none).
    /// `interfaceFacts`: each interface's facts beyond ListInterfaces' struct, by name then
    /// fact (`InterfaceFact`), from its two older tables when reachd sends no InterfaceFacts.
    /// `interfaces`: ListInterfaces' list, from a reachd that sends it in GetStatus, when asked
    /// for (`reachctl is` skips it: reading it faulted in 15 pages more and took 0.3 ms).
    package func fullStatus(interfaces wanted: Bool = true) throws(BusError) -> FullStatus {
        let reply = try call("GetStatus")
        let message = reply.message
        var host = HostStatus()
        var generation: UInt64 = 0
        var counters: MirrorCounters?
        var stall: StallEvidence?
        // The three NAT64 entries, kept until all are read. The host's properties are read by
        // their rows (`HostProperty`), closures and no key paths: `reachctl is` reads GetStatus
        // once per timer, and key paths' generic metadata costs the runtime a scan of every
        // protocol conformance in the binary.
        var nat64: (prefix: String?, router: String?, interface: String?)
        var interfaceFacts: [String: [String: String]]?
        var interfaces: [InterfaceStatus]?
        var olderTables: [String: [String: String]] = [:]
        guard try message.enter("a", "{sv}") else { throw Self.badReply("GetStatus", "expected a{sv}") }
        while try message.enter("e", "sv") {
            let key = try message.readString()
            if try HostProperty.readEntry(key, message, into: &host) {
                try message.exit()
                continue
            }
            switch key {
            case HostProperty.generation:
                if let value = try Self.variant(message, "t", { m throws(BusError) in try m.readUInt64() }) {
                    generation = value
                }
            case "Overruns":
                if let value = try Self.variant(message, "t", { m throws(BusError) in try m.readUInt64() }) {
                    counters = MirrorCounters(overruns: value, resyncs: counters?.resyncs ?? 0)
                }
            case "Resyncs":
                if let value = try Self.variant(message, "t", { m throws(BusError) in try m.readUInt64() }) {
                    counters = MirrorCounters(overruns: counters?.overruns ?? 0, resyncs: value)
                }
            case ReachdContract.interfaceFacts:
                if try message.enterVariant(holding: "a{sa{sv}}") {
                    interfaceFacts = try InterfaceFact.read(message)
                    try message.exit()
                } else {
                    try message.skip("v")
                }
            case ReachdContract.interfaces:
                if wanted, try message.enterVariant(holding: "a(issuas)") {
                    interfaces = try Self.readInterfaces(message, "GetStatus")
                    try message.exit()
                } else {
                    try message.skip("v")
                }
            case ReachdContract.interfaceExpensiveReasons, ReachdContract.interfaceNetworkIDs:
                let fact = key == ReachdContract.interfaceNetworkIDs ? "NetworkID" : "ExpensiveReason"
                for (name, value) in try Self.byInterface(message) { olderTables[name, default: [:]][fact] = value }
            case "Nat64Prefix", ReachdContract.Nat64Entry.router, ReachdContract.Nat64Entry.interface:
                let value = try Self.variant(message, "s", { m throws(BusError) in try m.readString() })
                switch key {
                case "Nat64Prefix": nat64.prefix = value
                case ReachdContract.Nat64Entry.router: nat64.router = value
                default: nat64.interface = value
                }
            default:
                if try !Self.readStallEntry(key, message, into: &stall) { try message.skip("v") }
            }
            try message.exit()
        }
        try message.exit()
        if let prefix = nat64.prefix.flatMap(IPPrefix.init), let router = nat64.router.flatMap(IPAddress.init) {
            host.nat64Prefix = Nat64Prefix(prefix: prefix, router: router, interfaceName: nat64.interface ?? "")
        }
        return (host, generation, counters, stall, interfaceFacts ?? olderTables, interfaces)
    }

    /// A GetStatus entry's `a{ss}` of values by interface name; empty when it holds another type.
    private static func byInterface(_ message: BusMessage) throws(BusError) -> [String: String] {
        guard try message.enterVariant(holding: "a{ss}") else {
            try message.skip("v")
            return [:]
        }
        guard try message.enter("a", "{ss}") else { throw Self.badReply("GetStatus", "expected a{ss}") }
        var values: [String: String] = [:]
        while try message.enter("e", "ss") {
            let name = try message.readString()
            values[name] = try message.readString()
            try message.exit()
        }
        try message.exit()
        try message.exit()
        return values
    }

    /// `ListInterfaces`: every visible interface, by index. Kinds and flags come from their
    /// raw values (an unknown kind reads as `other`); an address reachd wrote in a form this
    /// version cannot parse is left out.
    public func interfaces() throws(BusError) -> [InterfaceStatus] {
        let reply = try call("ListInterfaces")
        return try withExtendedLifetime(reply) { () throws(BusError) in try Self.readInterfaces(reply.message, "ListInterfaces") }
    }

    /// ListInterfaces' and InterfacesChanged's `a(issuas)`.
    package static func readInterfaces(_ message: BusMessage, _ member: String) throws(BusError) -> [InterfaceStatus] {
        var interfaces: [InterfaceStatus] = []
        guard try message.enter("a", "(issuas)") else { throw Self.badReply(member, "expected a(issuas)") }
        while try message.enter("r", "issuas") {
            let index = try message.readInt32()
            let name = try message.readString()
            let kind = InterfaceKind(rawValue: try message.readString()) ?? .other
            let flags = ReachabilityFlags(rawValue: try message.readUInt32())
            let addresses = try message.readStringArray().compactMap(IPPrefix.init)
            try message.exit()
            interfaces.append(InterfaceStatus(index: index, name: name, kind: kind, flags: flags, addresses: addresses))
        }
        try message.exit()
        return interfaces
    }

    /// The whole picture: one `GetStatus`, which carries the interfaces. From a reachd whose
    /// GetStatus does not, `ListInterfaces` too, both read again when a change slipped in
    /// between them, so the interfaces belong to the generation reported.
    public func snapshot() throws(BusError) -> ReachabilitySnapshot {
        defer { probed = nil }
        if let probed, ContinuousClock.now - probed.at < Self.probeReuse { return probed.snapshot }
        var status = try self.fullStatus()
        var interfaces = status.interfaces ?? []
        if status.interfaces == nil {
            interfaces = try self.interfaces()
            for _ in 0..<3 {
                let after = try self.fullStatus()
                if after.generation == status.generation { break }
                // Changing faster than we can read: after three tries the latest of each is still a true answer.
                status = after
                interfaces = try self.interfaces()
            }
        }
        return Self.snapshot(status, interfaces)
    }

    /// GetStatus as `fullStatus` reads it.
    package typealias FullStatus = (
        host: HostStatus, generation: UInt64, counters: MirrorCounters?, stall: StallEvidence?,
        interfaceFacts: [String: [String: String]], interfaces: [InterfaceStatus]?
    )

    /// One generation's picture: `status` and its `interfaces` with their facts.
    private static func snapshot(_ status: FullStatus, _ interfaces: [InterfaceStatus]) -> ReachabilitySnapshot {
        ReachabilitySnapshot(
            generation: status.generation, host: status.host, interfaces: InterfaceFact.with(status.interfaceFacts, interfaces),
            stallEvidence: status.stall)
    }

    /// `CheckAddress`: at once, from the kernel's routing truth. An invalid address is an answer
    /// with reason `invalidTarget` and reachd's message, as the in-process check gives it.
    public func checkAddress(_ address: String) throws(BusError) -> CheckResult {
        let reply: OwnedBusMessage
        do {
            reply = try call("CheckAddress") { message throws(BusError) in try message.append(address) }
        } catch where error.name == ReachdContract.ErrorName.invalidTarget {
            return CheckResult(target: address, reason: .invalidTarget, message: error.message)
        }
        return try withExtendedLifetime(reply) { () throws(BusError) -> CheckResult in try Self.readAddressCheck(reply.message, address) }
    }

    /// `u flags, s interface, s reason, a{sv} details`: CheckAddress's reply, CheckUnit's first part.
    package static func readAddressCheck(_ message: BusMessage, _ address: String) throws(BusError) -> CheckResult {
        var scope = Explanation.TrafficScope.host
        return try readAddressCheck(message, address, trafficScope: &scope)
    }

    /// The same, with CheckUnit's `TrafficScope` among the details.
    package static func readAddressCheck(
        _ message: BusMessage, _ address: String, trafficScope: inout Explanation.TrafficScope
    ) throws(BusError) -> CheckResult {
        var result = CheckResult(target: address, addresses: Self.addresses(ofTarget: address))
        result.flags = ReachabilityFlags(rawValue: try message.readUInt32())
        result.interface = try message.readString()
        result.reason = Reason(rawValue: try message.readString())
        try Self.readDetails(message, into: &result, trafficScope: &trafficScope)
        return result
    }

    /// The trailing `a{sv}` of the check replies: gateway, source address and message. Unknown
    /// keys are skipped. A reachd from before the details ends its reply at `reason`; entering
    /// a container there fails (ENXIO), so whether one follows is peeked first.
    package static func readDetails(_ message: BusMessage, into result: inout CheckResult) throws(BusError) {
        var scope = Explanation.TrafficScope.host
        try readDetails(message, into: &result, trafficScope: &scope)
    }

    /// The same, with CheckUnit's `TrafficScope` (absent from an older reachd's: the host's).
    package static func readDetails(
        _ message: BusMessage, into result: inout CheckResult, trafficScope: inout Explanation.TrafficScope
    ) throws(BusError) {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(message.pointer, &type, &contents) > 0, type == CChar(UInt8(ascii: "a")),
            let contents, String(cString: contents) == "{sv}"
        else { return }
        guard try message.enter("a", "{sv}") else { return }
        while try message.enter("e", "sv") {
            let key = try message.readString()
            let value = try variant(message, "s") { m throws(BusError) in try m.readString() }
            switch key {
            case "Gateway": result.gateway = value.flatMap(IPAddress.init)
            case "Source": result.source = value.flatMap(IPAddress.init)
            case "Message": result.message = value
            case ReachdContract.trafficScope: trafficScope = value.flatMap(Explanation.TrafficScope.init) ?? .host
            default: break
            }
            try message.exit()
        }
        try message.exit()
    }

    /// `CheckHost`: resolves `host` within `timeout` (clamped to `ReachdContract.maximumCheckTimeout`) and
    /// checks its addresses; an address is checked at once. The call waits `timeout` plus
    /// `checkCallMargin`. An invalid name is an answer with reason `invalidTarget`.
    /// A nil `timeout` asks for reachd's configured default (`timeout_ms` 0). `uid`: as that
    /// Unix user's traffic is routed (`CheckHostAsUser`; only root may name another user);
    /// nil: as this caller's.
    public func checkHost(_ host: String, timeout: Duration? = .seconds(5), asUser uid: UInt32? = nil) throws(BusError) -> CheckResult {
        let bounded = min(max(timeout ?? ReachdContract.maximumCheckTimeout, .milliseconds(1)), ReachdContract.maximumCheckTimeout)
        let milliseconds = timeout == nil ? 0 : UInt32(clamping: max(1, bounded.wholeMilliseconds))
        let reply: OwnedBusMessage
        do {
            reply = try call(uid == nil ? "CheckHost" : "CheckHostAsUser", timeout: bounded + Self.checkCallMargin) { message throws(BusError) in
                try message.append(host)
                try message.append(milliseconds)
                if let uid { try message.append(uid) }
            }
        } catch where error.name == ReachdContract.ErrorName.invalidTarget {
            return CheckResult(target: host, reason: .invalidTarget, message: error.message)
        }
        let message = reply.message
        var result = CheckResult(target: host)
        result.flags = ReachabilityFlags(rawValue: try message.readUInt32())
        result.interface = try message.readString()
        result.addresses = try message.readStringArray().compactMap { IPAddress($0) }
        result.reason = Reason(rawValue: try message.readString())
        try Self.readDetails(message, into: &result)
        return result
    }

    /// An address with `checkAddress`, anything else with `checkHost` (nil `timeout`: reachd's
    /// default). `uid`: as that Unix user's traffic is routed (`CheckHostAsUser`, which takes
    /// addresses too); only root may name another user than its own.
    public func check(_ target: String, timeout: Duration? = .seconds(5), asUser uid: UInt32? = nil) throws(BusError) -> CheckResult {
        if uid == nil, AddressTarget.looksLikeAddress(target) { return try checkAddress(target) }
        return try checkHost(target, timeout: timeout, asUser: uid)
    }

    /// `Validate`: reachd's connectivity probe asked now (or the probe in flight joined); the
    /// reply comes within the probe's `Timeout=`, so the call may take up to the longest one a
    /// configuration can set, plus `checkCallMargin`. `unknown` when the probe is off.
    public func validate() throws(BusError) -> ConnectivityStatus {
        let reply = try call("Validate", timeout: ConnectivitySettings.timeoutRange.upperBound + Self.checkCallMargin)
        let message = reply.message
        let connectivity = try message.readString()
        return ConnectivityStatus(
            verdict: ConnectivityVerdict(rawValue: connectivity) ?? .unknown, portal: try message.readString(), detail: try message.readString())
    }

    /// `Explain`: the layers behind reachd's answer for `target` (an address, or "" for the host),
    /// as this caller's traffic is routed. An invalid target throws reachd's InvalidTarget. Layers
    /// or statuses this client does not know (a newer reachd's) are skipped.
    package func explain(_ target: String) throws(BusError) -> Explanation {
        let reply = try call("Explain") { message throws(BusError) in try message.append(target) }
        return try withExtendedLifetime(reply) { () throws(BusError) -> Explanation in
            // reachd answers as the caller's uid: this process's. `0.0.0.0` and `::` are the host.
            let host = target.isEmpty || (try? AddressTarget.parse(target).get())?.address.isUnspecified == true
            return Explanation(target: host ? "" : target, uid: getuid(), layers: try Self.readLayers(reply.message, "Explain"))
        }
    }

    /// CheckUnit: the answer for `target` (an address, "" for the internet) as the systemd service
    /// `unit`'s traffic would go, judged by its sandbox, and its explanation with the `policy` layer.
    package func checkUnit(_ unit: String, _ target: String) throws(BusError) -> (result: CheckResult, explanation: Explanation) {
        let reply = try call("CheckUnit", timeout: ReachdContract.checkUnitTimeout) { message throws(BusError) in
            try message.append(unit)
            try message.append(target)
        }
        return try withExtendedLifetime(reply) { () throws(BusError) -> (result: CheckResult, explanation: Explanation) in
            var scope = Explanation.TrafficScope.host
            let result = try Self.readAddressCheck(reply.message, target, trafficScope: &scope)
            let layers = try Self.readLayers(reply.message, "CheckUnit")
            var explanation = Explanation(target: target, uid: nil, layers: layers)
            explanation.unit = (try? UnitName.validate(unit).get()) ?? unit
            explanation.trafficScope = scope
            return (result, explanation)
        }
    }

    /// `s broken_layer, a(ssass) layers` of Explain and CheckUnit; unknown layers are skipped.
    package static func readLayers(_ message: BusMessage, _ method: String) throws(BusError) -> [Explanation.Layer] {
        _ = try message.readString()  // the first broken layer: the layers below say it again
        var layers: [Explanation.Layer] = []
        guard try message.enter("a", "(ssass)") else { throw Self.badReply(method, "expected a(ssass)") }
        while try message.enter("r", "ssass") {
            let name = try message.readString()
            let status = try message.readString()
            let evidence = try message.readStringArray()
            let fix = try message.readString()
            try message.exit()
            guard let layer = Explanation.LayerName(rawValue: name), let known = Explanation.Status(rawValue: status) else { continue }
            layers.append(Explanation.Layer(name: layer, status: known, evidence: evidence, fix: fix))
        }
        try message.exit()
        return layers
    }

    /// What an address check evaluates, as the in-process check reports it: the address itself.
    package static func addresses(ofTarget target: String) -> [IPAddress] {
        guard AddressTarget.looksLikeAddress(target), case let .success(parsed) = AddressTarget.parse(target) else { return [] }
        return [parsed.address]
    }
}
