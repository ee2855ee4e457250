/// A JSON value, just enough for reachd's output: objects keep their keys in the order they were
/// built, so the text keeps the key order the output builds (`SnapshotJSON`), which scripts may
/// rely on.
///
/// Numbers are integers only (reachd publishes no fractions); `int` and `uint` together cover
/// every Int32 index and UInt64 generation without loss.
package enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case string(String)
    case array([JSONValue])
    /// Members in order. Keys should be unique; the serializer writes them as given.
    case object([(String, JSONValue)])
}

// MARK: - Equality

extension JSONValue: Hashable {
    /// Structural equality. Objects compare member by member, in order; `int(5)` equals
    /// `uint(5)` because both serialize to `5`.
    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int, .int), (.int, .uint), (.uint, .int), (.uint, .uint):
            return lhs.integerValue == rhs.integerValue
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    package func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0)
        case .bool(let value):
            hasher.combine(1)
            hasher.combine(value)
        case .int, .uint:
            hasher.combine(2)
            hasher.combine(integerValue)
        case .string(let value):
            hasher.combine(3)
            hasher.combine(value)
        case .array(let values):
            hasher.combine(4)
            hasher.combine(values)
        case .object(let members):
            hasher.combine(5)
            hasher.combine(members.count)
            for (key, value) in members {
                hasher.combine(key)
                hasher.combine(value)
            }
        }
    }

    /// Both integer cases on one scale, so `int` and `uint` compare and hash alike.
    private var integerValue: Int128? {
        switch self {
        case .int(let value): Int128(value)
        case .uint(let value): Int128(value)
        default: nil
        }
    }
}

// MARK: - Literals

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    package init(nilLiteral: ()) { self = .null }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(integerLiteral value: Int64) { self = .int(value) }
    package init(stringLiteral value: String) { self = .string(value) }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Dictionary literals keep their written order, like every JSONValue object.
    package init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements) }
}

// MARK: - Serialization

extension JSONValue {
    /// Compact JSON text (RFC 8259): no whitespace between tokens, object keys in stored order.
    ///
    /// Strings escape `"` and `\`, and write every control character (U+0000-U+001F, DEL and
    /// U+0080-U+009F) as `\u00XX`; all other characters, including non-ASCII, pass through as UTF-8.
    package func serialized() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private func write(to out: inout [UInt8]) {
        switch self {
        case .null:
            out.append(contentsOf: "null".utf8)
        case .bool(let value):
            out.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value):
            out.append(contentsOf: String(value).utf8)
        case .uint(let value):
            out.append(contentsOf: String(value).utf8)
        case .string(let value):
            Self.writeString(value, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (i, value) in values.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A Swift `String` is always valid Unicode, so its UTF-8 bytes can be copied as they are;
    /// only the bytes RFC 8259 section 7 requires to be escaped are rewritten, and DEL and the C1
    /// controls (U+0080-U+009F, UTF-8 `C2 80`-`C2 9F`) as well: the same text, but none of it
    /// can drive a terminal that prints the JSON.
    private static func writeString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let bytes = Array(string.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0x00...0x1F, 0x7F:
                escape(byte, to: &out)
            case 0xC2 where index < bytes.count && (0x80...0x9F).contains(bytes[index]):
                escape(bytes[index], to: &out)
                index += 1
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `\u00XX` for a code point below U+0100.
    private static func escape(_ value: UInt8, to out: inout [UInt8]) {
        out.append(contentsOf: "\\u00".utf8)
        out.append(hexDigits[Int(value >> 4)])
        out.append(hexDigits[Int(value & 0x0F)])
    }
}

extension JSONValue: CustomStringConvertible {
    package var description: String { serialized() }
}
