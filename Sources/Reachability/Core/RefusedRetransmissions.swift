/// The host's count of TCP retransmissions that failed inside it (`TcpExt TCPRetransFail` of
/// netstat): a firewall rule of the output or postrouting hook, or a queue discipline, dropped
/// the segment before it left. A drop beyond the host never shows in it, so it tells "the host's
/// own wall" from "the network beyond the gateway" for the stall detector's failing connections.
/// Read at each poll (a few kilobytes of procfs, which never blocks) through `UntrustedFile`.
///
/// procfs answers for the reading thread's namespace (`thread-self`), and the count is read only
/// while that is the watched one (`counts(_:)`): reachd's loop thread enters the namespace of
/// `--netns`, so the counters are the watched namespace's there as at home, and a loop that stays
/// outside the watched namespace reads none rather than another namespace's.
package enum RefusedRetransmissions {
    package static let path = "/proc/thread-self/net/netstat"
    /// The file holds two lines per protocol group, about 4 KB on Linux 6.
    package static let limit = 32 << 10
    package static let field = "TCPRetransFail"

    /// The count of the namespace at `namespacePath` (nil: the calling thread's own), read when the
    /// calling thread is in it; nil otherwise, or when the count cannot be read.
    package static func counts(_ namespacePath: String?) -> UInt64? {
        guard namespacePath.map(NetworkNamespace.holdsCallingThread) ?? true else { return nil }
        return read()
    }

    /// The count now; nil when the file or the field is not there (an old kernel, no procfs).
    package static func read(_ path: String = path) -> UInt64? {
        guard case let .success(bytes) = UntrustedFile.contents(of: path, limit: limit) else { return nil }
        return parse(bytes)
    }

    /// Finds `field` in the `TcpExt:` header line and takes the number at its place in the
    /// `TcpExt:` line after it. Anything else, or a value that is not a number, is nil.
    package static func parse(_ bytes: [UInt8]) -> UInt64? {
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        let prefix = Array("TcpExt:".utf8)
        var index = 0
        while index + 1 < lines.count {
            let names = lines[index].split(separator: UInt8(ascii: " "))
            let values = lines[index + 1].split(separator: UInt8(ascii: " "))
            guard names.first.map(Array.init) == prefix, values.first.map(Array.init) == prefix else {
                index += 1
                continue
            }
            guard let column = names.firstIndex(where: { Array($0) == Array(field.utf8) }), column < values.count,
                let text = String(validating: values[column], as: UTF8.self)
            else { return nil }
            return UInt64(text)
        }
        return nil
    }
}
