/// The members of a JSON object (RFC 8259), read strictly: what a captive-portal API answers
/// (RFC 8908). A network's server chooses these bytes, so the reader takes UTF-8 only, refuses
/// raw control characters in strings, lone surrogates, leading zeros, duplicate keys, trailing
/// bytes and nesting past `maximumDepth`, and never traps. Values other than strings, booleans
/// and numbers are checked and skipped (an API may add members of its own).
package enum CaptiveJSON {
    package enum Value: Equatable {
        case string(String)
        case bool(Bool)
        /// The number's text as sent (a JSON number: `-?int frac? exp?`).
        case number(String)
        /// An object, an array or null: checked, not kept.
        case other
    }

    package struct Refusal: Error, Equatable {
        package let reason: String
    }

    package static let maximumDepth = 16

    /// The top-level object's members, or why the text is not one.
    package static func members(_ bytes: [UInt8]) -> Result<[String: Value], Refusal> {
        var reader = Reader(bytes: bytes)
        do {
            reader.skipSpace()
            guard reader.peek == UInt8(ascii: "{") else { throw Refusal(reason: "not a JSON object") }
            let members = try reader.object(depth: 1, keep: true)
            reader.skipSpace()
            guard reader.index == bytes.count else { throw Refusal(reason: "bytes after the object") }
            return .success(members)
        } catch let refusal as Refusal {
            return .failure(refusal)
        } catch {
            return .failure(Refusal(reason: "\(error)"))
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func expect(_ byte: UInt8) throws(Refusal) {
            guard peek == byte else { throw Refusal(reason: "expected '\(Character(Unicode.Scalar(byte)))' at byte \(index)") }
            index += 1
        }

        mutating func object(depth: Int, keep: Bool) throws(Refusal) -> [String: Value] {
            guard depth <= CaptiveJSON.maximumDepth else { throw Refusal(reason: "nested deeper than \(CaptiveJSON.maximumDepth)") }
            try expect(UInt8(ascii: "{"))
            var members: [String: Value] = [:]
            skipSpace()
            if peek == UInt8(ascii: "}") {
                index += 1
                return members
            }
            while true {
                skipSpace()
                let key = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                let value = try value(depth: depth)
                if keep {
                    guard members[key] == nil else { throw Refusal(reason: "the key \(key.inertExcerpt()) twice") }
                    members[key] = value
                }
                skipSpace()
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                return members
            }
        }

        mutating func array(depth: Int) throws(Refusal) {
            guard depth <= CaptiveJSON.maximumDepth else { throw Refusal(reason: "nested deeper than \(CaptiveJSON.maximumDepth)") }
            try expect(UInt8(ascii: "["))
            skipSpace()
            if peek == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                skipSpace()
                _ = try value(depth: depth)
                skipSpace()
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "]"))
                return
            }
        }

        mutating func value(depth: Int) throws(Refusal) -> Value {
            switch peek {
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "{"):
                _ = try object(depth: depth + 1, keep: false)
                return .other
            case UInt8(ascii: "["):
                try array(depth: depth + 1)
                return .other
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .other
            default: return .number(try number())
            }
        }

        mutating func literal(_ word: String) throws(Refusal) {
            let text = Array(word.utf8)
            guard index + text.count <= bytes.count, bytes[index..<(index + text.count)].elementsEqual(text) else {
                throw Refusal(reason: "an invalid value at byte \(index)")
            }
            index += text.count
        }

        /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func number() throws(Refusal) -> String {
            let start = index
            func digits() -> Int {
                let from = index
                while let byte = peek, UInt8(ascii: "0")...UInt8(ascii: "9") ~= byte { index += 1 }
                return index - from
            }
            if peek == UInt8(ascii: "-") { index += 1 }
            if peek == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                throw Refusal(reason: "an invalid value at byte \(start)")
            }
            if peek == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw Refusal(reason: "an invalid number at byte \(start)") }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw Refusal(reason: "an invalid number at byte \(start)") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func string() throws(Refusal) -> String {
            try expect(UInt8(ascii: "\""))
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() throws(Refusal) {
                guard !raw.isEmpty else { return }
                guard let text = String(validating: raw, as: UTF8.self) else { throw Refusal(reason: "a string that is not UTF-8") }
                scalars.append(contentsOf: text.unicodeScalars)
                raw.removeAll(keepingCapacity: true)
            }
            while true {
                guard let byte = peek else { throw Refusal(reason: "a string without its end") }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    try flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    try flush()
                    scalars.append(try escape())
                case 0x00..<0x20: throw Refusal(reason: "a control character in a string (byte \(index - 1))")
                default: raw.append(byte)
                }
            }
        }

        mutating func escape() throws(Refusal) -> Unicode.Scalar {
            guard let byte = peek else { throw Refusal(reason: "a string without its end") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                let first = try hex4()
                if (0xD800..<0xDC00).contains(first) {
                    guard peek == UInt8(ascii: "\\") else { throw Refusal(reason: "a lone surrogate") }
                    index += 1
                    guard peek == UInt8(ascii: "u") else { throw Refusal(reason: "a lone surrogate") }
                    index += 1
                    let second = try hex4()
                    guard (0xDC00..<0xE000).contains(second) else { throw Refusal(reason: "a lone surrogate") }
                    return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
                }
                guard let scalar = Unicode.Scalar(first) else { throw Refusal(reason: "a lone surrogate") }
                return scalar
            default: throw Refusal(reason: "an invalid escape at byte \(index - 1)")
            }
        }

        mutating func hex4() throws(Refusal) -> UInt32 {
            guard index + 4 <= bytes.count else { throw Refusal(reason: "a string without its end") }
            var value: UInt32 = 0
            for byte in bytes[index..<(index + 4)] {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw Refusal(reason: "an invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }
    }
}
