import Reachability

/// `Updated` and `FactsChanged`: what a client needs to keep its snapshot without a call per
/// change (`ReachdContract.serviceMembers`).
extension Publisher {
    /// `Updated`: the generation whole, first of its signals. `moved`: the host properties whose
    /// values moved since the last generation told.
    func emitUpdated(_ change: ReachabilityChange, moved: [String], previous: HostStatus?) {
        let always = change.hostChanged ? HostProperty.changedSignalNames : []
        let names = always + moved.filter { !always.contains($0) }
        emit("Updated") { message throws(BusError) in
            try message.append(change.generation)
            try message.open("a", "{sv}")
            try HostProperty.appendEntries(names, of: change.host, to: message)
            if previous?.nat64Prefix != change.host.nat64Prefix { try Self.appendNat64(change.host, to: message) }
            try message.close()
            if change.hostChanged {
                try Self.append(change.hostChange ?? HostChange(changed: [], rebind: false), of: change, to: message)
            } else {
                try message.open("a", "{sv}")
                try message.close()
            }
            try ReachabilityService.appendInterfaces(message, change.changedInterfaces)
            try message.append(change.removedInterfaces.map(\.name))
            try InterfaceFact.append(Self.withFacts(change.changedInterfaces), to: message)
        }
    }

    /// The NAT64 prefix's router and link, as entries (none without a prefix).
    private static func appendNat64(_ host: HostStatus, to message: BusMessage) throws(BusError) {
        guard let nat64 = host.nat64Prefix else { return }
        try message.appendEntry(ReachdContract.Nat64Entry.router, "s") { m throws(BusError) in try m.append(nat64.router.description) }
        try message.appendEntry(ReachdContract.Nat64Entry.interface, "s") { m throws(BusError) in try m.append(nat64.interfaceName) }
    }

    /// The interfaces that have facts beyond InterfacesChanged's struct.
    private static func withFacts(_ interfaces: [InterfaceStatus]) -> [InterfaceStatus] {
        interfaces.filter { status in InterfaceFact.all.contains { $0.value(status) != nil } }
    }

    /// Sent before PropertiesChanged (which ends each generation's signals for a client), and
    /// only when it carries something: a changed interface with facts beyond InterfacesChanged's
    /// struct, or a NAT64 prefix other than `previous`'s (its router and link are in no property).
    func emitFacts(of change: ReachabilityChange, previous: HostStatus?) {
        let interfaces = Self.withFacts(change.changedInterfaces)
        let nat64Moved = previous?.nat64Prefix != change.host.nat64Prefix
        guard !interfaces.isEmpty || nat64Moved else { return }
        emit("FactsChanged") { message throws(BusError) in
            try InterfaceFact.append(interfaces, to: message)
            try message.open("a", "{sv}")
            try Self.appendNat64(change.host, to: message)
            try message.close()
            try message.append(change.generation)
        }
    }
}
