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
    /// U+0080-U+009F) and format character (bidi controls, zero-width characters) as `\uXXXX`;
    /// all other characters, including non-ASCII, pass through as UTF-8.
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

    /// A Swift `String` is always valid Unicode, so its characters are copied as UTF-8; rewritten
    /// are the ones RFC 8259 section 7 requires (`"`, `\`, U+0000-U+001F) and every other one
    /// that could drive a terminal printing the JSON or hide text from its reader, as
    /// `String.escapingControlCharacters` names them (DEL, C1 controls, format characters such
    /// as bidi overrides and zero-width spaces), as `\uXXXX` (a surrogate pair past U+FFFF). So
    /// the JSON is exact and no terminal filter ever needs to touch it.
    private static func writeString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for scalar in string.unicodeScalars {
            switch scalar.value {
            case 0x22, 0x5C:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(scalar.value))
            case 0x20...0x7E:
                out.append(UInt8(scalar.value))
            case _ where String.isEscaped(scalar, keepingNewlines: false):
                for unit in String(scalar).utf16 { escape(unit, to: &out) }
            default:
                out.append(contentsOf: String(scalar).utf8)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `\uXXXX` for one UTF-16 code unit.
    private static func escape(_ unit: UInt16, to out: inout [UInt8]) {
        out.append(contentsOf: "\\u".utf8)
        for shift in stride(from: 12, through: 0, by: -4) { out.append(hexDigits[Int(unit >> UInt16(shift)) & 0x0F]) }
    }
}

extension JSONValue: CustomStringConvertible {
    package var description: String { serialized() }
}
