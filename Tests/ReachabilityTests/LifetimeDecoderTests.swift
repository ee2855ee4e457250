import Foundation
import Testing
@testable import Reachability

// RTA_CACHEINFO and IFA_CACHEINFO in NetlinkDecoder: a route's expiry (`rta_expires`, clock ticks
// of 1/100 s, negative once past) and an address's valid lifetime (`ifa_valid`, seconds, all ones
// for forever) become deadlines from the time the datagram was read; short or hostile values are
// errors, never traps. Little-endian fixtures, every field spelled out.

private enum Bytes {
    static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    static func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: netlinkAlign(bytes.count) - bytes.count) }
    static func attribute(_ type: UInt16, _ value: [UInt8]) -> [UInt8] { padded(u16(UInt16(4 + value.count)) + u16(type) + value) }
    static func message(type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        let body = padded(payload)
        return u32(UInt32(16 + body.count)) + u16(type) + u16(0) + u32(0) + u32(0) + body
    }

    /// struct rta_cacheinfo: clntref, lastuse, expires (s32, ticks), error, used, id, ts, tsage.
    static func routeCacheInfo(expires ticks: Int32) -> [UInt8] {
        u32(0) + u32(0) + u32(UInt32(bitPattern: ticks)) + u32(0) + u32(0) + u32(0) + u32(0) + u32(0)
    }

    /// RTM_NEWROUTE: default via fe80::1 dev 2, proto ra, metric 1024, with `cacheInfo` when given.
    static func raDefaultRoute(cacheInfo: [UInt8]?) -> [UInt8] {
        // struct rtmsg: AF_INET6, dst_len 0, src_len 0, tos 0, table main, proto ra (9), scope universe, RTN_UNICAST; flags 0
        let header: [UInt8] = [10, 0, 0, 0, 254, 9, 0, 1] + u32(0)
        let gateway: [UInt8] = [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]
        var attributes = attribute(RT.routeGateway, gateway) + attribute(RT.routeOutputInterface, u32(2)) + attribute(RT.routePriority, u32(1024))
        if let cacheInfo { attributes += attribute(RT.routeCacheInfo, cacheInfo) }
        return message(type: RT.newRoute, header + attributes)
    }

    /// struct ifa_cacheinfo: ifa_prefered, ifa_valid (seconds), cstamp, tstamp.
    static func addressCacheInfo(preferred: UInt32, valid: UInt32) -> [UInt8] { u32(preferred) + u32(valid) + u32(100) + u32(200) }

    /// RTM_NEWADDR: 2001:db8:1::2/64 on link 2, SLAAC (no IFA_F_PERMANENT), with `cacheInfo` when given.
    static func slaacAddress(cacheInfo: [UInt8]?) -> [UInt8] {
        // struct ifaddrmsg: AF_INET6, prefixlen 64, flags 0, scope universe, index 2
        let header: [UInt8] = [10, 64, 0, 0] + u32(2)
        let address: [UInt8] = [0x20, 0x01, 0x0D, 0xB8, 0, 1] + [UInt8](repeating: 0, count: 9) + [2]
        var attributes = attribute(RT.addressAddress, address)
        if let cacheInfo { attributes += attribute(RT.addressCacheInfo, cacheInfo) }
        return message(type: RT.newAddress, header + attributes)
    }
}

@Suite struct LifetimeDecoderTests {
    static func route(_ bytes: [UInt8], at received: ContinuousClock.Instant) throws -> Route {
        let batch = NetlinkDecoder.decode(bytes, received: received)
        #expect(batch.errors.isEmpty)
        guard case let .route(route) = try #require(batch.messages.first).message else { throw Unexpected() }
        return route
    }

    static func address(_ bytes: [UInt8], at received: ContinuousClock.Instant) throws -> Address {
        let batch = NetlinkDecoder.decode(bytes, received: received)
        #expect(batch.errors.isEmpty)
        guard case let .address(address) = try #require(batch.messages.first).message else { throw Unexpected() }
        return address
    }

    struct Unexpected: Error {}

    @Test func rtaExpires_isADeadlineFromTheReceiveTime_inHundredthsOfASecond() throws {
        let received = ContinuousClock.now
        #expect(try Self.route(Bytes.raDefaultRoute(cacheInfo: Bytes.routeCacheInfo(expires: 800)), at: received).expiry == received + .seconds(8))
        #expect(try Self.route(Bytes.raDefaultRoute(cacheInfo: Bytes.routeCacheInfo(expires: 1)), at: received).expiry == received + .milliseconds(10))
        // `expires -2sec`: the kernel keeps a lapsed route until its garbage collection.
        #expect(try Self.route(Bytes.raDefaultRoute(cacheInfo: Bytes.routeCacheInfo(expires: -200)), at: received).expiry == received - .seconds(2))
        #expect(try Self.route(Bytes.raDefaultRoute(cacheInfo: Bytes.routeCacheInfo(expires: .min)), at: received).expiry != nil)
        // 0: no expiry (a static route's cache info), as is no cache info at all.
        #expect(try Self.route(Bytes.raDefaultRoute(cacheInfo: Bytes.routeCacheInfo(expires: 0)), at: received).expiry == nil)
        let plain = try Self.route(Bytes.raDefaultRoute(cacheInfo: nil), at: received)
        #expect(plain.expiry == nil)
        // The deadline is not the route's identity: a renewed lifetime is the same route.
        #expect(try Self.route(Bytes.raDefaultRoute(cacheInfo: Bytes.routeCacheInfo(expires: 800)), at: received).key == plain.key)
    }

    @Test func ifaValid_isADeadlineInSeconds_allOnesForForever() throws {
        let received = ContinuousClock.now
        let slaac = try Self.address(Bytes.slaacAddress(cacheInfo: Bytes.addressCacheInfo(preferred: 10, valid: 20)), at: received)
        #expect(slaac.validUntil == received + .seconds(20))
        #expect(try Self.address(Bytes.slaacAddress(cacheInfo: Bytes.addressCacheInfo(preferred: 0, valid: 0)), at: received).validUntil == received)
        #expect(try Self.address(Bytes.slaacAddress(cacheInfo: Bytes.addressCacheInfo(preferred: .max, valid: .max)), at: received).validUntil == nil)
        #expect(try Self.address(Bytes.slaacAddress(cacheInfo: nil), at: received).validUntil == nil)
        #expect(slaac.key == (try Self.address(Bytes.slaacAddress(cacheInfo: nil), at: received)).key)
    }

    @Test func shortCacheInfo_isAnError_ofThatAttribute_neverATrap() {
        for length in 0..<32 {
            let bytes = Bytes.raDefaultRoute(cacheInfo: Array(Bytes.routeCacheInfo(expires: 800).prefix(length)))
            let batch = NetlinkDecoder.decode(bytes)
            #expect(batch.messages.isEmpty && batch.errors.count == 1, "rta_cacheinfo of \(length) bytes")
            if case let .invalidAttributeValue(_, attribute, _) = batch.errors.first { #expect(attribute == RT.routeCacheInfo) }
        }
        for length in 0..<16 {
            let bytes = Bytes.slaacAddress(cacheInfo: Array(Bytes.addressCacheInfo(preferred: 10, valid: 20).prefix(length)))
            let batch = NetlinkDecoder.decode(bytes)
            #expect(batch.messages.isEmpty && batch.errors.count == 1, "ifa_cacheinfo of \(length) bytes")
            if case let .invalidAttributeValue(_, attribute, _) = batch.errors.first { #expect(attribute == RT.addressCacheInfo) }
        }
        // Longer than today's struct (a future kernel's): the fields known are read.
        let longer = Bytes.raDefaultRoute(cacheInfo: Bytes.routeCacheInfo(expires: 800) + Bytes.u32(7))
        #expect(NetlinkDecoder.decode(longer).errors.isEmpty)
    }

    /// The fuzzer's hand-written seeds (Fuzz/Corpus/netlink/seed-route-*, seed-address-*) are
    /// what they say: the fuzzer starts inside the lifetimes.
    @Test func theFuzzSeeds_decodeToTheirLifetimes() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/Corpus/netlink")
        func seed(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: corpus.appendingPathComponent(name))) }
        let received = ContinuousClock.now
        #expect(try Self.route(seed("seed-route-ra-lapsed"), at: received).expiry == received - .seconds(2))
        #expect(try Self.route(seed("seed-route-ra-expiring"), at: received).expiry == received + .seconds(8))
        let address = try Self.address(seed("seed-address-optimistic-expiring"), at: received)
        #expect(address.validUntil == received + .seconds(20) && address.flags.contains(.optimistic) && address.isUsable)
    }

    @Test func garbage_inAndAroundTheCacheInfo_neverTraps() {
        var random = DifferentialRoutingTests.Random(state: 30)
        let fixtures = [
            Bytes.raDefaultRoute(cacheInfo: Bytes.routeCacheInfo(expires: 800)),
            Bytes.slaacAddress(cacheInfo: Bytes.addressCacheInfo(preferred: 10, valid: 20)),
        ]
        let received = ContinuousClock.now
        for round in 0..<20_000 {
            var bytes = random.pick(fixtures)
            // Keep the netlink header's length most of the time, so the attributes are what is hit.
            for _ in 0...random.below(6) {
                let at = random.chance(80) ? 16 + random.below(bytes.count - 16) : random.below(bytes.count)
                bytes[at] = UInt8(truncatingIfNeeded: random.next())
            }
            if random.chance(10) { bytes = Array(bytes.prefix(random.below(bytes.count))) }
            let batch = NetlinkDecoder.decode(bytes, received: received)
            #expect(batch.messages.count + batch.errors.count <= 2, "round \(round)")
            for decoded in batch.messages {
                switch decoded.message {
                case let .route(route), let .routeRemoved(route):
                    // At most INT32_MAX hundredths of a second either way: about 248 days.
                    if let expiry = route.expiry { #expect(abs((expiry - received) / .seconds(1)) < 21_474_837, "round \(round)") }
                case let .address(address), let .addressRemoved(address):
                    if let end = address.validUntil { #expect(end >= received, "round \(round)") }
                default: break
                }
            }
        }
    }
}
