import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// How a method call is answered.
package enum BusReply {
    /// Reply now with the arguments `build` appends.
    case now((BusMessage) throws(BusError) -> Void)
    /// The object keeps the call (`OwnedBusMessage(retaining:)`) and replies later.
    case later
}

/// An object served on the bus. The vtable names its members; calls and property reads arrive
/// here by name. Errors thrown become D-Bus error replies with their name and message.
package protocol BusObject: AnyObject {
    func call(_ method: String, _ message: BusMessage) throws(BusError) -> BusReply
    func property(_ name: String, into reply: BusMessage) throws(BusError)
}

extension BusObject {
    /// An object with properties only: every call is an unknown method.
    public func call(_ method: String, _ message: BusMessage) throws(BusError) -> BusReply {
        throw BusError.unknownMethod(method)
    }
}

/// The members of an interface, as sd-bus wants them. Names and signatures are `StaticString`s:
/// sd-bus keeps their pointers for as long as the object is served, and static strings never move.
package final class BusVTable: @unchecked Sendable {  // immutable after init
    public enum Member: Sendable {
        /// `names`: argument names each followed by "\0", inputs then outputs.
        case method(StaticString, signature: StaticString, result: StaticString, names: StaticString)
        case property(StaticString, signature: StaticString, emitsChange: Bool)
        case signal(StaticString, signature: StaticString, names: StaticString)
    }

    package let entries: UnsafeMutableBufferPointer<sd_bus_vtable>
    /// The properties that emit PropertiesChanged, in order: what an announcement of every
    /// value sends (a property added to the table is announced with the others).
    public let changingProperties: [String]
    /// Every property's name and signature, in order: what Properties.GetAll answers.
    package let properties: [(name: String, signature: String)]

    public init(_ members: [Member]) {
        changingProperties = members.compactMap { member in
            guard case let .property(name, _, emitsChange) = member, emitsChange else { return nil }
            return "\(name)"
        }
        properties = members.compactMap { member in
            guard case let .property(name, signature, _) = member else { return nil }
            return ("\(name)", "\(signature)")
        }
        entries = .allocate(capacity: members.count + 2)
        var index = 0
        func add(_ entry: sd_bus_vtable) {
            entries[index] = entry
            index += 1
        }
        add(csystemd_vtable_start(0))
        for member in members {
            switch member {
            case let .method(name, signature, result, names):
                add(csystemd_vtable_method(
                    Self.c(name), Self.c(signature), Self.c(result), Self.c(names), methodTrampoline,
                    csystemd_vtable_unprivileged()))
            case let .property(name, signature, emitsChange):
                add(csystemd_vtable_property(
                    Self.c(name), Self.c(signature), propertyTrampoline,
                    emitsChange ? csystemd_vtable_emits_change() : csystemd_vtable_const()))
            case let .signal(name, signature, names):
                add(csystemd_vtable_signal(Self.c(name), Self.c(signature), Self.c(names), 0))
            }
        }
        add(csystemd_vtable_end())
    }

    deinit { entries.deallocate() }

    private static func c(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

/// What sd-bus's userdata points at: the object and the vtable memory it was registered with.
package final class BusRegistration {
    /// Read on every call and property get, so without reference counting. Valid while the
    /// slot lives: either `retained` holds the object, or the object holds the slot (and the
    /// slot, unregistered when the object goes, never calls it afterwards).
    package unowned(unsafe) let object: any BusObject
    /// The object, when the slot is its only owner; nil when the object owns its slot (a
    /// strong reference then would be a cycle that no owner releasing it could break).
    private let retained: (any BusObject)?
    package let vtable: BusVTable
    package let path: String
    package let interface: String
    /// Where its Properties calls are answered.
    package let properties: PropertyCalls

    package init(object: any BusObject, vtable: BusVTable, path: String, interface: String, retaining: Bool, properties: PropertyCalls) {
        self.object = object
        retained = retaining ? object : nil
        self.vtable = vtable
        self.path = path
        self.interface = interface
        self.properties = properties
    }

    /// Its slot is released: no Properties call finds the object any more.
    package func release() { properties.forget(self) }

    /// Runs `call` on the object and sends what it answers now, if anything; an error is left
    /// in `replyError` for sd-bus to send.
    package func answer(_ call: BusMessage, replyError: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        do throws(BusError) {
            switch try object.call(call.member ?? "", call) {
            case let .now(build):
                var reply: OpaquePointer?
                var result = sd_bus_message_new_method_return(call.pointer, &reply)
                guard result >= 0, let reply else { return result }
                defer { sd_bus_message_unref(reply) }
                try build(BusMessage(reply))
                result = sd_bus_send(sd_bus_message_get_bus(call.pointer), reply, nil)
                return result < 0 ? result : 1
            case .later:
                return 1
            }
        } catch {
            // sd-bus sends the error reply and maps the name to an errno for us.
            return sd_bus_error_set(replyError, error.name, error.message.escapingControlCharacters())
        }
    }

}

package let methodTrampoline: sd_bus_message_handler_t = { message, context, replyError in
    guard let message, let context else { return -EINVAL }
    let registration = Unmanaged<BusRegistration>.fromOpaque(context).takeUnretainedValue()
    return registration.answer(BusMessage(message), replyError: replyError)
}

/// Sends a method return for `call`, with arguments appended by `build`, on the call's bus.
package func sendReply(answering call: OpaquePointer, _ build: (BusMessage) throws(BusError) -> Void) throws(BusError) {
    var reply: OpaquePointer?
    var result = sd_bus_message_new_method_return(call, &reply)
    guard result >= 0, let reply else { throw BusError("create a reply", code: result) }
    defer { sd_bus_message_unref(reply) }
    try build(BusMessage(reply))
    result = sd_bus_send(nil, reply, nil)
    guard result >= 0 else { throw BusError("send a reply", code: result) }
}

/// Sends `error` as the answer to `call`.
package func sendError(_ error: BusError, answering call: OpaquePointer) {
    var value = csystemd_error_null()
    sd_bus_error_set(&value, error.name, error.message.escapingControlCharacters())
    sd_bus_reply_method_error(call, &value)
    sd_bus_error_free(&value)
}

package let propertyTrampoline: sd_bus_property_get_t = { _, _, _, property, reply, context, error in
    guard let property, let reply, let context else { return -EINVAL }
    let registration = Unmanaged<BusRegistration>.fromOpaque(context).takeUnretainedValue()
    do throws(BusError) {
        try registration.object.property(String(cString: property), into: BusMessage(reply))
        return 1
    } catch let failure {
        return sd_bus_error_set(error, failure.name, failure.message.escapingControlCharacters())
    }
}
