import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// sd-bus answers Properties calls itself, and quotes a caller's interface or property name
/// whole in its errors. So a filter takes Properties calls to the objects served here before
/// sd-bus's own dispatch, reads their names within bounds (255 bytes, as D-Bus names are) and
/// answers them from the same vtables, with sd-bus's error names and an excerpt of a bad name
/// (every property of reachd's is read-only, as Set says). A call too large to be read never
/// reaches it (`CallSizeBound`).
package final class PropertyCalls {
    /// The objects served, by path: whose properties Properties calls read.
    private var served: [String: [BusRegistration]] = [:]
    private var propertiesFilter: BusSlot?

    package func serve(_ registration: BusRegistration) { served[registration.path, default: []].append(registration) }

    package func forget(_ registration: BusRegistration) {
        served[registration.path]?.removeAll { $0 === registration }
        if served[registration.path]?.isEmpty == true { served[registration.path] = nil }
    }

    /// Takes Properties calls to served paths from `connection` before sd-bus dispatches them.
    package func takeProperties(of connection: BusConnection) throws(BusError) {
        var slot: OpaquePointer?
        let result = sd_bus_add_filter(connection.bus, &slot, propertiesFilterTrampoline, Unmanaged.passUnretained(self).toOpaque())
        guard result >= 0 else { throw BusError("take Properties calls", code: result) }
        propertiesFilter = BusSlot(slot)
    }

    /// Whether the filter takes `call`: a Properties call to a path served here.
    package func takesProperties(_ call: OpaquePointer) -> Bool {
        guard sd_bus_message_is_method_call(call, Self.properties, nil) > 0,
            let path = sd_bus_message_get_path(call)
        else { return false }
        return served[String(cString: path)] != nil
    }

    package static let properties = "org.freedesktop.DBus.Properties"

    package func answerProperties(_ call: BusMessage) {
        do throws(BusError) {
            let objects = served[call.path ?? ""] ?? []
            switch call.member ?? "" {
            case "Get":
                let (interface, name) = (try Self.readName(call, "interface"), try Self.readName(call, "property"))
                guard let object = objects.first(where: { $0.interface == interface }),
                    let signature = object.vtable.properties.first(where: { $0.name == name })?.signature
                else { throw Self.unknownProperty(interface, name) }
                try sendReply(answering: call.pointer) { reply throws(BusError) in
                    try reply.open("v", signature)
                    try object.object.property(name, into: reply)
                    try reply.close()
                }
            case "GetAll":
                let interface = try Self.readName(call, "interface")
                let chosen = objects.filter { interface.isEmpty || $0.interface == interface }
                guard !chosen.isEmpty else {
                    throw BusError(name: "org.freedesktop.DBus.Error.UnknownInterface", message: "Unknown interface \(interface.inertExcerpt()).")
                }
                try sendReply(answering: call.pointer) { reply throws(BusError) in
                    try reply.open("a", "{sv}")
                    for object in chosen {
                        for (name, signature) in object.vtable.properties {
                            try reply.appendEntry(name, signature) { value throws(BusError) in try object.object.property(name, into: value) }
                        }
                    }
                    try reply.close()
                }
            case "Set":
                let (interface, name) = (try Self.readName(call, "interface"), try Self.readName(call, "property"))
                guard objects.contains(where: { $0.interface == interface && $0.vtable.properties.contains { $0.name == name } }) else {
                    throw Self.unknownProperty(interface, name)
                }
                throw BusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "Property \(name.inertExcerpt()) is not writable.")
            case let member:
                throw BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "Unknown method '\(member)' or interface '\(Self.properties)'.")
            }
        } catch {
            sendError(error, answering: call.pointer)
        }
    }

    private static func unknownProperty(_ interface: String, _ name: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "Unknown interface \(interface.inertExcerpt()) or property \(name.inertExcerpt()).")
    }

    /// An interface or property name: 255 bytes at most, as D-Bus names are.
    private static func readName(_ call: BusMessage, _ argument: String) throws(BusError) -> String {
        try call.readString(argument, maximumBytes: 255)
    }
}

/// sd-bus's filter: Properties calls to served paths are answered here (1: taken), the rest go
/// on to sd-bus's own dispatch (0).
private let propertiesFilterTrampoline: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    let calls = Unmanaged<PropertyCalls>.fromOpaque(context).takeUnretainedValue()
    guard calls.takesProperties(message) else { return 0 }
    calls.answerProperties(BusMessage(message))
    return 1
}
