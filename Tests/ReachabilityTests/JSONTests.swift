import Testing
@testable import Reachability

@Suite("JSON serialization")
struct JSONTests {
    @Test("scalars serialize as JSON literals")
    func scalars() {
        #expect(JSONValue.null.serialized() == "null")
        #expect(JSONValue.bool(true).serialized() == "true")
        #expect(JSONValue.bool(false).serialized() == "false")
        #expect(JSONValue.int(-42).serialized() == "-42")
        #expect(JSONValue.int(.min).serialized() == "-9223372036854775808")
        #expect(JSONValue.uint(.max).serialized() == "18446744073709551615")
    }

    @Test("quotes and backslashes are escaped")
    func quotesAndBackslash() {
        #expect(JSONValue.string(#"a"b\c"#).serialized() == #""a\"b\\c""#)
        #expect(JSONValue.string("").serialized() == #""""#)
    }

    @Test("every control character U+0000-U+001F is written as \\u00XX")
    func controlCharacters() {
        for code in UInt8(0)...0x1F {
            let text = String(decoding: [UInt8(ascii: "x"), code], as: UTF8.self)
            let hex = String(code, radix: 16)
            let expected = "\"x\\u00" + (hex.count == 1 ? "0" + hex : hex) + "\""
            #expect(JSONValue.string(text).serialized() == expected, "code \(code)")
        }
        #expect(JSONValue.string("a\nb\t").serialized() == #""a\u000ab\u0009""#)
        #expect(JSONValue.string("\u{1F}").serialized() == #""\u001f""#)
    }

    @Test("characters from U+0020 up pass through unescaped, / and non-ASCII; DEL and C1 controls escaped")
    func passThrough() {
        #expect(JSONValue.string(" /~\u{7F}").serialized() == #"" /~\u007f""#)
        #expect(JSONValue.string("\u{80}x\u{9F}\u{A0}").serialized() == "\"\\u0080x\\u009f\u{A0}\"")
        let unicode = "é wlan-ü 网络 🛜 \u{2028}"
        let serialized = JSONValue.string(unicode).serialized()
        #expect(serialized == "\"" + unicode + "\"")
        #expect(Array(serialized.utf8) == [UInt8(ascii: "\"")] + Array(unicode.utf8) + [UInt8(ascii: "\"")])
    }

    @Test("objects keep insertion order and escape their keys")
    func objectOrder() {
        let value: JSONValue = ["z": 1, "a": [true, nil], "m\"": "x"]
        #expect(value.serialized() == #"{"z":1,"a":[true,null],"m\"":"x"}"#)
        #expect(value.keys == ["z", "a", "m\""])
    }

    @Test("empty containers and nesting are compact")
    func nesting() {
        let value = JSONValue.array([.array([]), .object([]), .array([.object([("k", .array([.int(1), .int(2)]))])])])
        #expect(value.serialized() == #"[[],{},[{"k":[1,2]}]]"#)
    }

    @Test("equality is structural and order-sensitive for objects; int and uint of one value are equal")
    func equality() {
        let ab: JSONValue = ["a": 1, "b": 2]
        let ba: JSONValue = ["b": 2, "a": 1]
        #expect(ab == ["a": 1, "b": 2])
        #expect(ab != ba)
        #expect(JSONValue.int(5) == JSONValue.uint(5))
        #expect(JSONValue.int(-1) != JSONValue.uint(.max))
        #expect(Set([JSONValue.int(5), .uint(5), .string("5")]).count == 2)
    }

    @Test("subscripts reach members and elements, nil when absent")
    func access() {
        let value: JSONValue = ["list": ["a", "b"], "n": 3]
        #expect(value["list"]?[1] == "b")
        #expect(value["list"]?.stringArrayValue == ["a", "b"])
        #expect(value["missing"] == nil)
        #expect(value["list"]?[2] == nil)
        #expect(value["n"]?.stringArrayValue == nil)
    }
}
