/// Keeping a snapshot from reachd's signals alone (`followSnapshot()`): one read, then each
/// generation's `Updated` applied (`ReachabilitySnapshot.applying(_:)`) with no call per change.
/// reachd sends `Updated` first of each generation's signals, with the values of the host
/// properties that moved, HostChangeDescribed's description, the changed interfaces with their
/// facts and the removed ones: the generation whole, applied on one wake-up. Generations may skip
/// (reachd tells the changes of one loop turn as one, under the turn's last generation), and
/// signals are never lost on a connection that stays up, so a later generation is applied as it
/// comes. From a reachd that sends no `Updated`, the snapshot is read again at the end of each
/// generation (its PropertiesChanged), and the client's events come from the other signals.
extension ReachabilityClient {
    /// Reads the snapshot once and keeps it from the signals from then on; each move arrives as
    /// `Event.change` (subscribes when not yet). Later calls return the snapshot kept, read no more.
    public func followSnapshot() throws(BusError) -> ReachabilitySnapshot {
        try subscribe()
        if let followed { return followed }
        let first = try snapshot()
        followed = first
        return first
    }

    /// A signal of the service object, read where it arrives (inside `process()`): `Updated` and
    /// PropertiesChanged are kept and read when applied; the others, which only a reachd without
    /// `Updated` is listened to for, are read whole at once.
    package static func readServiceSignal(_ message: BusMessage, into inbox: Inbox) {
        switch message.member {
        case "Updated":
            inbox.append(.updated(OwnedBusMessage(retaining: message)))
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
        case "PropertiesChanged":
            guard (try? message.readString()) == ReachdContract.interface else { return }
            inbox.append(.generationEnded)
        default:
            return
        }
    }

    /// `Updated`: its events (what Changed, HostChangeDescribed and InterfacesChanged say), and
    /// the change it makes to the snapshot followed, applied.
    package func apply(updated message: BusMessage, into events: inout [Event]) throws(BusError) {
        let generation = try message.readUInt64()
        guard generation > lastUpdated else { return }
        lastUpdated = generation
        let last = followed
        var host = last?.host ?? HostStatus()
        var nat64: (prefix: String?, router: String?, interface: String?) = (nil, nil, nil)
        guard try message.enter("a", "{sv}") else { throw Self.badReply("Updated", "expected a{sv}") }
        while try message.enter("e", "sv") {
            let key = try message.readString()
            if try !HostProperty.readEntry(key, message, into: &host) {
                let text = try Self.variant(message, "s") { m throws(BusError) in try m.readString() }
                switch key {
                case "Nat64Prefix": nat64.prefix = text
                case ReachdContract.Nat64Entry.router: nat64.router = text
                case ReachdContract.Nat64Entry.interface: nat64.interface = text
                default: break
                }
            }
            try message.exit()
        }
        try message.exit()
        let described = try Self.readHostChange(message)?.0
        let changed = try Self.readInterfaces(message, "Updated")
        let removed = try message.readStringArray()
        let facts = try InterfaceFact.read(message)
        if let described {
            events.append(.changed(flags: host.flags, primaryInterface: host.primaryInterface, generation: generation))
            events.append(.hostChangeDescribed(described, generation: generation))
        }
        if !changed.isEmpty || !removed.isEmpty { events.append(.interfacesChanged(generation: generation)) }
        // A generation a read already covered brings nothing new.
        guard let last, generation > last.generation else { return }
        let moved = nat64.router != nil || nat64.interface != nil
        host.nat64Prefix = Self.nat64(nat64.prefix, moved ? (nat64.router, nat64.interface) : nil, last: last.host.nat64Prefix)
        let byName = Dictionary(last.interfaces.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let change = ReachabilityChange(
            generation: generation, host: host, hostChanged: described != nil,
            changedInterfaces: InterfaceFact.with(facts, changed), removedInterfaces: removed.compactMap { byName[$0] },
            hostChange: described)
        followed = last.applying(change)
        events.append(.change(change))
    }

    /// reachd sends `Updated`: the service object's other signals say nothing more, so the bus
    /// is asked for `Updated` alone (one message per change instead of up to six). Without a
    /// reply to wait for; until the broad match is gone, an `Updated` may come twice.
    package func narrowToUpdates() {
        sendsUpdates = true
        guard let owner else { return }
        let inbox = self.inbox
        let rule = "type='signal',sender='\(owner)',path='\(ReachdContract.objectPath)',interface='\(ReachdContract.interface)',member='Updated'"
        guard let narrow = try? connection.match(rule, { message in Self.readServiceSignal(message, into: inbox) }) else { return }
        serviceSlot = narrow
    }

    /// A part of a generation from a reachd that sends no `Updated`: its event as it stands, and
    /// at the generation's end (its PropertiesChanged) the snapshot followed read again.
    package func record(_ part: RawEvent, into events: inout [Event]) throws(BusError) {
        switch part {
        case let .event(event):
            events.append(event)
            if case let .hostChangeDescribed(description, _) = event { described.append(description) }
        case let .interfaces(_, _, generation):
            events.append(.interfacesChanged(generation: generation))
        case .generationEnded:
            guard followed != nil else { return }
            let told = described
            described = []
            if let change = try reread(described: told) { events.append(.change(change)) }
        default:
            return
        }
    }

    /// The NAT64 prefix after a generation: `prefix` when `Updated` named one, with its router
    /// and link (or the last ones when it sent none: they did not move).
    package static func nat64(_ prefix: String?, _ facts: (router: String?, interface: String?)?, last: Nat64Prefix?) -> Nat64Prefix? {
        // "" is no prefix; a prefix not named did not move.
        guard let prefix = prefix.map(IPPrefix.init) ?? last?.prefix,
            let router = facts.map({ $0.router.flatMap(IPAddress.init) }) ?? last?.router
        else { return nil }
        return Nat64Prefix(prefix: prefix, router: router, interfaceName: facts.map { $0.interface ?? "" } ?? last?.interfaceName ?? "")
    }

    /// The snapshot read once more, when the signals do not link it to the last (a gap, reachd
    /// back after a restart): what differs from the last, with what reachd `described` of it.
    /// Nil when nothing a follower sees moved.
    package func reread(described: [HostChange] = []) throws(BusError) -> ReachabilityChange? {
        guard let last = followed else { return nil }
        let fresh = try snapshot()
        followed = fresh
        let change = ReachabilityChange(from: last, to: fresh, described: described)
        return change.isEmpty ? nil : change
    }

    /// reachd is back (its generation counts from its start): the snapshot followed is read anew,
    /// and what differs from the last is the change.
    package func rereadAfterReturn(into events: inout [Event]) throws(BusError) {
        described = []
        if let change = try reread() { events.append(.change(change)) }
    }
}
