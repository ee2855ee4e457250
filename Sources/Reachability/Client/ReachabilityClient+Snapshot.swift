/// Keeping a snapshot from reachd's signals alone (`followSnapshot()`): one read, then each
/// generation's signals applied (`ReachabilitySnapshot.applying(_:)`) with no call per change.
/// A generation's signals come in reachd's order, Changed, HostChangeDescribed,
/// InterfacesChanged and FactsChanged when there is something to say, and always
/// PropertiesChanged of the service object last, with the values of the host properties that
/// moved and Generation: that one completes the change. Generations may skip (reachd tells the
/// changes of one loop turn as one, under the turn's last generation), and signals are never lost
/// on a connection that stays up, so a later generation is applied as it comes. Anything else
/// (the parts of two generations mixed, a property invalidated without its value, a reachd that
/// sends no FactsChanged) is answered with one snapshot read, diffed against the last.
extension ReachabilityClient {
    /// One generation's signals so far, until its PropertiesChanged.
    struct SignalledChange {
        /// The generation the parts named; `mixed` when two differed.
        var generation: UInt64?
        var mixed = false
        var hostChanged = false
        var description: HostChange?
        /// InterfacesChanged's interfaces, their facts not yet applied.
        var changed: [InterfaceStatus] = []
        var removed: [String] = []
        /// FactsChanged's, by interface then fact name.
        var facts: [String: [String: String]] = [:]
        /// FactsChanged's NAT64 router and link, when it named the host's.
        var nat64: (router: String?, interface: String?)?

        mutating func note(_ generation: UInt64) {
            if let known = self.generation, known != generation { mixed = true }
            self.generation = max(self.generation ?? 0, generation)
        }
    }

    /// Reads the snapshot once and keeps it from the signals from then on; each move arrives as
    /// `Event.change` (subscribes when not yet). Later calls return the snapshot kept, read no more.
    public func followSnapshot() throws(BusError) -> ReachabilitySnapshot {
        try subscribe()
        if let followed { return followed }
        let first = try snapshot()
        followed = first
        return first
    }

    /// A signal of the service object, read where it arrives (inside `process()`): every part
    /// but PropertiesChanged is read whole at once; that one is kept and read when applied.
    static func readServiceSignal(_ message: BusMessage, into inbox: Inbox) {
        switch message.member {
        case "Changed":
            guard let flags = try? message.readUInt32(), let primary = try? message.readString(), let generation = try? message.readUInt64()
            else { return }
            inbox.append(.event(.changed(flags: ReachabilityFlags(rawValue: flags), primaryInterface: primary, generation: generation)))
        case "HostChangeDescribed":
            guard let (description, generation) = try? readHostChange(message) else { return }
            inbox.append(.event(.hostChangeDescribed(description, generation: generation)))
        case "InterfacesChanged":
            guard let changed = try? readInterfaces(message, "InterfacesChanged"), let removed = try? message.readStringArray(),
                let generation = try? message.readUInt64()
            else { return }
            inbox.append(.interfaces(changed: changed, removed: removed, generation: generation))
        case "FactsChanged":
            guard let facts = try? readFacts(message) else { return }
            inbox.append(facts)
        case "PropertiesChanged":
            guard (try? message.readString()) == ReachdContract.interface else { return }
            inbox.append(.hostProperties(OwnedBusMessage(retaining: message)))
        default:
            return
        }
    }

    /// FactsChanged's arguments as the inbox keeps them.
    private static func readFacts(_ message: BusMessage) throws(BusError) -> RawEvent {
        let interfaces = try InterfaceFact.read(message)
        var nat64: (router: String?, interface: String?)?
        guard try message.enter("a", "{sv}") else { throw badReply("FactsChanged", "expected a{sv}") }
        while try message.enter("e", "sv") {
            switch try message.readString() {
            case ReachdContract.Nat64Entry.router: nat64 = (try variant(message, "s") { m throws(BusError) in try m.readString() }, nat64?.interface)
            case ReachdContract.Nat64Entry.interface: nat64 = (nat64?.router, try variant(message, "s") { m throws(BusError) in try m.readString() })
            default: try message.skip("v")
            }
            try message.exit()
        }
        try message.exit()
        return .facts(interfaces: interfaces, nat64: nat64, generation: try message.readUInt64())
    }

    /// Takes a part of the generation in flight (nothing when no snapshot is followed). From a
    /// reachd that sends no FactsChanged, the snapshot is read at the part instead, as clients
    /// did before it (its PropertiesChanged may not follow every change).
    func record(_ part: RawEvent, into events: inout [Event]) throws(BusError) {
        guard let last = followed else { return }
        switch part {
        case let .event(.changed(_, _, generation)):
            signalled.note(generation)
            signalled.hostChanged = true
        case let .event(.hostChangeDescribed(description, generation)):
            signalled.note(generation)
            signalled.description = description
        case let .interfaces(changed, removed, generation):
            signalled.note(generation)
            signalled.changed = changed
            signalled.removed = removed
        case let .facts(interfaces, nat64, generation):
            signalled.note(generation)
            signalled.facts = interfaces
            signalled.nat64 = nat64
        default:
            return
        }
        // Changed's description follows at once: read after it, so that the change carries it.
        if case .event(.changed) = part { return }
        if !sendsFacts, let generation = signalled.generation, generation > last.generation {
            let described = signalled.description.map { [$0] } ?? []
            signalled = SignalledChange()
            if let change = try reread(described: described) { events.append(.change(change)) }
        }
    }

    /// The generation's PropertiesChanged: the change it completes, applied to the snapshot
    /// followed; nil when it brings nothing new (a generation already read).
    func complete(_ properties: BusMessage) throws(BusError) -> ReachabilityChange? {
        guard let last = followed else { return nil }
        let parts = signalled
        signalled = SignalledChange()
        var host = last.host
        var generation: UInt64?
        var nat64Prefix: String?
        guard try properties.enter("a", "{sv}") else { throw Self.badReply("PropertiesChanged", "expected a{sv}") }
        while try properties.enter("e", "sv") {
            let key = try properties.readString()
            if try !HostProperty.readEntry(key, properties, into: &host) {
                switch key {
                case HostProperty.generation: generation = try Self.variant(properties, "t") { m throws(BusError) in try m.readUInt64() }
                case "Nat64Prefix": nat64Prefix = try Self.variant(properties, "s") { m throws(BusError) in try m.readString() }
                default: try properties.skip("v")
                }
            }
            try properties.exit()
        }
        try properties.exit()
        let invalidated = try properties.readStringArray()
        // Signals of generations a read already covered: nothing new.
        guard max(generation ?? 0, parts.generation ?? 0) > last.generation else { return nil }
        guard let generation, sendsFacts, generation > last.generation, !parts.mixed, parts.generation ?? generation == generation, invalidated.isEmpty
        else { return try reread(described: parts.description.map { [$0] } ?? []) }
        host.nat64Prefix = Self.nat64(nat64Prefix, parts.nat64, last: last.host.nat64Prefix)
        let byName = Dictionary(last.interfaces.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let change = ReachabilityChange(
            generation: generation, host: host, hostChanged: parts.hostChanged,
            changedInterfaces: InterfaceFact.with(parts.facts, parts.changed), removedInterfaces: parts.removed.compactMap { byName[$0] },
            hostChange: parts.description)
        followed = last.applying(change)
        return change
    }

    /// The NAT64 prefix after a generation: PropertiesChanged's `prefix` when it named one, with
    /// FactsChanged's router and link (or the last ones when it sent none: they did not move).
    static func nat64(_ prefix: String?, _ facts: (router: String?, interface: String?)?, last: Nat64Prefix?) -> Nat64Prefix? {
        // "" is no prefix; a prefix not named did not move.
        guard let prefix = prefix.map(IPPrefix.init) ?? last?.prefix,
            let router = facts.map({ $0.router.flatMap(IPAddress.init) }) ?? last?.router
        else { return nil }
        return Nat64Prefix(prefix: prefix, router: router, interfaceName: facts.map { $0.interface ?? "" } ?? last?.interfaceName ?? "")
    }

    /// The snapshot read once more, when the signals do not link it to the last (a gap, reachd
    /// back after a restart): what differs from the last, with what reachd `described` of it.
    /// Nil when nothing a follower sees moved.
    func reread(described: [HostChange] = []) throws(BusError) -> ReachabilityChange? {
        guard let last = followed else { return nil }
        let fresh = try snapshot()
        followed = fresh
        let change = ReachabilityChange(from: last, to: fresh, described: described)
        return change.isEmpty ? nil : change
    }

    /// reachd is back (its generation counts from its start): the snapshot followed is read anew,
    /// and what differs from the last is the change.
    func rereadAfterReturn(into events: inout [Event]) throws(BusError) {
        signalled = SignalledChange()
        if let change = try reread() { events.append(.change(change)) }
    }
}
