import Testing
@testable import Reachability

/// `ReceivedMessageSize.header`, which reads a received message's header from the bytes before
/// one of its fields: exact on a real header's layout, and garbage gives nil or a size, never a
/// read outside the bytes it is given (the address sanitizer's runs would say).
struct CallSizeBoundTests {
    /// A method call's header (16 bytes, then `fields` bytes of header fields whose path string
    /// starts at `pathAt`), cut at the path's end, as `bytes(of:)` hands it over.
    static func header(littleEndian: Bool = true, serial: UInt32, body: UInt32, fields: UInt32, pathAt: Int, path: String) -> [UInt8] {
        func word(_ value: UInt32) -> [UInt8] {
            let ordered = littleEndian ? value.littleEndian : value.bigEndian
            return withUnsafeBytes(of: ordered) { Array($0) }
        }
        var bytes: [UInt8] = [littleEndian ? UInt8(ascii: "l") : UInt8(ascii: "B"), 1, 0, 1] + word(body) + word(serial) + word(fields)
        bytes += [UInt8](repeating: 0, count: pathAt - bytes.count) + Array(path.utf8)
        return bytes
    }

    static func size(_ bytes: [UInt8], pathAt: Int, serial: UInt32) -> Int? {
        bytes.withUnsafeBytes { ReceivedMessageSize.header(in: $0, fieldAt: pathAt, serial: serial) }
    }

    @Test func aHeaderBeforeThePathGivesTheMessagesWholeSize() {
        let little = Self.header(serial: 7, body: 33_553_984, fields: 133, pathAt: 24, path: "/org/reachd/Reachability1")
        #expect(Self.size(little, pathAt: 24, serial: 7) == 16 + 136 + 33_553_984)
        let big = Self.header(littleEndian: false, serial: 9, body: 100, fields: 200, pathAt: 120, path: "/a")
        #expect(Self.size(big, pathAt: 120, serial: 9) == 16 + 200 + 100)
        // Some bytes before the header, as the scan meets them from the path down.
        let padded = [UInt8](repeating: 0x6c, count: 300) + little
        #expect(Self.size(padded, pathAt: 324, serial: 7) == 16 + 136 + 33_553_984)
    }

    @Test func anotherSerialAFieldsLengthShortOfThePathOrAnotherTypeGiveNothing() {
        let bytes = Self.header(serial: 7, body: 10, fields: 100, pathAt: 24, path: "/x")
        #expect(Self.size(bytes, pathAt: 24, serial: 8) == nil)
        let short = Self.header(serial: 7, body: 10, fields: 4, pathAt: 24, path: "/org/reachd")
        #expect(Self.size(short, pathAt: 24, serial: 7) == nil)
        var signal = bytes
        signal[1] = 4
        #expect(Self.size(signal, pathAt: 24, serial: 7) == nil)
        #expect(Self.size(bytes, pathAt: 10, serial: 7) == nil, "no room for a header before the field")
        #expect(Self.size(bytes, pathAt: bytes.count + 1, serial: 7) == nil, "a field past the bytes")
    }

    @Test func everyTruncationAndRandomBytesStayWithinTheBuffer() {
        let bytes = Self.header(serial: 3, body: 1_000, fields: 64, pathAt: 24, path: "/org/reachd/Reachability1")
        for end in 0...bytes.count {
            let cut = Array(bytes[..<end])
            for field in 0...end { _ = Self.size(cut, pathAt: field, serial: 3) }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...96, using: &generator)
            var random = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Often a plausible start, so the later checks run too.
            if count > 20, Bool.random(using: &generator) { random.replaceSubrange(0..<4, with: [UInt8(ascii: "l"), 1, 0, 1]) }
            let serial = count > 12 && Bool.random(using: &generator)
                ? random.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self) } : UInt32.random(in: 0...9, using: &generator)
            if let size = Self.size(random, pathAt: Int.random(in: 0...count, using: &generator), serial: serial) {
                #expect(size >= 16 && size <= 16 + Int(UInt32.max) + 8 + Int(UInt32.max))
            }
        }
    }

    @Test func callsOverTheBoundAreRefusedNamingTheirSize() {
        #expect(CallSizeBound.refusal(CallSizeBound.maximumBytes) == nil)
        let refusal = CallSizeBound.refusal(33_554_209)
        #expect(refusal?.name == "org.freedesktop.DBus.Error.LimitsExceeded")
        #expect(refusal?.message.contains("33554209 bytes, at most 65536") == true)
    }
}
