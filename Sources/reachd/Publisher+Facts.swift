import Reachability

/// `FactsChanged`: what a client needs beside the other signals to keep its snapshot without a
/// call per change (`ReachdContract.serviceMembers`).
extension Publisher {
    /// Sent before PropertiesChanged (which ends each generation's signals for a client), and
    /// only when it carries something: a changed interface with facts beyond InterfacesChanged's
    /// struct, or a NAT64 prefix other than `previous`'s (its router and link are in no property).
    func emitFacts(of change: ReachabilityChange, previous: HostStatus?) {
        let interfaces = change.changedInterfaces.filter { status in InterfaceFact.all.contains { $0.value(status) != nil } }
        let nat64Moved = previous?.nat64Prefix != change.host.nat64Prefix
        guard !interfaces.isEmpty || nat64Moved else { return }
        emit("FactsChanged") { message throws(BusError) in
            try InterfaceFact.append(interfaces, to: message)
            try message.open("a", "{sv}")
            if let nat64 = change.host.nat64Prefix {
                try message.appendEntry(ReachdContract.Nat64Entry.router, "s") { m throws(BusError) in try m.append(nat64.router.description) }
                try message.appendEntry(ReachdContract.Nat64Entry.interface, "s") { m throws(BusError) in try m.append(nat64.interfaceName) }
            }
            try message.close()
            try message.append(change.generation)
        }
    }
}
