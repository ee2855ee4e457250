#if canImport(Glibc)
import Glibc
#endif

/// A configuration file someone else writes (resolv.conf, systemd-resolved's upstream list,
/// /etc/hosts), read on the loop's thread so that whatever sits at its path can never hold the
/// loop: a FIFO would block open(2) and read(2) until someone writes to it, and a symlink to
/// /dev/zero, or a file that keeps growing, never ends. So: opened with O_NONBLOCK (a FIFO
/// opens at once) and O_NOCTTY (a terminal never becomes ours), only a regular file is read
/// (stat before the open, so a device is never even opened, and fstat after it, since the path
/// may have been swapped in between), and never more than `limit` bytes. Symlinks are followed:
/// resolv.conf is one on most systems (into /run/systemd/resolve or /run/resolvconf), and what
/// they lead to passes the same checks.
package enum UntrustedFile {
    /// Why a file was not read. The description names the file and what it is, for a journal.
    package enum Refusal: Error, Equatable, CustomStringConvertible {
        /// Nothing at the path (or a dangling symlink): an absent file, not a fault.
        case missing(String)
        case unreadable(String, errno: Int32)
        /// `kind` is "a FIFO", "a character device", ...
        case notRegular(String, kind: String)
        case tooLarge(String, limit: Int)

        package var description: String {
            switch self {
            case let .missing(path): "\(path) does not exist"
            case let .unreadable(path, errno): "\(path) cannot be read: \(String(cString: strerror(errno)))"
            case let .notRegular(path, kind): "\(path) is \(kind), not a regular file"
            case let .tooLarge(path, limit): "\(path) exceeds \(limit) bytes"
            }
        }
    }

    /// The whole file, when it is a regular file of at most `limit` bytes.
    package static func contents(of path: String, limit: Int) -> Result<[UInt8], Refusal> {
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure(failure(path, errno)) }
        if let refusal = refusal(path, info, limit: limit) { return .failure(refusal) }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(failure(path, errno)) }
        let descriptor = Descriptor(fd)
        guard fstat(descriptor.rawValue, &info) == 0 else { return .failure(.unreadable(path, errno: errno)) }
        if let refusal = refusal(path, info, limit: limit) { return .failure(refusal) }
        // One byte past the limit tells a file that grew meanwhile from one that fits.
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var total = 0
        while total < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor.rawValue, $0.baseAddress! + total, $0.count - total) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return .failure(.unreadable(path, errno: errno)) }
            if count == 0 { break }
            total += count
        }
        guard total <= limit else { return .failure(.tooLarge(path, limit: limit)) }
        return .success(Array(bytes[..<total]))
    }

    private static func failure(_ path: String, _ error: Int32) -> Refusal {
        error == ENOENT || error == ENOTDIR ? .missing(path) : .unreadable(path, errno: error)
    }

    private static func refusal(_ path: String, _ info: stat, limit: Int) -> Refusal? {
        switch info.st_mode & S_IFMT {
        case S_IFREG: info.st_size > limit ? .tooLarge(path, limit: limit) : nil
        case S_IFIFO: .notRegular(path, kind: "a FIFO")
        case S_IFCHR: .notRegular(path, kind: "a character device")
        case S_IFBLK: .notRegular(path, kind: "a block device")
        case S_IFSOCK: .notRegular(path, kind: "a socket")
        case S_IFDIR: .notRegular(path, kind: "a directory")
        default: .notRegular(path, kind: "not a file")
        }
    }
}

/// What tells a file's versions apart cheaply (one stat, which never blocks, whatever the file
/// is): device, inode, size and change time. nil when the file cannot be stat'ed (then nothing
/// is cached). An atomic replacement (rename over) is a new inode; an edit in place changes the
/// size or the change time.
package struct FileIdentity: Equatable {
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var changedSeconds: Int
    package var changedNanoseconds: Int

    package init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        changedSeconds = info.st_ctim.tv_sec
        changedNanoseconds = info.st_ctim.tv_nsec
    }
}
