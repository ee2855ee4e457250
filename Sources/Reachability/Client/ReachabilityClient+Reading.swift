import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// Reading what reachd sends: a watch's properties, a host change's description, variants of
/// the types the contract gives.
extension ReachabilityClient {
    /// The watch properties we understand, from an a{sv}; other keys and types are skipped.
    package struct WatchProperties: Hashable, Sendable {
        package var flags: UInt32?
        package var interface: String?
        package var reason: String?
    }

    package static func readProperties(_ message: BusMessage) throws(BusError) -> WatchProperties {
        var properties = WatchProperties()
        guard try message.enter("a", "{sv}") else { throw badReply("GetAll", "expected a{sv}") }
        while try message.enter("e", "sv") {
            switch try message.readString() {
            case "Flags": properties.flags = try variant(message, "u") { m throws(BusError) in try m.readUInt32() }
            case "Interface": properties.interface = try variant(message, "s") { m throws(BusError) in try m.readString() }
            case "Reason": properties.reason = try variant(message, "s") { m throws(BusError) in try m.readString() }
            default: try message.skip("v")
            }
            try message.exit()
        }
        try message.exit()
        return properties
    }

    package static func readPropertiesChanged(_ message: BusMessage) throws(BusError) -> (changed: WatchProperties, invalidated: [String]) {
        guard try message.readString() == ReachdContract.watchInterface else { return (WatchProperties(), []) }
        let changed = try readProperties(message)
        let invalidated = try message.readStringArray()
        let known: Set<String> = ["Flags", "Interface", "Reason"]
        return (changed, invalidated.filter(known.contains))
    }

    package static func apply(_ properties: WatchProperties, to result: inout CheckResult) {
        if let flags = properties.flags { result.flags = ReachabilityFlags(rawValue: flags) }
        if let interface = properties.interface { result.interface = interface }
        if let reason = properties.reason { result.reason = Reason(rawValue: reason) }
    }

    /// `HostChangeDescribed`'s `a{sv}`. Entries it does not know, or of another type, are
    /// skipped; a word of `changed` it does not know is left out (a newer reachd's aspect).
    package static func readHostChange(_ message: BusMessage) throws(BusError) -> (HostChange, generation: UInt64)? {
        typealias Entry = ReachdContract.HostChangeEntry
        var generation: UInt64?
        var changed: [HostChange.Aspect] = []
        var rebind = false
        var source: IPAddress?
        var previous: IPAddress?
        guard try message.enter("a", "{sv}") else { return nil }
        while try message.enter("e", "sv") {
            switch try message.readString() {
            case Entry.generation: generation = try variant(message, "t") { m throws(BusError) in try m.readUInt64() }
            case Entry.changed:
                changed = (try variant(message, "as") { m throws(BusError) in try m.readStringArray() } ?? []).compactMap(HostChange.Aspect.init)
            case Entry.rebind: rebind = try variant(message, "b") { m throws(BusError) in try m.readBool() } ?? false
            case Entry.sourceAddress: source = try variant(message, "s") { m throws(BusError) in try m.readString() }.flatMap(IPAddress.init)
            case Entry.previousSourceAddress:
                previous = try variant(message, "s") { m throws(BusError) in try m.readString() }.flatMap(IPAddress.init)
            default: try message.skip("v")
            }
            try message.exit()
        }
        try message.exit()
        guard let generation else { return nil }
        return (HostChange(changed: changed, rebind: rebind, sourceAddress: source, previousSourceAddress: previous), generation)
    }

    /// Reads a variant when it holds `signature`; skips it (nil) when it holds anything else.
    package static func variant<T>(
        _ message: BusMessage, _ signature: String, _ read: (BusMessage) throws(BusError) -> T
    ) throws(BusError) -> T? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let peeked = sd_bus_message_peek_type(message.pointer, &type, &contents)
        guard peeked > 0, type == CChar(UInt8(ascii: "v")), let contents, String(cString: contents) == signature else {
            try message.skip("v")
            return nil
        }
        guard try message.enter("v", signature) else { return nil }
        let value = try read(message)
        try message.exit()
        return value
    }

    package static func badReply(_ member: String, _ what: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.InvalidSignature", message: "\(member) reply: \(what)")
    }
}
