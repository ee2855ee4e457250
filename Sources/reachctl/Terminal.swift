#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered output through write(2): every line reaches a pipe as soon as it is written, which
/// `monitor` relies on, and no stdio buffer can reorder standard output and standard error.
enum Terminal {
    /// Writes `text` and a newline to standard output in one write(2) call.
    static func writeLine(_ text: String) {
        write(text + "\n", to: STDOUT_FILENO)
    }

    /// Writes all of `text` to `fd`, retrying after EINTR and short writes. Other errors drop the
    /// rest: a closed pipe ends the process with SIGPIPE anyway. Control characters are written
    /// out (`\x1b`), lines and tabs kept: names and URIs from outside never drive the terminal
    /// (JSON is unchanged: it has none). The colours `TextStyle` paints with pass: set and reset
    /// of a foreground colour, nothing that moves the cursor or rewrites the screen, so a name
    /// holding one can at worst colour itself. `raw`: machine text that must stay exact (metrics).
    static func write(_ text: String, to fd: Int32, raw: Bool = false) {
        let shown = raw ? text : escapingAllButColours(text)
        var bytes = Array(shown.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            bytes = bytes.dropFirst(written)
        }
    }

    /// The SGR sequences `TextStyle.paint` writes.
    static let colours = ["\u{1B}[31m", "\u{1B}[32m", "\u{1B}[33m", "\u{1B}[0m"]

    /// `text` with its control characters written out, except the colour sequences.
    static func escapingAllButColours(_ text: String) -> String {
        guard text.contains("\u{1B}[") else { return text.escapingControlCharacters(keepingNewlines: true) }
        var out = ""
        var rest = text[...]
        while let escape = rest.firstIndex(of: "\u{1B}") {
            out += String(rest[..<escape]).escapingControlCharacters(keepingNewlines: true)
            rest = rest[escape...]
            if let colour = colours.first(where: { rest.hasPrefix($0) }) {
                out += colour
                rest = rest.dropFirst(colour.count)
            } else {
                out += String(rest.prefix(1)).escapingControlCharacters(keepingNewlines: true)
                rest = rest.dropFirst()
            }
        }
        return out + String(rest).escapingControlCharacters(keepingNewlines: true)
    }
}
