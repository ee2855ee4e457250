import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// A D-Bus error: its name (`org.freedesktop.DBus.Error.ServiceUnknown`, ...) and message.
public struct BusError: Error, Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// The standard answer to a call of a method the object does not have.
    public static func unknownMethod(_ name: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(name)")
    }

    /// The standard answer to a Get of a property the interface does not have.
    public static func unknownProperty(_ name: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name)")
    }

    /// From a negative errno returned by an sd-bus call.
    package init(_ operation: String, code: Int32) {
        name = "System.Error.\(-code)"
        message = "\(operation): \(String(cString: strerror(-code)))"
    }

    /// Moves the contents of an sd_bus_error (and frees it).
    package init(consuming error: inout sd_bus_error, operation: String, code: Int32) {
        defer { sd_bus_error_free(&error) }
        if let namePointer = error.name {
            self.init(name: String(cString: namePointer), message: error.message.map { String(cString: $0) } ?? operation)
        } else {
            self.init(operation, code: code)
        }
    }

    public var description: String { "\(message) (\(name))" }
}

/// A borrowed or owned sd_bus_message with typed reads and appends. Reads fail with a BusError
/// naming what was expected, so a caller with the wrong signature gets a clear answer.
package struct BusMessage {
    public let pointer: OpaquePointer

    public init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    public var sender: String? { sd_bus_message_get_sender(pointer).map { String(cString: $0) } }
    public var member: String? { sd_bus_message_get_member(pointer).map { String(cString: $0) } }
    public var path: String? { sd_bus_message_get_path(pointer).map { String(cString: $0) } }

    // MARK: reading

    public func readString() throws(BusError) -> String {
        var value: UnsafePointer<CChar>?
        let result = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(pointer, CChar(UInt8(ascii: "s")), $0) }
        guard result > 0, let value else { throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "expected a string argument") }
        return String(cString: value)
    }

    public func readObjectPath() throws(BusError) -> String {
        var value: UnsafePointer<CChar>?
        let result = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(pointer, CChar(UInt8(ascii: "o")), $0) }
        guard result > 0, let value else { throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "expected an object path argument") }
        return String(cString: value)
    }

    public func readUInt32() throws(BusError) -> UInt32 {
        try readBasic("u", as: UInt32.self, what: "a uint32")
    }

    public func readUInt64() throws(BusError) -> UInt64 {
        try readBasic("t", as: UInt64.self, what: "a uint64")
    }

    /// A D-Bus boolean (`b`, sent as a 32-bit 0 or 1).
    public func readBool() throws(BusError) -> Bool {
        try readBasic("b", as: Int32.self, what: "a boolean") != 0
    }

    public func readInt32() throws(BusError) -> Int32 {
        try readBasic("i", as: Int32.self, what: "an int32")
    }

    public func readInt64() throws(BusError) -> Int64 {
        try readBasic("x", as: Int64.self, what: "an int64")
    }

    private func readBasic<T: FixedWidthInteger>(_ type: Unicode.Scalar, as: T.Type, what: String) throws(BusError) -> T {
        var value: T = 0
        let result = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(pointer, CChar(UInt8(ascii: type)), $0) }
        guard result > 0 else { throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "expected \(what) argument") }
        return value
    }

    public func readStringArray() throws(BusError) -> [String] {
        var strv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let result = sd_bus_message_read_strv(pointer, &strv)
        guard result >= 0 else { throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "expected a string array") }
        var strings: [String] = []
        if let strv {
            var index = 0
            while let item = strv[index] {
                strings.append(String(cString: item))
                free(item)
                index += 1
            }
            free(strv)
        }
        return strings
    }

    /// Enters a container (`a`, `r`, `v`, `e`) of `contents`; false at the end of an array.
    public func enter(_ type: Unicode.Scalar, _ contents: String) throws(BusError) -> Bool {
        let result = sd_bus_message_enter_container(pointer, CChar(UInt8(ascii: type)), contents)
        guard result >= 0 else { throw BusError("enter container \(type)\(contents)", code: result) }
        return result > 0
    }

    public func exit() throws(BusError) {
        let result = sd_bus_message_exit_container(pointer)
        guard result >= 0 else { throw BusError("exit container", code: result) }
    }

    public func skip(_ signature: String) throws(BusError) {
        let result = sd_bus_message_skip(pointer, signature)
        guard result >= 0 else { throw BusError("skip \(signature)", code: result) }
    }

    // MARK: appending

    public func append(_ value: String) throws(BusError) {
        let result = value.withCString { sd_bus_message_append_basic(pointer, CChar(UInt8(ascii: "s")), $0) }
        guard result >= 0 else { throw BusError("append string", code: result) }
    }

    public func append(objectPath value: String) throws(BusError) {
        let result = value.withCString { sd_bus_message_append_basic(pointer, CChar(UInt8(ascii: "o")), $0) }
        guard result >= 0 else { throw BusError("append object path", code: result) }
    }

    public func append(_ value: UInt32) throws(BusError) { try appendBasic("u", value) }
    public func append(_ value: UInt64) throws(BusError) { try appendBasic("t", value) }
    public func append(_ value: Int32) throws(BusError) { try appendBasic("i", value) }
    public func append(_ value: Int64) throws(BusError) { try appendBasic("x", value) }
    /// A boolean: sd-bus takes `b` as a C int.
    public func append(_ value: Bool) throws(BusError) { try appendBasic("b", Int32(value ? 1 : 0)) }

    private func appendBasic<T: FixedWidthInteger>(_ type: Unicode.Scalar, _ value: T) throws(BusError) {
        var value = value
        let result = sd_bus_message_append_basic(pointer, CChar(UInt8(ascii: type)), &value)
        guard result >= 0 else { throw BusError("append \(type)", code: result) }
    }

    public func append(_ strings: [String]) throws(BusError) {
        try open("a", "s")
        for string in strings { try append(string) }
        try close()
    }

    public func open(_ type: Unicode.Scalar, _ contents: String) throws(BusError) {
        let result = sd_bus_message_open_container(pointer, CChar(UInt8(ascii: type)), contents)
        guard result >= 0 else { throw BusError("open container \(type)\(contents)", code: result) }
    }

    public func close() throws(BusError) {
        let result = sd_bus_message_close_container(pointer)
        guard result >= 0 else { throw BusError("close container", code: result) }
    }

    /// One entry of an open `a{sv}`: `key`, then `value` writes a variant of `signature`.
    public func appendEntry(_ key: String, _ signature: String, _ value: (BusMessage) throws(BusError) -> Void) throws(BusError) {
        try open("e", "sv")
        try append(key)
        try open("v", signature)
        try value(self)
        try close()
        try close()
    }
}
