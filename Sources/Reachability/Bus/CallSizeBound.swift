import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// Refuses a call whose whole message is larger than `maximumBytes` before anything reads it.
/// The bus passes calls of up to 32 MiB; reachd's largest (WatchPath's options) is a few
/// hundred bytes. Read through, each such call costs the time to check every string's UTF-8 and
/// holds its 32 MiB while waiting for that: four users sending them held reachd's memory 90 MiB
/// up and root's calls a quarter of a second. Refused here, on the loop, in microseconds, it is
/// freed before sd-bus reads the next message from the socket, so one is held at a time.
///
/// sd-bus gives no message's size; `ReceivedMessageSize` reads it from the message's own
/// header (found within 4 KiB of its path: dbus-daemon forwards only the header fields it
/// knows, each at most 255 bytes). A call whose size cannot be read goes on to its method, which
/// reads it within bounds as any other.
package final class CallSizeBound {
    package static let maximumBytes = 64 << 10

    private var slot: BusSlot?

    /// Installs the bound on `bus`, before every other filter and object of its.
    package func install(on bus: OpaquePointer) throws(BusError) {
        var slot: OpaquePointer?
        let result = sd_bus_add_filter(bus, &slot, callSizeFilterTrampoline, nil)
        guard result >= 0 else { throw BusError("bound calls' size", code: result) }
        self.slot = BusSlot(slot)
    }

    /// The refusal of a call of `bytes`, nil if it is within the bound.
    package static func refusal(_ bytes: Int) -> BusError? {
        guard bytes > maximumBytes else { return nil }
        return BusError(
            name: "org.freedesktop.DBus.Error.LimitsExceeded",
            message: "the call is \(bytes) bytes, at most \(maximumBytes): reachd reads no argument of it")
    }
}

/// sd-bus's filter: 1 (taken, answered with the refusal) for a method call over the bound.
private let callSizeFilterTrampoline: sd_bus_message_handler_t = { message, _, _ in
    guard let message, sd_bus_message_is_method_call(message, nil, nil) > 0,
        let bytes = ReceivedMessageSize.bytes(of: message), let refusal = CallSizeBound.refusal(bytes)
    else { return 0 }
    sendError(refusal, answering: message)  // sd-bus sends nothing to a call that expects no reply
    return 1
}

/// The size of a message sd-bus read from its socket, from the D-Bus header it was read with.
/// sd-bus keeps a received message as it came, in one buffer: the 16-byte fixed header, the
/// header fields, the body; its accessors (`sd_bus_message_get_path`) point into the fields. So
/// the header lies at most `scanLimit` bytes before the path's string, and is known by its
/// bytes: an endianness mark, a method call's type, version 1 and this message's own serial
/// (its cookie), with fields long enough to hold the path.
package enum ReceivedMessageSize {
    /// The D-Bus fixed header, and the smallest gap from its start to a header field's string
    /// (the field's code, signature and length).
    package static let fixedHeader = 16
    package static let fieldPrefix = 8
    /// How far before the path its header is looked for: a header whose fields are longer
    /// (thousands of unknown fields) leaves the size unknown.
    package static let scanLimit = 4096

    package static func bytes(of message: OpaquePointer) -> Int? {
        var cookie: UInt64 = 0
        guard let path = sd_bus_message_get_path(message), sd_bus_message_get_cookie(message, &cookie) >= 0,
            let serial = UInt32(exactly: cookie)
        else { return nil }
        let pathEnd = strlen(path)
        // The header starts inside the message's own buffer, before its path: the bytes from
        // `scanLimit` before the path to its end are those of the buffer once the header is
        // found at or after their start; the scan stops at the first match from the path down.
        let before = UnsafeRawPointer(path) - scanLimit
        return header(in: UnsafeRawBufferPointer(start: before, count: scanLimit + pathEnd), fieldAt: scanLimit, serial: serial)
    }

    /// The message's size from the header found nearest before `fieldAt` in `bytes` (where a
    /// header field's string starts; `bytes` end where it ends), nil if none there. Reads only `bytes`, from `fieldAt` down: garbage in
    /// gives nil or a size, never a read outside them.
    package static func header(in bytes: UnsafeRawBufferPointer, fieldAt: Int, serial: UInt32) -> Int? {
        guard fieldAt <= bytes.count else { return nil }
        var start = fieldAt - fixedHeader - fieldPrefix
        while start >= 0 {
            if let size = size(at: start, in: bytes, serial: serial), start + fixedHeader + size.fields >= bytes.count {
                return size.total
            }
            start -= 1
        }
        return nil
    }

    /// The header at `start`, if its bytes are a method call's with `serial`.
    private static func size(at start: Int, in bytes: UnsafeRawBufferPointer, serial: UInt32) -> (fields: Int, total: Int)? {
        guard start + fixedHeader <= bytes.count, bytes[start + 1] == 1, bytes[start + 3] == 1 else { return nil }
        let littleEndian: Bool
        switch bytes[start] {
        case UInt8(ascii: "l"): littleEndian = true
        case UInt8(ascii: "B"): littleEndian = false
        default: return nil
        }
        func word(_ offset: Int) -> Int {
            let value = bytes.loadUnaligned(fromByteOffset: start + offset, as: UInt32.self)
            return Int(littleEndian ? UInt32(littleEndian: value) : UInt32(bigEndian: value))
        }
        guard word(8) == Int(serial) else { return nil }
        let fields = word(12)
        return (fields, fixedHeader + ((fields + 7) & ~7) + word(4))
    }
}
