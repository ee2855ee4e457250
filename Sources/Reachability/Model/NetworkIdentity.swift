/// This host's secret for naming networks (`NetworkIdentity`): 128 bits no other host shares,
/// the same across reboots and for every process of the host (reachd and an in-process monitor
/// name a network alike). Made from /etc/machine-id by `HostKey` (System), never shown.
package struct NetworkKey: Hashable, Sendable {
    public var k0: UInt64
    public var k1: UInt64

    public init(k0: UInt64, k1: UInt64) {
        self.k0 = k0
        self.k1 = k1
    }

    /// No secret: the names are still stable, but anyone could compute them.
    public static let none = NetworkKey(k0: 0, k1: 0)
}

/// A name for the network a link is attached to, as Firefox's network ID and Android's network
/// keys use one: the same on that network across address renewals and reboots, different on
/// another, and saying nothing of it to whoever reads it. SipHash-2-4 (a keyed pseudo-random
/// function) of the gateway's link-layer address and the link's prefix, keyed by this host's
/// `NetworkKey`: without the key, the name cannot be tied back to a router or a subnet, nor
/// matched between two hosts.
package enum NetworkIdentity {
    /// 16 hex digits naming `facts` (the gateway's link-layer address, the prefix and its length).
    public static func name(of facts: [UInt8], key: NetworkKey) -> String {
        let value = sipHash24(facts, key: key)
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// SipHash-2-4 (Aumasson and Bernstein, 2012) of `message`.
    package static func sipHash24(_ message: [UInt8], key: NetworkKey) -> UInt64 {
        var v0: UInt64 = 0x736f_6d65_7073_6575 ^ key.k0
        var v1: UInt64 = 0x646f_7261_6e64_6f6d ^ key.k1
        var v2: UInt64 = 0x6c79_6765_6e65_7261 ^ key.k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ key.k1
        func round() {
            v0 &+= v1; v1 = v1.rotatedLeft(13); v1 ^= v0; v0 = v0.rotatedLeft(32)
            v2 &+= v3; v3 = v3.rotatedLeft(16); v3 ^= v2
            v0 &+= v3; v3 = v3.rotatedLeft(21); v3 ^= v0
            v2 &+= v1; v1 = v1.rotatedLeft(17); v1 ^= v2; v2 = v2.rotatedLeft(32)
        }
        func word(_ bytes: ArraySlice<UInt8>) -> UInt64 {
            bytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        }
        let whole = message.count / 8 * 8
        var offset = 0
        while offset < whole {
            let m = word(message[offset..<offset + 8])
            v3 ^= m
            round(); round()
            v0 ^= m
            offset += 8
        }
        let last = word(message[whole...]) | UInt64(truncatingIfNeeded: message.count) << 56
        v3 ^= last
        round(); round()
        v0 ^= last
        v2 ^= 0xff
        round(); round(); round(); round()
        return v0 ^ v1 ^ v2 ^ v3
    }
}

extension UInt64 {
    fileprivate func rotatedLeft(_ count: UInt64) -> UInt64 { self << count | self >> (64 - count) }
}
