internal import Reachability
#if canImport(Glibc)
import Glibc
#endif

// BSD socket addresses start with a length byte; Linux's do not. Code written for Apple
// platforms sets it before passing an address (`zero.sa_len = UInt8(MemoryLayout<sockaddr>.size)`),
// so these accept a write and read back the structure's size, which is what such code stores.
// The Create functions never read them: the family says how long an address is.

extension sockaddr {
    /// BSD's length byte: reads as `MemoryLayout<sockaddr>.size`; writes are accepted and dropped.
    public var sa_len: UInt8 {
        get { UInt8(MemoryLayout<sockaddr>.size) }
        set {}
    }
}

extension sockaddr_in {
    /// BSD's length byte: reads as `MemoryLayout<sockaddr_in>.size`; writes are accepted and dropped.
    public var sin_len: UInt8 {
        get { UInt8(MemoryLayout<sockaddr_in>.size) }
        set {}
    }
}

extension sockaddr_in6 {
    /// BSD's length byte: reads as `MemoryLayout<sockaddr_in6>.size`; writes are accepted and dropped.
    public var sin6_len: UInt8 {
        get { UInt8(MemoryLayout<sockaddr_in6>.size) }
        set {}
    }
}

/// The text the library takes for a socket address: `192.0.2.1`, `2001:db8::1`, `fe80::1%2`
/// (a link-local scope by interface index). nil for a family other than IPv4 and IPv6.
///
/// An AF_INET6 address must point at a whole `sockaddr_in6` (28 bytes), as it must for
/// Apple's functions and for connect(2).
func addressText(_ address: UnsafePointer<sockaddr>) -> String? {
    // Apple's functions take no length: the family says how long the address is.
    let length = Int32(address.pointee.sa_family) == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size
    guard let parsed = IPAddress.fromSocketAddress(UnsafeRawBufferPointer(start: address, count: length)) else { return nil }
    return parsed.scope == 0 ? parsed.address.description : "\(parsed.address)%\(parsed.scope)"
}
