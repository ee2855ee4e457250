import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// The options every subcommand takes.
struct CommonOptions: ParsableArguments {
    @Flag(help: "Print JSON (lowerCamelCase D-Bus names) instead of text.")
    var json = false

    @Option(
        name: .customLong("netns"),
        help: ArgumentHelp(
            "Watch a network namespace: a NAME from /run/netns (like `ip -n NAME`), or a PATH to a namespace file.",
            valueName: "name-or-path"))
    var netns: String?

    @Option(
        name: .customLong("sysfs-root"),
        help: ArgumentHelp(
            "Read device facts from this directory instead of /sys (for tests with a fake tree).",
            valueName: "path", visibility: .hidden))
    var sysfsRoot: String?

    func validate() throws {
        if let netns { _ = try Self.namespacePath(for: netns) }
        if let sysfsRoot, !Self.isDirectory(sysfsRoot) {
            throw ValidationError("--sysfs-root '\(sysfsRoot)' is not a directory.")
        }
    }

    /// The monitor settings these options ask for.
    func configuration() throws -> MonitorConfiguration {
        var configuration = MonitorConfiguration()
        if let sysfsRoot { configuration.sysfsRoot = sysfsRoot }
        if let netns { configuration.namespacePath = try Self.namespacePath(for: netns) }
        return configuration
    }

    /// Opens the source of answers. For now always in-process; the D-Bus client goes first here
    /// once reachd serves it.
    func openSource() throws -> any ReachabilitySource {
        try InProcessSource(configuration: configuration())
    }

    /// Where `ip netns add` puts named namespaces.
    static let namedNamespaceDirectory = "/run/netns"

    /// `--netns` as a path: a value containing `/` is a path as given; anything else names a
    /// namespace in /run/netns. The file must exist.
    static func namespacePath(for value: String) throws -> String {
        let path: String
        if value.contains("/") {
            path = value
        } else {
            guard !value.isEmpty, value != ".", value != ".." else {
                throw ValidationError("--netns needs a namespace name (see `ip netns list`) or a path, not '\(value)'.")
            }
            path = namedNamespaceDirectory + "/" + value
        }
        guard access(path, F_OK) == 0 else {
            let reason = String(cString: strerror(errno))
            if value.contains("/") {
                throw ValidationError("--netns: cannot use namespace file '\(path)': \(reason).")
            }
            throw ValidationError(
                "--netns: no network namespace named '\(value)' (\(path): \(reason)); `ip netns list` shows the names.")
        }
        return path
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}

/// Reads a duration option (`--timeout 2s`) with the library's `DurationText`, for the commands
/// that take one (`check`, `wait`): `@Option(transform: parseDurationArgument) var timeout: Duration`.
/// ArgumentParser shows the thrown message, which names the text and the accepted forms.
@Sendable func parseDurationArgument(_ text: String) throws -> Duration {
    do {
        return try DurationText.parse(text)
    } catch {
        throw ValidationError(error.description)
    }
}
