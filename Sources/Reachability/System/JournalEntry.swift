import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// Structured journal entries (`REACHD_STATE=offline`, a fixed `MESSAGE_ID`), sent as journald's
/// native protocol: one datagram to /run/systemd/journal/socket, each field `NAME=value\n`.
/// Written here rather than through `sd_journal_sendv`, whose socket is blocking (its sendmsg
/// waits while journald's queue is full): this one is sent with MSG_DONTWAIT, so a slow or
/// stuck journald costs the entry, never the loop. Without journald (no socket) nothing is sent.
package final class JournalEntry {
    /// The native protocol's socket (systemd-journald.socket).
    package static let socketPath = "/run/systemd/journal/socket"
    private let fd: Int32
    private var address = sockaddr_un()
    /// Entries journald did not take (its queue full, or it went away), for the debug log.
    package private(set) var dropped = 0

    /// nil when there is no journald to send to.
    package init?(socketPath: String = JournalEntry.socketPath) {
        guard access(socketPath, W_OK) == 0 else { return nil }
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            let bytes = Array(socketPath.utf8.prefix(path.count - 1))
            path.copyBytes(from: bytes)
        }
    }

    deinit { close(fd) }

    /// Sends one entry; a value holding a newline goes in the protocol's length-prefixed form.
    /// Returns false when journald did not take it (never waits for it to).
    @discardableResult
    package func send(_ fields: [(String, String)]) -> Bool {
        var datagram: [UInt8] = []
        for (name, value) in fields { Self.append(name, value, to: &datagram) }
        let sent = datagram.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        if sent < 0 { dropped += 1 }
        return sent >= 0
    }

    /// One field in journald's native format: `NAME=value\n`, or, when the value holds a
    /// newline, `NAME\n`, its length as 64-bit little-endian, the value, `\n`.
    package static func append(_ name: String, _ value: String, to datagram: inout [UInt8]) {
        datagram += name.utf8
        if value.utf8.contains(UInt8(ascii: "\n")) {
            datagram.append(UInt8(ascii: "\n"))
            withUnsafeBytes(of: UInt64(value.utf8.count).littleEndian) { datagram += $0 }
        } else {
            datagram.append(UInt8(ascii: "="))
        }
        datagram += value.utf8
        datagram.append(UInt8(ascii: "\n"))
    }
}
