// Shared by every fuzz target (compiled into each binary by scripts/fuzz).

/// Stops the run with `message` when an oracle fails. Not `precondition`: in an optimised build
/// that traps without printing its message, and the message is what says which promise broke.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("oracle failed: " + message()) }
}

/// Whether `haystack` holds `needle` byte for byte. String.contains compares characters, and a
/// combining mark at the start of `needle` joins the quote before it into another character.
func containsBytes(_ haystack: String, _ needle: String) -> Bool {
    let (h, n) = (Array(haystack.utf8), Array(needle.utf8))
    guard !n.isEmpty else { return true }
    guard h.count >= n.count else { return false }
    return (0...(h.count - n.count)).contains { h[$0..<($0 + n.count)].elementsEqual(n) }
}
