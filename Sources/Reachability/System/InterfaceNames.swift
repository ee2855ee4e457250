#if canImport(Glibc)
import Glibc
#endif

/// A link's name from its index and back, as the kernel has them now (an ioctl each, which never
/// blocks): for files other programs name after one or the other.
package enum InterfaceNames {
    /// The name of link `index`; nil when there is no such link.
    package static func name(of index: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(bitPattern: index), &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    }

    /// Whether a link is named `name` now.
    package static func exists(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count < Int(IF_NAMESIZE) && if_nametoindex(name) != 0
    }
}
