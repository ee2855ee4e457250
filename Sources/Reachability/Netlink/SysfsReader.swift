#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads the sysfs facts the classifier needs and RTM_NEWLINK does not carry.
///
/// Never throws: sysfs entries come and go with the device (a link can vanish between the netlink
/// message and this read), so a missing or unreadable entry is just an unknown fact.
package struct SysfsReader: Sendable {
    /// Where sysfs is mounted; tests point this at a fake tree.
    package var root: String

    package init(root: String = "/sys") {
        self.root = root
    }

    /// uevent files are a few short lines; 4096 bytes (one sysfs page, the most a sysfs attribute can
    /// hold) bounds the read.
    package static let ueventLimit = 4096
    /// PATH_MAX: the longest link target readlink can return on Linux.
    package static let linkTargetLimit = 4096

    /// Facts for interface `name`. A name the kernel could not have given (empty, longer than 15 bytes,
    /// containing "/" or NUL, "." or "..") yields empty facts, so a hostile name cannot reach outside
    /// `ROOT/class/net`.
    package func deviceFacts(forInterface name: String) -> DeviceFacts {
        guard Self.isPlausibleInterfaceName(name) else { return DeviceFacts() }
        let directory = root + "/class/net/" + name
        return DeviceFacts(
            deviceType: Self.readUevent(directory + "/uevent").flatMap(Self.deviceType(fromUevent:)),
            hasPhy80211: access(directory + "/phy80211", F_OK) == 0,
            driver: Self.linkBasename(directory + "/device/driver")
        )
    }

    /// The kernel's own rules (`dev_valid_name`), minus the ones that cannot hurt a path.
    package static func isPlausibleInterfaceName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= InterfaceRule.maximumNameLength else { return false }
        guard name != ".", name != ".." else { return false }
        return !bytes.contains(UInt8(ascii: "/")) && !bytes.contains(0)
    }

    /// The value of the `DEVTYPE=` line, nil when there is none or it is empty.
    package static func deviceType(fromUevent bytes: [UInt8]) -> String? {
        let key = Array("DEVTYPE=".utf8)
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        where line.starts(with: key) {
            let value = line.dropFirst(key.count)
            return value.isEmpty ? nil : String(decoding: value, as: UTF8.self)
        }
        return nil
    }

    /// Up to `ueventLimit` bytes of the file, nil when it cannot be opened or read.
    package static func readUevent(_ path: String) -> [UInt8]? {
        // O_NONBLOCK: a FIFO planted in a fake or hostile tree must not hang the reader.
        guard let file = try? Descriptor(checking: open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), "open") else { return nil }
        var buffer = [UInt8](repeating: 0, count: ueventLimit)
        var filled = 0
        while filled < buffer.count {
            let count = buffer.withUnsafeMutableBytes { raw in
                read(file.rawValue, raw.baseAddress! + filled, raw.count - filled)
            }
            if count > 0 {
                filled += count
            } else if count == 0 {
                break
            } else if errno == EINTR {
                continue
            } else {
                return nil
            }
        }
        return Array(buffer[..<filled])
    }

    /// The last path component of a symlink's target, nil when it is not a readable symlink.
    package static func linkBasename(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: linkTargetLimit)
        let count = buffer.withUnsafeMutableBufferPointer { readlink(path, $0.baseAddress!, $0.count) }
        // A target filling the whole buffer may have been cut short: better no answer than a wrong one.
        guard count > 0, count < buffer.count else { return nil }
        let target = buffer[..<count].map { UInt8(bitPattern: $0) }
        let basename = target.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).last
        return basename.map { String(decoding: $0, as: UTF8.self) }
    }
}
