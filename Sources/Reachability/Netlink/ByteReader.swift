/// Bounds-checked little reads over untrusted bytes. Every read returns nil past the end
/// instead of trapping, so a lying length in a netlink message is an error value, not a crash.
/// This is the only place the netlink codec touches raw memory.
package struct ByteReader {
    private let bytes: UnsafeRawBufferPointer

    package init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    package var count: Int { bytes.count }

    /// A native-endian integer at `offset` (netlink headers are in host byte order).
    package func integer<T: FixedWidthInteger>(at offset: Int, as: T.Type = T.self) -> T? {
        guard offset >= 0, offset <= bytes.count - MemoryLayout<T>.size else { return nil }
        return bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
    }

    /// A copy of `length` bytes at `offset`.
    package func bytes(at offset: Int, length: Int) -> [UInt8]? {
        guard offset >= 0, length >= 0, offset <= bytes.count - length else { return nil }
        return Array(bytes[offset..<(offset + length)])
    }

    /// A reader over a sub-range; nil when the range does not lie inside this one.
    package func slice(at offset: Int, length: Int) -> ByteReader? {
        guard offset >= 0, length >= 0, offset <= bytes.count - length else { return nil }
        return ByteReader(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]))
    }
}

/// Netlink aligns headers and attributes to 4 bytes (NLMSG_ALIGN, RTA_ALIGN).
@inline(__always)
package func netlinkAlign(_ length: Int) -> Int { (length + 3) & ~3 }
