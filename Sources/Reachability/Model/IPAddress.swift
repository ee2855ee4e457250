#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address, stored by value in network byte order.
public enum IPAddress: Hashable, Sendable {
    case v4(UInt32)
    /// The 16 bytes as two big-endian halves, so the type stays trivially hashable.
    case v6(UInt64, UInt64)

    public static let anyV4 = IPAddress.v4(0)
    public static let anyV6 = IPAddress.v6(0, 0)

    public var family: AddressFamily {
        switch self {
        case .v4: .ipv4
        case .v6: .ipv6
        }
    }

    public var bitWidth: Int {
        switch self {
        case .v4: 32
        case .v6: 128
        }
    }

    /// Builds an address from its wire bytes (4 or 16); nil for any other length.
    public init?<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        switch bytes.count {
        case 4:
            self = .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case 16:
            let hi = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let lo = bytes.dropFirst(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            self = .v6(hi, lo)
        default:
            return nil
        }
    }

    /// The wire bytes, most significant first.
    public var bytes: [UInt8] {
        switch self {
        case .v4(let v):
            return (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * $0)) }
        case .v6(let hi, let lo):
            return (0..<8).map { UInt8(truncatingIfNeeded: hi >> (56 - 8 * $0)) }
                + (0..<8).map { UInt8(truncatingIfNeeded: lo >> (56 - 8 * $0)) }
        }
    }

    /// Parses the textual forms inet_pton(3) accepts: dotted quad, or RFC 4291 IPv6.
    /// No scope suffix (`%eth0`) and no host names: see `AddressTarget` for those.
    public init?(_ text: String) {
        // inet_pton reads a C string: a NUL would end the text early and `1.2.3.4\0junk` pass.
        guard !text.utf8.contains(0) else { return nil }
        /// inet_pton into `raw` (an `in_addr` or `in6_addr`), read back as an address.
        func parse<Raw>(_ family: Int32, into raw: Raw) -> IPAddress? {
            var raw = raw
            guard withUnsafeMutableBytes(of: &raw, { inet_pton(family, text, $0.baseAddress) }) == 1 else { return nil }
            return withUnsafeBytes(of: &raw) { IPAddress(bytes: $0) }
        }
        guard let parsed = text.contains(":") ? parse(AF_INET6, into: in6_addr()) : parse(AF_INET, into: in_addr()) else { return nil }
        self = parsed
    }

    public var isUnspecified: Bool { self == .anyV4 || self == .anyV6 }

    /// The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
    public var unmappedV4: IPAddress? {
        if case .v6(0, let lo) = self, lo >> 32 == 0xFFFF { return .v4(UInt32(truncatingIfNeeded: lo)) }
        return nil
    }

    /// IPv4 loopback (127/8) or IPv6's `::1`.
    public var isLoopback: Bool {
        switch self {
        case .v4(let v): v >> 24 == 0x7F
        case .v6(let hi, let lo): hi == 0 && lo == 1
        }
    }

    /// IPv6 link-local (fe80::/10) or IPv4 link-local (169.254/16).
    public var isLinkLocal: Bool {
        switch self {
        case .v4(let v): v >> 16 == 0xA9FE
        case .v6(let hi, _): hi >> 54 == 0x3FA
        }
    }

    /// Whether the first `length` bits equal those of `other` (same family only).
    public func hasPrefix(_ other: IPAddress, length: Int) -> Bool {
        switch (self, other) {
        case (.v4(let a), .v4(let b)):
            guard length > 0 else { return true }
            let mask: UInt32 = length >= 32 ? .max : ~(UInt32.max >> UInt32(length))
            return a & mask == b & mask
        case (.v6(let ah, let al), .v6(let bh, let bl)):
            guard length > 0 else { return true }
            if length <= 64 {
                let mask: UInt64 = length == 64 ? .max : ~(UInt64.max >> UInt64(length))
                return ah & mask == bh & mask
            }
            let rest = min(length, 128) - 64
            let mask: UInt64 = rest == 64 ? .max : ~(UInt64.max >> UInt64(rest))
            return ah == bh && al & mask == bl & mask
        default:
            return false
        }
    }
}

extension IPAddress: CustomStringConvertible {
    /// The canonical text form (RFC 5952 for IPv6), as inet_ntop(3) writes it.
    public var description: String {
        var bytes = self.bytes
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok = bytes.withUnsafeMutableBytes { raw in
            inet_ntop(family, raw.baseAddress, &out, socklen_t(out.count)) != nil
        }
        precondition(ok, "inet_ntop cannot fail for a 4 or 16 byte address")
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

// MARK: socket addresses (sockaddr_in, sockaddr_in6)

extension IPAddress {
    /// Calls `body` with `self:port` as a sockaddr_in or sockaddr_in6 (with `scope`, the
    /// interface index of a link-local IPv6 address) and its length, for bind(2) and connect(2).
    public func withSocketAddress<R>(port: UInt16, scope: UInt32 = 0, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch self {
        case let .v4(value):
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            socketAddress.sin_addr.s_addr = value.bigEndian
            return withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .v6:
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = port.bigEndian
            socketAddress.sin6_scope_id = scope
            let bytes = self.bytes
            withUnsafeMutableBytes(of: &socketAddress.sin6_addr) { raw in
                for (index, byte) in bytes.enumerated() where index < raw.count { raw[index] = byte }
            }
            return withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// The address, port and IPv6 scope of the socket address in `bytes` (as the kernel or a C
    /// library hands one over, with its length); nil for a family other than AF_INET and
    /// AF_INET6, or bytes too few for the family's structure. Reads nothing past `bytes`.
    public static func fromSocketAddress(_ bytes: UnsafeRawBufferPointer) -> (address: IPAddress, port: UInt16, scope: UInt32)? {
        guard bytes.count >= MemoryLayout<sa_family_t>.size, let base = bytes.baseAddress else { return nil }
        switch Int32(base.loadUnaligned(as: sa_family_t.self)) {
        case AF_INET where bytes.count >= MemoryLayout<sockaddr_in>.size:
            let raw = base.loadUnaligned(as: sockaddr_in.self)
            return (.v4(UInt32(bigEndian: raw.sin_addr.s_addr)), UInt16(bigEndian: raw.sin_port), 0)
        case AF_INET6 where bytes.count >= MemoryLayout<sockaddr_in6>.size:
            var raw = base.loadUnaligned(as: sockaddr_in6.self)
            guard let address = withUnsafeBytes(of: &raw.sin6_addr, { IPAddress(bytes: $0) }) else { return nil }
            return (address, UInt16(bigEndian: raw.sin6_port), raw.sin6_scope_id)
        default:
            return nil
        }
    }
}

/// An address with a prefix length: a subnet, or an interface address with its netmask.
public struct IPPrefix: Hashable, Sendable, CustomStringConvertible {
    public var address: IPAddress
    public var length: UInt8

    public init(_ address: IPAddress, length: UInt8) {
        self.address = address
        self.length = length
    }

    public func contains(_ other: IPAddress) -> Bool {
        other.hasPrefix(address, length: Int(length))
    }

    public var isDefault: Bool { length == 0 }

    public var description: String { "\(address)/\(length)" }

    /// Parses `description`'s form, "ADDRESS/LENGTH"; nil for anything else.
    public init?(_ text: String) {
        guard let slash = text.lastIndex(of: "/"), let address = IPAddress(String(text[..<slash])),
            let length = UInt8(text[text.index(after: slash)...]), Int(length) <= address.bitWidth
        else { return nil }
        self.init(address, length: length)
    }
}
