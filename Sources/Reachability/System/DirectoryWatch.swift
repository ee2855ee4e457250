#if canImport(Glibc)
import Glibc
#endif

/// inotify on directories, for files that are written aside and renamed over, or replaced
/// whole (resolv.conf, networkd's leases): the file itself is never watched, its directory is,
/// for the events that mean a file in it changed. Non-blocking and close-on-exec; closed when
/// the last owner lets go.
package final class DirectoryWatch {
    /// Written and closed, moved in or out, created, deleted.
    package static let fileChanges = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE)

    private let descriptor: Descriptor
    private var buffer = [UInt8](repeating: 0, count: 4096)
    /// The descriptor to poll for reading.
    public var fd: Int32 { descriptor.rawValue }

    public init() throws(SystemError) {
        descriptor = try Descriptor(checking: inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)), "inotify_init1")
    }

    /// Follows the files in `directory`; the error when it cannot (a directory that does not
    /// exist, the user's watches used up).
    /// `appends`: also each write to a file held open (ISC dhclient appends each lease to its
    /// file and flushes it, never closing it).
    public func watch(_ directory: String, appends: Bool = false) throws(SystemError) {
        guard inotify_add_watch(fd, directory, Self.fileChanges | (appends ? UInt32(IN_MODIFY) : 0)) >= 0 else {
            throw SystemError("inotify_add_watch \(directory)", errno: errno)
        }
    }

    /// Reads every queued event: the names of the files that changed, and whether the kernel
    /// dropped events (its queue overflowed: anything may have changed).
    public func drain() -> (names: Set<String>, overflowed: Bool) {
        var names: Set<String> = []
        var overflowed = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return (names, overflowed) }
            buffer.withUnsafeBytes { bytes in
                var offset = 0
                let header = MemoryLayout<inotify_event>.size
                while offset + header <= count {
                    let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let nameBytes = bytes[(offset + header)..<min(count, offset + header + Int(event.len))]
                    names.insert(String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self))
                    if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { overflowed = true }
                    offset += header + Int(event.len)
                }
            }
        }
    }
}
