/// `[Metrics]` in reachd.conf: the node_exporter textfile is off until `TextfileDirectory=`
/// names a directory. (`/metrics` needs no key: reachd serves it when systemd passes it the
/// socket of reachd-metrics.socket.)
package struct MetricsSettings: Sendable, Hashable {
    /// Where `reachd.prom` is written; nil: no file, no timer.
    package var textfileDirectory: String?
    /// The heartbeat: the file is rewritten at least this often even when nothing changed, so
    /// its modification time (node_exporter's `node_textfile_mtime_seconds`) tells a live reachd
    /// from a dead one.
    package var textfileInterval: Duration = .seconds(60)

    package init() {}

    /// The file's name in the directory: node_exporter reads `*.prom`.
    package static let textfileName = "reachd.prom"
    /// A minute is node_exporter's usual scrape interval and then some; an hour still tells a dead reachd.
    package static let textfileIntervalRange: ClosedRange<Duration> = .seconds(5) ... .seconds(3600)
    /// After a change, more changes within this time go into the same write: a burst of
    /// netlink messages (a container host starting hundreds of veths) costs one write, not hundreds.
    package static let coalescing: Duration = .seconds(1)

    /// An absolute path without `.`/`..` components or control characters: the directory is
    /// opened by a daemon with a read-only view of the system, and the message should name it.
    package static func validate(directory text: String) -> String? {
        guard text.hasPrefix("/") else {
            return "'\(text)' is not an absolute path; expected a directory such as /var/lib/prometheus/node-exporter"
        }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            return "'\(text.debugDescription.dropFirst().dropLast())' contains a control character"
        }
        guard !text.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) else {
            return "'\(text)' has a . or .. component; give the directory's plain absolute path"
        }
        // PATH_MAX, less room for the file's own name.
        guard text.utf8.count <= 4096 - 64 else {
            return "the path is \(text.utf8.count) bytes long, more than \(4096 - 64)"
        }
        return nil
    }
}
