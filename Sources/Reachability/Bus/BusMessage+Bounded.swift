import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// Reading a caller's arguments within bounds (`ReachdContract.Bound`): a string's length is
/// measured on sd-bus's bytes before a Swift string is made of it, an array is read one element
/// at a time and refused at the first one past its bound, and a variant of the wrong type is
/// refused without being read. sd_bus_message_read_strv, by contrast, reads the whole array
/// first (and in libsystemd 252 takes time quadratic in its length: 800,000 strings held the
/// loop 76 s). A refusal is InvalidArgs naming the argument and the bound, quoting an excerpt.
extension BusMessage {
    package static func invalidArguments(_ text: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: text)
    }

    /// The next string argument, at most `maximumBytes` bytes; `argument` names it in a refusal,
    /// which is `refusal` (a target too long is an invalid target, as the in-process check says).
    public func readString(
        _ argument: String, maximumBytes: Int, refusal: String = "org.freedesktop.DBus.Error.InvalidArgs"
    ) throws(BusError) -> String {
        guard let value = try nextString(argument, type: "s", maximumBytes: maximumBytes, refusal: refusal) else {
            throw Self.invalidArguments("expected a string for \(argument)")
        }
        return value
    }

    /// The next object path argument, at most `maximumBytes` bytes.
    public func readObjectPath(_ argument: String, maximumBytes: Int) throws(BusError) -> String {
        guard let value = try nextString(argument, type: "o", maximumBytes: maximumBytes) else {
            throw Self.invalidArguments("expected an object path for \(argument)")
        }
        return value
    }

    /// The next argument, an `as` of at most `maximumCount` strings of at most `maximumBytes`
    /// bytes each; refused at the first string past either bound, the rest never read.
    public func readStrings(_ argument: String, maximumCount: Int, maximumBytes: Int) throws(BusError) -> [String] {
        guard try enter("a", "s") else { throw Self.invalidArguments("expected an array of strings for \(argument)") }
        var strings: [String] = []
        while let value = try nextString(argument, type: "s", maximumBytes: maximumBytes) {
            guard strings.count < maximumCount else {
                throw Self.invalidArguments("\(argument) has more than \(maximumCount) entries, the most reachd takes")
            }
            strings.append(value)
        }
        try exit()
        return strings
    }

    /// The next argument, an `ao`: its first `maximumCount` paths of at most `maximumBytes`
    /// bytes each, and whether more follow (those are never read: a peer's list is followed up
    /// to a bound, not refused whole).
    public func readObjectPaths(_ argument: String, maximumCount: Int, maximumBytes: Int) throws(BusError) -> (paths: [String], more: Bool) {
        guard try enter("a", "o") else { throw Self.invalidArguments("expected an array of object paths for \(argument)") }
        var paths: [String] = []
        while let value = try nextString(argument, type: "o", maximumBytes: maximumBytes) {
            guard paths.count < maximumCount else { return (paths, true) }
            paths.append(value)
        }
        try exit()
        return (paths, false)
    }

    /// Enters the next argument when it is a variant holding `contents`; false, having read
    /// nothing, when it is anything else (its contents are never looked at, however large).
    public func enterVariant(holding contents: String) throws(BusError) -> Bool {
        var type: CChar = 0
        var held: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(pointer, &type, &held) > 0, type == CChar(UInt8(ascii: "v")), let held,
            strcmp(held, contents) == 0
        else { return false }
        return try enter("v", contents)
    }

    /// The next string or object path; nil at the end of the enclosing array. Its length is
    /// taken with strnlen bounded by `maximumBytes`, so a string within bounds costs its own
    /// length; one past them is measured once, for the refusal's figure. sd-bus checks a
    /// string's UTF-8 whole before handing it over: at most the 64 KiB of a call
    /// (`CallSizeBound`), tens of microseconds.
    private func nextString(
        _ argument: String, type: Unicode.Scalar, maximumBytes: Int, refusal: String = "org.freedesktop.DBus.Error.InvalidArgs"
    ) throws(BusError) -> String? {
        let code = CChar(UInt8(ascii: type))
        var value: UnsafePointer<CChar>?
        let result = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(pointer, code, $0) }
        guard result >= 0 else { throw Self.invalidArguments("expected \(type == "o" ? "an object path" : "a string") for \(argument)") }
        guard result > 0, let value else { return nil }
        guard strnlen(value, maximumBytes + 1) <= maximumBytes else {
            let length = strlen(value)
            // Enough bytes for the excerpt's 64 scalars; a character cut at the end shows as U+FFFD.
            let beginning = UnsafeRawBufferPointer(start: value, count: min(length, 256))
            throw Self.tooLong(argument, length: length, beginning: Array(beginning), maximumBytes: maximumBytes, refusal: refusal)
        }
        return String(cString: value)
    }

    private static func tooLong(_ argument: String, length: Int, beginning: [UInt8], maximumBytes: Int, refusal: String) -> BusError {
        let excerpt = String(decoding: beginning, as: UTF8.self).inertExcerpt(wholeBytes: length)
        return BusError(name: refusal, message: "\(argument) is \(length) bytes, at most \(maximumBytes): \(excerpt)")
    }
}

extension BusMessage {
    /// The next argument, an `ay` of at most `maximumCount` bytes, read in place.
    public func readBytes(_ argument: String, maximumCount: Int) throws(BusError) -> [UInt8] {
        var data: UnsafeRawPointer?
        var size = 0
        guard sd_bus_message_read_array(pointer, CChar(UInt8(ascii: "y")), &data, &size) >= 0 else {
            throw Self.invalidArguments("expected bytes for \(argument)")
        }
        guard size <= maximumCount else { throw Self.invalidArguments("\(argument) has \(size) bytes, more than the \(maximumCount) reachd takes") }
        guard let data, size > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: size))
    }
}
