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
    /// (JSON is unchanged: it has none). `raw`: machine text that must stay exact (metrics).
    static func write(_ text: String, to fd: Int32, raw: Bool = false) {
        let shown = raw ? text : text.escapingControlCharacters(keepingNewlines: true)
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
}
