/// The facts of an interface beyond ListInterfaces' and InterfacesChanged's fixed struct
/// `(issuas)`, which existing clients read as it is: one row each, with how reachd writes it and
/// how `ReachabilityClient` reads it back. GetStatus's `InterfaceFacts` and `FactsChanged`'s
/// interfaces are `a{sa{sv}}` (interface name -> fact name -> value) from these rows, so a new
/// per-interface fact is one row here, not a new side table and a new reader.
package struct InterfaceFact: Sendable {
    public let name: StaticString
    public let signature: StaticString
    /// The value to send; nil when the interface has none (the entry is left out, and a reader
    /// keeps the fact's default).
    package let value: @Sendable (InterfaceStatus) -> String?
    /// Sets the fact from a value sent ("" when none was: the default).
    package let set: @Sendable (inout InterfaceStatus, String) -> Void

    /// The rows. Every fact is a string today; a fact of another type would carry its own
    /// signature and value closures.
    public static let all: [InterfaceFact] = [
        InterfaceFact(
            name: "ExpensiveReason", signature: "s", value: { $0.expensiveReason?.rawValue },
            set: { $0.expensiveReason = ExpensiveReason(rawValue: $1) }),
        InterfaceFact(name: "NetworkID", signature: "s", value: { $0.networkID.isEmpty ? nil : $0.networkID }, set: { $0.networkID = $1 }),
        InterfaceFact(name: "Portal", signature: "s", value: { $0.portal.isEmpty ? nil : $0.portal }, set: { $0.portal = $1 }),
        InterfaceFact(
            name: "PortalSource", signature: "s", value: { $0.portalSource?.rawValue }, set: { $0.portalSource = PortalSource(rawValue: $1) }),
    ]

    /// Appends `a{sa{sv}}`: each of `interfaces` that has a fact, with its facts.
    public static func append(_ interfaces: [InterfaceStatus], to message: BusMessage) throws(BusError) {
        try message.open("a", "{sa{sv}}")
        for interface in interfaces {
            let facts = all.compactMap { row in row.value(interface).map { ("\(row.name)", $0) } }
            guard !facts.isEmpty else { continue }
            try message.open("e", "sa{sv}")
            try message.append(interface.name)
            try message.open("a", "{sv}")
            for (name, value) in facts { try message.appendEntry(name, "s") { m throws(BusError) in try m.append(value) } }
            try message.close()
            try message.close()
        }
        try message.close()
    }

    /// Reads `a{sa{sv}}` (the container must be next): each interface's facts, as the values to
    /// set by fact name. Unknown facts, and values of another type than the row's, are skipped.
    package static func read(_ message: BusMessage) throws(BusError) -> [String: [String: String]] {
        var facts: [String: [String: String]] = [:]
        guard try message.enter("a", "{sa{sv}}") else { throw ReachabilityClient.badReply("InterfaceFacts", "expected a{sa{sv}}") }
        while try message.enter("e", "sa{sv}") {
            let interface = try message.readString()
            var values: [String: String] = [:]
            guard try message.enter("a", "{sv}") else { throw ReachabilityClient.badReply("InterfaceFacts", "expected a{sv}") }
            while try message.enter("e", "sv") {
                let name = try message.readString()
                if all.contains(where: { "\($0.name)" == name }) {
                    values[name] = try ReachabilityClient.variant(message, "s") { m throws(BusError) in try m.readString() }
                } else {
                    try message.skip("v")
                }
                try message.exit()
            }
            try message.exit()
            try message.exit()
            facts[interface] = values
        }
        try message.exit()
        return facts
    }

    /// `interfaces` with the facts sent for them by name: each row set from its value, or to its
    /// default when none was sent (the fact went away).
    package static func with(_ facts: [String: [String: String]], _ interfaces: [InterfaceStatus]) -> [InterfaceStatus] {
        interfaces.map { status in
            var status = status
            let values = facts[status.name] ?? [:]
            for row in all { row.set(&status, values["\(row.name)"] ?? "") }
            return status
        }
    }
}
