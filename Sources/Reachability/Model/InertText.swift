/// Strings from outside (interface names, portal URIs from the network, configuration lines,
/// D-Bus arguments) shown as text: every control character is written out, so none reaches a
/// terminal or a log raw. Anyone on a plain-HTTP path can send `Location: http://x/\e[31m`, and
/// a terminal would obey it; `a\x1b[31mb` is what it shows instead. JSON needs none of this: its
/// serializer escapes the same characters exactly (`\u001b`).
extension String {
    /// This text with C0 controls (but the kept ones), DEL and C1 controls written as `\xHH`
    /// (C1: `\u{HH}`, as they are not bytes of their own in UTF-8). `keepingNewlines`: line
    /// breaks and tabs of a multi-line text stay (a table, several sd_notify assignments).
    public func escapingControlCharacters(keepingNewlines: Bool = false) -> String {
        func escaped(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.value {
            case 0x0A, 0x09: !keepingNewlines
            case 0x00...0x1F, 0x7F, 0x80...0x9F: true
            default: false
            }
        }
        guard unicodeScalars.contains(where: escaped) else { return self }
        var out = ""
        out.reserveCapacity(utf8.count + 8)
        for scalar in unicodeScalars {
            guard escaped(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16)
            out += scalar.value < 0x80 ? "\\x" + (hex.count == 1 ? "0" : "") + hex : "\\u{" + hex + "}"
        }
        return out
    }
}
