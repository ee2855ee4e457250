import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// What a reader learnt of a call's strings and object paths, in the order a method reads them.
struct StringMeasures: Sendable {
    enum Measure: Sendable {
        /// At most `maximumStringBytes`: the loop reads it.
        case short
        /// Longer: its length in bytes and its first 256 bytes, for the refusal's excerpt.
        case long(length: Int, beginning: [UInt8])
        /// sd-bus would not read it (bad UTF-8, a NUL inside): its errno.
        case unreadable(Int32)
    }

    var strings: [Measure] = []
    /// False when reading stopped early (past `maximumValues`, or a value sd-bus would not
    /// read): the strings after the last measure were never looked at.
    var isComplete = true
}

/// `StringMeasures` on the loop, with how many of them the method has read so far.
final class MeasuredStrings {
    let measures: StringMeasures
    private var next = 0

    init(_ measures: StringMeasures) { self.measures = measures }

    /// The measure of the next string the method reads; nil past the measured ones.
    func take() -> StringMeasures.Measure? {
        defer { next += 1 }
        return next < measures.strings.count ? measures.strings[next] : nil
    }
}

/// One call's arguments read through, every string measured and every value counted; the
/// message is left rewound for the method to read.
struct ArgumentReading {
    private let message: OpaquePointer
    private var values = 0
    private var measures = StringMeasures()

    static func read(_ message: OpaquePointer) -> StringMeasures {
        var reading = ArgumentReading(message: message)
        defer { sd_bus_message_rewind(message, 1) }
        reading.measures.isComplete = reading.readAll()
        return reading.measures
    }

    /// Reads values until the end of the enclosing container: false when it stopped early.
    private mutating func readAll() -> Bool {
        while true {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            let peeked = sd_bus_message_peek_type(message, &type, &contents)
            guard peeked > 0 else { return peeked == 0 }
            values += 1
            guard values <= ArgumentScreen.maximumValues else { return false }
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "s"), UInt8(ascii: "o"):
                var value: UnsafePointer<CChar>?
                let result = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(message, type, $0) }
                guard result > 0, let value else {
                    measures.strings.append(.unreadable(result))
                    return false
                }
                let length = strlen(value)
                guard length > ArgumentScreen.maximumStringBytes else {
                    measures.strings.append(.short)
                    continue
                }
                let beginning = UnsafeRawBufferPointer(start: value, count: 256)
                measures.strings.append(.long(length: length, beginning: Array(beginning)))
            case UInt8(ascii: "a"), UInt8(ascii: "v"), UInt8(ascii: "r"), UInt8(ascii: "e"):
                guard sd_bus_message_enter_container(message, type, contents) > 0, readAll(),
                    sd_bus_message_exit_container(message) >= 0
                else { return false }
            default:
                // Numbers and signatures (the bus checked a signature's 255 bytes already).
                guard sd_bus_message_read_basic(message, type, nil) > 0 else { return false }
            }
        }
    }
}
