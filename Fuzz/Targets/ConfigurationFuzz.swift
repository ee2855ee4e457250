// libFuzzer target: one configuration file's bytes, read as ConfigurationLoader reads a file
// (NUL bytes and bad UTF-8 refused by line) and parsed onto the defaults.
//
// Configuration files are written by administrators and by packages' drop-ins, and a bad one
// must come back as FILE:LINE errors, never a crash of reachd at start or on SIGHUP.
//
// Oracles besides "no crash", each a promise the code makes in its comments:
// - every error names a line of the file (or none);
// - a clean file applied twice (as a drop-in repeating the main file) gives the same value;
// - `mergedText` of the result parses, cleanly, back to the same value (`reachd --check-config`);
// - a rule's name glob matches interface names exactly as fnmatch(3) does, for every pattern
//   `validate` accepts (InterfaceRule's documentation).
#if canImport(Glibc)
import Glibc
#endif
@testable import Reachability

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text: String
    switch ConfigurationFileReader.text(bytes, path: "fuzz.conf") {
    case .text(let read): text = read
    case .failed(let error):
        _ = error.description
        return 0
    case .missing, .dangling, .notRegular:
        fatalError("reading text can only give text or an error")
    }

    var configuration = Configuration.default
    let errors = Configuration.parse(text, file: "fuzz.conf", into: &configuration)
    let lineCount = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
    for error in errors {
        _ = error.description
        if let line = error.line {
            require(line >= 1 && line <= lineCount, "error names line \(line) of a \(lineCount)-line file: \(error)")
        }
    }
    _ = Classifier(rules: configuration.rules, priorities: configuration.priorities)
        .classify(Link(index: 2, name: "wlan0", flags: LinkFlags(rawValue: 0x11043)), device: DeviceFacts())

    checkGlobs(configuration.rules, names: candidateNames(bytes))

    guard errors.isEmpty else { return 0 }

    var twice = configuration
    let again = Configuration.parse(text, file: "fuzz.conf", into: &twice)
    require(again.isEmpty, "a clean file gave errors the second time: \(again)")
    require(twice == configuration, "the same file applied twice changed the configuration")

    let merged = configuration.mergedText
    var reparsed = Configuration.default
    let mergedErrors = Configuration.parse(merged, file: "merged.conf", into: &reparsed)
    require(mergedErrors.isEmpty, "mergedText does not parse: \(mergedErrors)\n\(merged)")
    require(reparsed == configuration, "mergedText parses to another configuration:\n\(merged)")
    return 0
}

/// Interface names to match the rules against: fixed ones of every kind, and every value of the
/// file cut to IFNAMSIZ - 1 bytes, so the fuzzer chooses names by writing them.
private func candidateNames(_ bytes: [UInt8]) -> [[UInt8]] {
    var names: [[UInt8]] = ["eth0", "wlan0", "wlp3s0", "tun0", "wg0", "veth1a2b3c", "br-0123456789ab", "a", ""]
        .map { Array($0.utf8) }
    for line in bytes.split(separator: UInt8(ascii: "\n")).prefix(64) {
        guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else { continue }
        let value = line[(equals + 1)...].prefix(InterfaceRule.maximumNameLength)
        if !value.contains(0) { names.append(Array(value)) }
    }
    return names
}

private func checkGlobs(_ rules: [InterfaceRule], names: [[UInt8]]) {
    for rule in rules.prefix(16) {
        // Character classes ([:alpha:]) and the like are fnmatch's, not the Glob's documented syntax.
        guard !rule.pattern.contains("[:"), !rule.pattern.contains("[="), !rule.pattern.contains("[.") else { continue }
        for name in names {
            let ours = Glob(parsing: rule.pattern).matches(name)
            let theirs = (name + [0]).withUnsafeBufferPointer { name in
                rule.pattern.withCString { pattern in
                    name.withMemoryRebound(to: CChar.self) { fnmatch(pattern, $0.baseAddress, 0) == 0 }
                }
            }
            require(
                ours == theirs,
                "pattern \(rule.pattern.debugDescription) \(ours ? "matches" : "does not match") "
                    + "\(String(decoding: name, as: UTF8.self).debugDescription); fnmatch says the opposite")
        }
    }
}
