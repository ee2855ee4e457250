/// Strings from outside (interface names, portal URIs from the network, configuration lines,
/// D-Bus arguments) shown as text: every control character and every Unicode format character
/// is written out, so none reaches a terminal or a log raw. Anyone on a plain-HTTP path can send
/// `Location: http://x/\e[31m`, and a terminal would obey it; `a\x1b[31mb` is what it shows
/// instead. A bidi override (U+202E) would make a reader see an error message backwards, and a
/// zero-width character would make two different names look the same: `\u{202e}` is shown.
/// JSON escapes the same characters itself, exactly (`\u001b`, `\u202e`), so a JSON line holds
/// none of them raw and passes any terminal filter unchanged.
extension String {
    /// This text with C0 controls (but the kept ones), DEL and C1 controls written as `\xHH`
    /// (C1: `\u{HH}`, as they are not bytes of their own in UTF-8), and format characters
    /// (general category Cf: bidi embeddings, overrides and isolates, zero-width joiners and
    /// spaces, the soft hyphen, the byte-order mark) as `\u{HHHH}`. `keepingNewlines`: line
    /// breaks and tabs of a multi-line text stay (a table, several sd_notify assignments).
    package func escapingControlCharacters(keepingNewlines: Bool = false) -> String {
        guard unicodeScalars.contains(where: { Self.isEscaped($0, keepingNewlines: keepingNewlines) }) else { return self }
        var out = ""
        out.reserveCapacity(utf8.count + 8)
        Self.appendEscaping(unicodeScalars, to: &out, keepingNewlines: keepingNewlines)
        return out
    }

    /// How an error message or a log line quotes a value from outside: at most `limit` Unicode
    /// scalars of it between quotes, escaped as `escapingControlCharacters` does, and when it is
    /// longer, `…(N bytes)` after the quote with its whole length in UTF-8 bytes. A hostile
    /// 100 KB argument comes back as some 80 characters, never whole. Counted in scalars, not
    /// characters, so a single "character" of a million combining marks is cut too.
    /// `wholeBytes`: the value's length when this string is only its beginning (a D-Bus argument
    /// refused before all of it was made a string).
    package func inertExcerpt(limit: Int = 64, wholeBytes: Int? = nil) -> String {
        var out = "'"
        let scalars = unicodeScalars
        let end = scalars.index(scalars.startIndex, offsetBy: limit, limitedBy: scalars.endIndex) ?? scalars.endIndex
        Self.appendEscaping(scalars[..<end], to: &out, keepingNewlines: false)
        out += "'"
        let bytes = wholeBytes ?? utf8.count
        if end != scalars.endIndex || bytes > utf8.count { out += "…(\(bytes) bytes)" }
        return out
    }

    /// Whether `scalar` could drive a terminal or hide text: the characters every output of
    /// outside text writes out (here, and JSON's serializer).
    package static func isEscaped(_ scalar: Unicode.Scalar, keepingNewlines: Bool) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: !keepingNewlines
        case 0x00...0x1F, 0x7F, 0x80...0x9F: true
        // Printable ASCII, and Latin to Hebrew but the soft hyphen: no format character, no lookup.
        case 0x20...0x7E, 0xA0...0xAC, 0xAE...0x05FF: false
        default: scalar.properties.generalCategory == .format
        }
    }

    private static func appendEscaping(_ scalars: some Sequence<Unicode.Scalar>, to out: inout String, keepingNewlines: Bool) {
        for scalar in scalars {
            guard isEscaped(scalar, keepingNewlines: keepingNewlines) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16)
            out += scalar.value < 0x80 ? "\\x" + (hex.count == 1 ? "0" : "") + hex : "\\u{" + hex + "}"
        }
    }
}
