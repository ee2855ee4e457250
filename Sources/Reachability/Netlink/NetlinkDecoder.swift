/// Decodes datagrams read from an rtnetlink socket. Pure and bounds-checked: any truncated,
/// misaligned or lying length yields a `NetlinkDecodingError`, never a trap or an
/// out-of-bounds read.
package enum NetlinkDecoder {
    /// The messages of one datagram and the errors met on the way. A message whose own content
    /// is bad is skipped and reported; bad framing ends the datagram (nothing after it can be trusted).
    package struct Batch: Sendable {
        package var messages: [DecodedMessage] = []
        package var errors: [NetlinkDecodingError] = []
    }

    /// `acceptClonedRoutes`: route lookups (RTM_GETROUTE with RTA_DST) answer with a route the
    /// kernel marks RTM_F_CLONED; in dumps and notifications such routes are cache entries to skip.
    /// `received`: when the datagram was read; the kernel gives lifetimes as what remains of
    /// them, which become deadlines from then (`Route.expiry`, `Address.validUntil`).
    package static func decode(
        _ datagram: UnsafeRawBufferPointer, received: ContinuousClock.Instant = .now, acceptClonedRoutes: Bool = false
    ) -> Batch {
        var batch = Batch()
        let broken = NetlinkHeader.forEachMessage(in: ByteReader(datagram), failing: NetlinkDecodingError.self) { header, payload in
            do throws(NetlinkDecodingError) {
                let message = try decodeMessage(
                    type: header.type, payload: payload, received: received, acceptClonedRoutes: acceptClonedRoutes)
                batch.messages.append(DecodedMessage(header: header, message: message))
            } catch {
                batch.errors.append(error)
            }
        }
        if let broken { batch.errors.append(broken) }
        return batch
    }

    package static func decode(_ datagram: [UInt8], received: ContinuousClock.Instant = .now) -> Batch {
        datagram.withUnsafeBytes { decode($0, received: received) }
    }

    package static func decodeMessage(
        type: UInt16, payload: ByteReader, received: ContinuousClock.Instant = .now, acceptClonedRoutes: Bool = false
    ) throws(NetlinkDecodingError) -> RoutingMessage {
        switch type {
        case RT.done: return .done
        case RT.error: return .error(try NetlinkHeader.errorCode(payload, failing: NetlinkDecodingError.self))
        case RT.newLink, RT.delLink:
            guard let link = try decodeLink(type: type, payload: payload) else { return .ignored(type: type) }
            return type == RT.newLink ? .link(link) : .linkRemoved(link)
        case RT.newAddress, RT.delAddress:
            guard let address = try decodeAddress(type: type, payload: payload, received: received) else { return .ignored(type: type) }
            return type == RT.newAddress ? .address(address) : .addressRemoved(address)
        case RT.newRoute, RT.delRoute:
            guard let route = try decodeRoute(type: type, payload: payload, received: received, acceptCloned: acceptClonedRoutes) else { return .ignored(type: type) }
            return type == RT.newRoute ? .route(route) : .routeRemoved(route)
        case RT.newRule, RT.delRule:
            // struct fib_rule_hdr: family, dst_len, src_len, tos, table, res1, res2, action (u8), flags u32.
            guard payload.count >= ruleHeaderSize else {
                throw .truncatedPayload(messageType: type, needed: ruleHeaderSize, available: payload.count)
            }
            return .ruleChanged
        case RT.newNeighbour, RT.delNeighbour:
            guard let neighbour = try decodeNeighbour(type: type, payload: payload) else { return .ignored(type: type) }
            return type == RT.newNeighbour ? .neighbour(neighbour) : .neighbourRemoved(neighbour)
        case RT.newNDUserOption:
            return try decodeNDUserOption(payload: payload) ?? .ignored(type: type)
        default:
            return .ignored(type: type)
        }
    }

    package static let ruleHeaderSize = 12

    // MARK: links

    /// `struct ifinfomsg`: family u8, pad u8, type u16, index i32, flags u32, change u32.
    package static let linkHeaderSize = 16

    package static func decodeLink(type: UInt16, payload: ByteReader) throws(NetlinkDecodingError) -> Link? {
        guard let family = payload.integer(at: 0, as: UInt8.self),
            let hardwareType = payload.integer(at: 2, as: UInt16.self),
            let index = payload.integer(at: 4, as: Int32.self),
            let flags = payload.integer(at: 8, as: UInt32.self),
            payload.count >= linkHeaderSize
        else { throw .truncatedPayload(messageType: type, needed: linkHeaderSize, available: payload.count) }
        // AF_BRIDGE messages describe bridge-port state, not the link itself.
        guard family == RT.familyUnspecified else { return nil }

        var name: String?
        var operState = OperState.unknown
        var infoKind: String?
        var master: Int32?
        try forEachAttribute(in: payload, from: linkHeaderSize, messageType: type) { (attribute, value) throws(NetlinkDecodingError) in
            switch attribute {
            case RT.linkName: name = string(value)
            case RT.linkOperState:
                guard let raw = value.integer(at: 0, as: UInt8.self) else {
                    throw .invalidAttributeValue(messageType: type, attribute: attribute, length: value.count)
                }
                operState = OperState(rawValue: raw) ?? .unknown
            case RT.linkMaster:
                let raw = try u32(value, messageType: type, attribute: attribute)
                master = raw == 0 ? nil : Int32(bitPattern: raw)  // 0: no master
            case RT.linkInfo:
                try forEachAttribute(in: value, from: 0, messageType: type) { (nested, nestedValue) throws(NetlinkDecodingError) in
                    if nested == RT.linkInfoKind { infoKind = string(nestedValue) }
                }
            default: break
            }
        }
        guard let name, !name.isEmpty else {
            throw .missingAttribute(messageType: type, attribute: RT.linkName)
        }
        return Link(
            index: index, name: name, flags: LinkFlags(rawValue: flags), hardwareType: hardwareType,
            operState: operState, infoKind: infoKind, master: master)
    }

    // MARK: addresses

    /// `struct ifaddrmsg`: family u8, prefixlen u8, flags u8, scope u8, index u32.
    package static let addressHeaderSize = 8

    /// `struct ifa_cacheinfo`: ifa_prefered u32, ifa_valid u32 (seconds left, all ones for
    /// forever), cstamp u32, tstamp u32.
    package static let addressCacheInfoSize = 16
    package static let foreverLifetime = UInt32.max

    package static func decodeAddress(
        type: UInt16, payload: ByteReader, received: ContinuousClock.Instant = .now
    ) throws(NetlinkDecodingError) -> Address? {
        guard payload.count >= addressHeaderSize,
            let rawFamily = payload.integer(at: 0, as: UInt8.self),
            let prefixLength = payload.integer(at: 1, as: UInt8.self),
            let shortFlags = payload.integer(at: 2, as: UInt8.self),
            let scope = payload.integer(at: 3, as: UInt8.self),
            let index = payload.integer(at: 4, as: Int32.self)
        else { throw .truncatedPayload(messageType: type, needed: addressHeaderSize, available: payload.count) }
        guard let family = AddressFamily(rawValue: rawFamily) else { return nil }

        var address: IPAddress?
        var local: IPAddress?
        var flags = UInt32(shortFlags)
        var validUntil: ContinuousClock.Instant?
        try forEachAttribute(in: payload, from: addressHeaderSize, messageType: type) { (attribute, value) throws(NetlinkDecodingError) in
            switch attribute {
            case RT.addressAddress: address = try ipAddress(value, family: family, messageType: type, attribute: attribute)
            case RT.addressLocal: local = try ipAddress(value, family: family, messageType: type, attribute: attribute)
            case RT.addressFlags: flags = try u32(value, messageType: type, attribute: attribute)
            case RT.addressCacheInfo:
                guard value.count >= addressCacheInfoSize, let valid = value.integer(at: 4, as: UInt32.self) else {
                    throw .invalidAttributeValue(messageType: type, attribute: attribute, length: value.count)
                }
                // Whole seconds, what is left rounded up by the kernel: the deadline is never early.
                validUntil = valid == foreverLifetime ? nil : received + .seconds(valid)
            default: break
            }
        }
        // On point-to-point links IFA_ADDRESS is the peer; IFA_LOCAL is ours when present.
        guard let ours = local ?? address else {
            throw .missingAttribute(messageType: type, attribute: RT.addressAddress)
        }
        guard Int(prefixLength) <= ours.bitWidth else {
            throw .invalidAttributeValue(messageType: type, attribute: RT.addressAddress, length: Int(prefixLength))
        }
        return Address(
            interfaceIndex: index, prefix: IPPrefix(ours, length: prefixLength), scope: scope,
            flags: AddressFlags(rawValue: flags), validUntil: validUntil)
    }

    // MARK: routes

    /// `struct rtmsg`: family, dst_len, src_len, tos, table, protocol, scope, type (u8 each), flags u32.
    package static let routeHeaderSize = 12
    /// `struct rtnexthop`: len u16, flags u8, hops u8, ifindex i32.
    package static let nextHopHeaderSize = 8

    /// `struct rta_cacheinfo`: clntref u32, lastuse u32, expires s32, error u32, used u32, id u32,
    /// ts u32, tsage u32. `rta_expires` is what is left in clock ticks (USER_HZ, 100 per second:
    /// the kernel's jiffies_to_clock_t), negative once it passed, 0 when the route never expires.
    package static let routeCacheInfoSize = 32
    package static let routeCacheInfoExpiresOffset = 8
    package static let clockTicksPerSecond: Int64 = 100

    package static func decodeRoute(
        type: UInt16, payload: ByteReader, received: ContinuousClock.Instant = .now, acceptCloned: Bool = false
    ) throws(NetlinkDecodingError) -> Route? {
        guard payload.count >= routeHeaderSize,
            let rawFamily = payload.integer(at: 0, as: UInt8.self),
            let destinationLength = payload.integer(at: 1, as: UInt8.self),
            let tos = payload.integer(at: 3, as: UInt8.self),
            let shortTable = payload.integer(at: 4, as: UInt8.self),
            let rawType = payload.integer(at: 7, as: UInt8.self),
            let routeFlags = payload.integer(at: 8, as: UInt32.self)
        else { throw .truncatedPayload(messageType: type, needed: routeHeaderSize, available: payload.count) }
        guard let family = AddressFamily(rawValue: rawFamily) else { return nil }
        // Cached clones (PMTU exceptions, redirects) are not FIB routes.
        guard acceptCloned || routeFlags & RT.routeCloned == 0 else { return nil }

        var table = UInt32(shortTable)
        var destination: IPAddress?
        var gateway: IPAddress?
        var outputInterface: Int32?
        var metric: UInt32 = 0
        var preferredSource: IPAddress?
        var multipath: [NextHop]?
        var expiry: ContinuousClock.Instant?
        try forEachAttribute(in: payload, from: routeHeaderSize, messageType: type) { (attribute, value) throws(NetlinkDecodingError) in
            switch attribute {
            case RT.routeCacheInfo:
                guard value.count >= routeCacheInfoSize,
                    let ticks = value.integer(at: routeCacheInfoExpiresOffset, as: Int32.self)
                else { throw .invalidAttributeValue(messageType: type, attribute: attribute, length: value.count) }
                expiry = ticks == 0 ? nil : received + .milliseconds(Int64(ticks) * 1000 / clockTicksPerSecond)
            case RT.routeDestination: destination = try ipAddress(value, family: family, messageType: type, attribute: attribute)
            case RT.routeGateway: gateway = try ipAddress(value, family: family, messageType: type, attribute: attribute)
            case RT.routeVia: gateway = try via(value, messageType: type, attribute: attribute)
            case RT.routePreferredSource: preferredSource = try ipAddress(value, family: family, messageType: type, attribute: attribute)
            case RT.routeOutputInterface: outputInterface = Int32(bitPattern: try u32(value, messageType: type, attribute: attribute))
            case RT.routePriority: metric = try u32(value, messageType: type, attribute: attribute)
            case RT.routeTable: table = try u32(value, messageType: type, attribute: attribute)
            case RT.routeMultipath: multipath = try nextHops(value, family: family, messageType: type, attribute: attribute)
            default: break
            }
        }
        let width = family == .ipv4 ? 32 : 128
        guard Int(destinationLength) <= width else {
            throw .invalidAttributeValue(messageType: type, attribute: RT.routeDestination, length: Int(destinationLength))
        }
        let zero = family.any
        let hops = multipath ?? [NextHop(gateway: gateway, interfaceIndex: outputInterface)]
        return Route(
            table: table, destination: IPPrefix(destination ?? zero, length: destinationLength),
            type: RouteType(rawValue: rawType) ?? .unspecified, metric: metric, tos: tos,
            preferredSource: preferredSource, nextHops: hops, expiry: expiry)
    }

    package static func nextHops(_ value: ByteReader, family: AddressFamily, messageType: UInt16, attribute: UInt16) throws(NetlinkDecodingError) -> [NextHop] {
        var hops: [NextHop] = []
        var offset = 0
        while offset + nextHopHeaderSize <= value.count {
            guard let length = value.integer(at: offset, as: UInt16.self),
                let index = value.integer(at: offset + 4, as: Int32.self),
                Int(length) >= nextHopHeaderSize, Int(length) <= value.count - offset,
                let hop = value.slice(at: offset, length: Int(length))
            else {
                throw .invalidAttributeLength(
                    messageType: messageType, attribute: attribute,
                    declared: Int(value.integer(at: offset, as: UInt16.self) ?? 0), available: value.count - offset)
            }
            var gateway: IPAddress?
            try forEachAttribute(in: hop, from: nextHopHeaderSize, messageType: messageType) { (nested, nestedValue) throws(NetlinkDecodingError) in
                if nested == RT.routeGateway {
                    gateway = try ipAddress(nestedValue, family: family, messageType: messageType, attribute: nested)
                } else if nested == RT.routeVia {
                    gateway = try via(nestedValue, messageType: messageType, attribute: nested)
                }
            }
            hops.append(NextHop(gateway: gateway, interfaceIndex: index))
            offset += netlinkAlign(Int(length))
        }
        return hops
    }

    // MARK: neighbour discovery options

    /// `struct nduseroptmsg`: family u8, pad u8, opts_len u16, ifindex i32, icmp_type u8,
    /// icmp_code u8, pad u16, pad u32; then `opts_len` bytes of ND options (RFC 4861 4.6: type
    /// u8, length u8 in units of 8 octets), then attributes (NDUSEROPT_SRCADDR).
    package static let ndUserOptionHeaderSize = 16

    /// The captive-portal URI of a router advertisement's option 37 (`.announcedPortal`), or its
    /// NAT64 prefix of option 38 (`.nat64Prefix`); nil for other options and messages, and for a
    /// PREF64 option of another length than 2 or with an invalid PLC (RFC 8781: ignored);
    /// `.refusedAnnouncement` for a URI no client should be given (the bytes came from the network,
    /// not the kernel: a bad option is dropped, not treated as a broken netlink stream). The kernel
    /// sends one option per message; a message with both is the portal's.
    package static func decodeNDUserOption(payload: ByteReader) throws(NetlinkDecodingError) -> RoutingMessage? {
        let type = RT.newNDUserOption
        guard payload.count >= ndUserOptionHeaderSize,
            let family = payload.integer(at: 0, as: UInt8.self),
            let optionsLength = payload.integer(at: 2, as: UInt16.self),
            let index = payload.integer(at: 4, as: Int32.self),
            let icmpType = payload.integer(at: 8, as: UInt8.self)
        else { throw .truncatedPayload(messageType: type, needed: ndUserOptionHeaderSize, available: payload.count) }
        let optionsEnd = ndUserOptionHeaderSize + Int(optionsLength)
        guard let options = payload.slice(at: ndUserOptionHeaderSize, length: Int(optionsLength)) else {
            throw .truncatedPayload(messageType: type, needed: optionsEnd, available: payload.count)
        }
        var router: IPAddress?
        try forEachAttribute(in: payload, from: min(netlinkAlign(optionsEnd), payload.count), messageType: type) { (attribute, value) throws(NetlinkDecodingError) in
            if attribute == RT.ndUserOptionSourceAddress {
                router = try ipAddress(value, family: .ipv6, messageType: type, attribute: attribute)
            }
        }
        guard family == AddressFamily.ipv6.rawValue, icmpType == RT.icmpRouterAdvertisement else { return nil }
        var offset = 0
        var uri: String?
        var refusal: RefusedAnnouncement?
        var pref64: [UInt8]?
        while offset < options.count {
            guard let optionType = options.integer(at: offset, as: UInt8.self),
                let units = options.integer(at: offset + 1, as: UInt8.self), units > 0,
                let option = options.bytes(at: offset, length: Int(units) * 8)
            else {
                throw .invalidOption(
                    messageType: type, option: options.integer(at: offset, as: UInt8.self) ?? 0,
                    declared: Int(options.integer(at: offset + 1, as: UInt8.self) ?? 0) * 8, available: options.count - offset)
            }
            if optionType == RT.ndOptionCaptivePortal {
                let value = Array(option.dropFirst(2))
                switch AnnouncedPortal.uri(fromOptionValue: value) {
                case let .success(taken): uri = taken
                case let .failure(refused):
                    uri = nil
                    let text = String(decoding: value.prefix { $0 != 0 }, as: UTF8.self)
                    refusal = RefusedAnnouncement(option: .captivePortal, interfaceIndex: index, router: router, value: text, reason: refused.reason)
                }
            } else if optionType == RT.ndOptionPREF64 {
                pref64 = Array(option.dropFirst(2))
            }
            offset += option.count
        }
        guard uri != nil || pref64 != nil else { return refusal.map(RoutingMessage.refusedAnnouncement) }
        guard let router else { throw .missingAttribute(messageType: type, attribute: RT.ndUserOptionSourceAddress) }
        if let uri { return .announcedPortal(AnnouncedPortal(interfaceIndex: index, router: router, uri: uri)) }
        return pref64.flatMap { AnnouncedNat64Prefix.decode(optionValue: $0, interfaceIndex: index, router: router) }.map(RoutingMessage.nat64Prefix)
    }

    // MARK: attributes

    /// Walks `struct rtattr`s from `start` to the end of `container` (`NetlinkHeader.forEachAttribute`).
    package static func forEachAttribute(
        in container: ByteReader, from start: Int, messageType: UInt16,
        _ body: (UInt16, ByteReader) throws(NetlinkDecodingError) -> Void
    ) throws(NetlinkDecodingError) {
        try NetlinkHeader.forEachAttribute(in: container, from: start, body) { attribute, declared, available in
            .invalidAttributeLength(messageType: messageType, attribute: attribute, declared: declared, available: available)
        }
    }

    package static func string(_ value: ByteReader) -> String {
        let raw = value.bytes(at: 0, length: value.count) ?? []
        return String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }

    package static func u32(_ value: ByteReader, messageType: UInt16, attribute: UInt16) throws(NetlinkDecodingError) -> UInt32 {
        guard value.count == 4, let raw = value.integer(at: 0, as: UInt32.self) else {
            throw .invalidAttributeValue(messageType: messageType, attribute: attribute, length: value.count)
        }
        return raw
    }

    package static func ipAddress(_ value: ByteReader, family: AddressFamily, messageType: UInt16, attribute: UInt16) throws(NetlinkDecodingError) -> IPAddress {
        let expected = family == .ipv4 ? 4 : 16
        guard value.count == expected, let raw = value.bytes(at: 0, length: expected), let address = IPAddress(bytes: raw) else {
            throw .invalidAttributeValue(messageType: messageType, attribute: attribute, length: value.count)
        }
        return address
    }

    /// `struct rtvia`: family u16, then the address (an IPv4 route via an IPv6 gateway).
    package static func via(_ value: ByteReader, messageType: UInt16, attribute: UInt16) throws(NetlinkDecodingError) -> IPAddress {
        guard let family = value.integer(at: 0, as: UInt16.self),
            let raw = value.bytes(at: 2, length: value.count - 2),
            family <= UInt16(UInt8.max), AddressFamily(rawValue: UInt8(family)) != nil,
            let address = IPAddress(bytes: raw)
        else { throw .invalidAttributeValue(messageType: messageType, attribute: attribute, length: value.count) }
        return address
    }
}
