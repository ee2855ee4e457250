import Foundation
import Testing
@testable import Reachability

/// IPAddress to and from sockaddr_in / sockaddr_in6: the one conversion HTTPExchange, the
/// resolver's socket calls and SystemConfiguration's C functions use.
@Suite("Socket addresses")
struct SocketAddressTests {
    /// The bytes `withSocketAddress` hands to bind(2) / connect(2).
    static func bytes(of address: IPAddress, port: UInt16, scope: UInt32 = 0) -> [UInt8] {
        address.withSocketAddress(port: port, scope: scope) { pointer, length in
            Array(UnsafeRawBufferPointer(start: pointer, count: Int(length)))
        }
    }

    @Test(arguments: [
        ("192.0.2.1", UInt16(80), UInt32(0)), ("0.0.0.0", 0, 0), ("255.255.255.255", 65535, 0),
        ("2001:db8::1", 8204, 0), ("fe80::1", 53, 7), ("::", 0, 0),
    ])
    func aSocketAddressReadsBackAsWritten(_ text: String, _ port: UInt16, _ scope: UInt32) throws {
        let address = try #require(IPAddress(text))
        let bytes = Self.bytes(of: address, port: port, scope: scope)
        #expect(bytes.count == (address.family == .ipv4 ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size))
        let parsed = bytes.withUnsafeBytes { IPAddress.fromSocketAddress($0) }
        #expect(parsed?.address == address && parsed?.port == port && parsed?.scope == scope, "\(String(describing: parsed))")
        // Network byte order on the wire: the port's high byte first, after the family.
        #expect(bytes[2] == UInt8(port >> 8) && bytes[3] == UInt8(port & 0xFF))
    }

    @Test func anyLengthShortOfTheFamilysStructureIsNil() throws {
        for address in [IPAddress("192.0.2.1")!, IPAddress("2001:db8::1")!] {
            let bytes = Self.bytes(of: address, port: 80)
            for length in 0..<bytes.count {
                let parsed = bytes.withUnsafeBytes { IPAddress.fromSocketAddress(UnsafeRawBufferPointer(rebasing: $0.prefix(length))) }
                #expect(parsed == nil, "\(address) cut to \(length) bytes read as \(String(describing: parsed))")
            }
        }
        #expect(IPAddress.fromSocketAddress(UnsafeRawBufferPointer(start: nil, count: 0)) == nil)
    }

    @Test func otherFamiliesAreNil() {
        for family in [AF_UNSPEC, AF_UNIX, AF_NETLINK, AF_PACKET, 0xFFFF] {
            var bytes = [UInt8](repeating: 0x5A, count: 128)
            withUnsafeBytes(of: sa_family_t(family)) { for (index, byte) in $0.enumerated() { bytes[index] = byte } }
            #expect(bytes.withUnsafeBytes { IPAddress.fromSocketAddress($0) } == nil, "family \(family)")
        }
    }

    /// Garbage of every length up to 64 bytes: never a crash, never a read past the bytes (the
    /// sanitizer runs would say), and an answer only for AF_INET / AF_INET6 at full length.
    @Test func garbageNeverCrashesAndOnlyWholeInetAddressesRead() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let length = Int.random(in: 0...64, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if length >= 2, Bool.random(using: &generator) {
                let family = sa_family_t([AF_INET, AF_INET6].randomElement(using: &generator)!)
                withUnsafeBytes(of: family) { bytes[0] = $0[0]; bytes[1] = $0[1] }
            }
            // A buffer of exactly `length` bytes, so reading past it is out of bounds.
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(length, 1), alignment: 1)
            defer { buffer.deallocate() }
            buffer.copyBytes(from: bytes)
            let parsed = IPAddress.fromSocketAddress(UnsafeRawBufferPointer(rebasing: buffer.prefix(length)))
            let family = length >= 2 ? Int32(UInt16(bytes[0]) | UInt16(bytes[1]) << 8) : -1
            let whole = (family == AF_INET && length >= 16) || (family == AF_INET6 && length >= 28)
            #expect((parsed != nil) == whole, "\(bytes)")
            if family == AF_INET, let parsed {
                #expect(parsed.address == IPAddress(bytes: bytes[4..<8]))
            }
        }
    }
}
