/// Whether a text can be a D-Bus address that sd-bus connects to, and if not, why.
///
/// sd-bus itself is no judge: it skips a transport it does not know and ends with "Connection
/// refused", so `--bus-address garbage` looked like a bus without reachd: reachctl answered
/// in-process with exit 0, and reachd exited as if it had lost the bus (and was restarted). An
/// address that can never work is a usage error of either instead, naming it; a well-formed one
/// where nobody listens still falls back in-process (reachctl) or is a bus lost (reachd).
///
/// The grammar is the D-Bus specification's: addresses separated by `;`, each
/// `TRANSPORT:KEY=VALUE,...`, a `%` in a value followed by two hex digits; the transports and
/// keys are those sd-bus reads. Other characters are left to sd-bus, which takes them as they are.
package enum BusAddressSyntax {
    /// The keys sd-bus reads for each transport it knows, and those of them one is required of.
    private static let transports: [String: (keys: Set<String>, required: Set<String>)] = [
        "unix": (["path", "abstract", "guid"], ["path", "abstract"]),
        "tcp": (["host", "port", "family", "guid"], ["host"]),
        "unixexec": (["path", "guid"], ["path"]),
        "x-machine-unix": (["machine", "pid", "guid"], []),
    ]

    package static let example = "unix:path=/run/dbus/system_bus_socket"

    /// Why `text` is not a usable address; nil when it is one.
    package static func problem(in text: String) -> String? {
        let entries = text.split(separator: ";", omittingEmptySubsequences: true)
        guard !entries.isEmpty else { return "it is empty" }
        for entry in entries {
            guard let colon = entry.firstIndex(of: ":") else { return "'\(entry)' has no TRANSPORT: before its keys" }
            let transport = String(entry[..<colon])
            guard let known = transports[transport] else {
                return "unknown transport '\(transport)' (known: \(transports.keys.sorted().joined(separator: ", ")))"
            }
            var keys = Set<String>()
            for pair in entry[entry.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: true) {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return "'\(pair)' is not KEY=VALUE" }
                let key = String(parts[0])
                // unixexec passes its program's arguments as argv0, argv1, ...
                let isArgument = transport == "unixexec" && key.hasPrefix("argv") && key.dropFirst(4).allSatisfy(\.isNumber)
                guard known.keys.contains(key) || isArgument else {
                    return "\(transport): unknown key '\(key)' (known: \(known.keys.sorted().joined(separator: ", ")))"
                }
                guard isValue(parts[1]) else { return "\(key): '\(parts[1])' has a % not followed by two hex digits" }
                keys.insert(key)
            }
            if !known.required.isEmpty, keys.isDisjoint(with: known.required) {
                return "\(transport): needs \(known.required.sorted().map { "\($0)=" }.joined(separator: " or "))"
            }
        }
        return nil
    }

    /// Every `%` followed by two hex digits, the one thing sd-bus checks in a value.
    private static func isValue(_ value: Substring) -> Bool {
        var bytes = value.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else { continue }
            for _ in 0..<2 {
                guard let digit = bytes.next(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(digit | 0x20)
                else { return false }
            }
        }
        return true
    }
}
