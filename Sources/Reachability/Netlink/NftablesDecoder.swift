/// Decodes nf_tables' netlink messages (NETLINK_NETFILTER, subsystem NFNL_SUBSYS_NFTABLES):
/// chains, rules with their expressions, sets and set elements, into `Model/Firewall.swift`'s
/// terms. Every length is checked (`ByteReader`); numbers in nf_tables' attributes are
/// big-endian. Constants are pinned against linux/netfilter/nf_tables.h in the tests.
package enum NftablesDecoder {
    /// What a datagram held.
    package enum Message {
        case chain(FirewallChain)
        case rule(family: UInt8, table: String, chain: String, FirewallRule)
        case set(FirewallSetKey, FirewallSet)
        /// Elements of one set: each key, and whether it ends an interval.
        case elements(FirewallSetKey, [(key: [UInt8], end: Bool)])
        case done
        case error(Int32)
        case ignored
    }

    package enum Failure: NetlinkFramingError, Equatable, CustomStringConvertible {
        case truncatedHeader(offset: Int, available: Int)
        case invalidMessageLength(offset: Int, declared: Int, available: Int)
        case truncatedPayload(messageType: UInt16, needed: Int, available: Int)
        case invalidAttribute(messageType: UInt16, attribute: UInt16, length: Int)

        package var description: String {
            switch self {
            case let .truncatedHeader(offset, available): "nf_tables: truncated header at \(offset): \(available) bytes left"
            case let .invalidMessageLength(offset, declared, available):
                "nf_tables: message at \(offset) says \(declared) bytes, \(available) left"
            case let .truncatedPayload(type, needed, available): "nf_tables: message \(type): \(available) bytes, \(needed) needed"
            case let .invalidAttribute(type, attribute, length): "nf_tables: message \(type): attribute \(attribute) of \(length) bytes"
            }
        }
    }

    package static func decode(_ datagram: [UInt8]) -> (messages: [Message], errors: [Failure]) {
        var messages: [Message] = []
        var errors: [Failure] = []
        datagram.withUnsafeBytes { raw in
            let broken = NetlinkHeader.forEachMessage(in: ByteReader(raw), failing: Failure.self) { header, payload in
                do throws(Failure) {
                    messages.append(try message(type: header.type, payload: payload))
                } catch {
                    errors.append(error)
                }
            }
            if let broken { errors.append(broken) }
        }
        return (messages, errors)
    }

    package static func message(type: UInt16, payload: ByteReader) throws(Failure) -> Message {
        if type == RT.done { return .done }
        if type == RT.error { return .error(try NetlinkHeader.errorCode(payload, failing: Failure.self)) }
        guard type >> 8 == Nftables.subsystem else { return .ignored }
        guard let family = payload.integer(at: 0, as: UInt8.self), payload.count >= 4 else {
            throw .truncatedPayload(messageType: type, needed: 4, available: payload.count)
        }
        let attributes = try Attributes(payload, from: 4, type: type)
        switch type & 0xff {
        case Nftables.newChain: return .chain(try chain(attributes, family: family, type: type))
        case Nftables.newRule:
            let expressions = try attributes.value(Nftables.ruleExpressions).map { list throws(Failure) in try self.expressions(list, type: type) } ?? []
            let rule = FirewallRule(handle: attributes.big64(Nftables.ruleHandle) ?? 0, expressions: expressions)
            return .rule(family: family, table: attributes.string(Nftables.ruleTable), chain: attributes.string(Nftables.ruleChain), rule)
        case Nftables.newSet:
            let flags = attributes.big32(Nftables.setFlags) ?? 0
            let key = FirewallSetKey(family: family, table: attributes.string(Nftables.setTable), name: attributes.string(Nftables.setName))
            // A map or a concatenation is kept unjudged: a lookup in it makes the rule uncertain.
            let set = FirewallSet(
                keyLength: Int(attributes.big32(Nftables.setKeyLength) ?? 0), isInterval: flags & Nftables.setInterval != 0,
                isJudged: flags & Nftables.setMap == 0 && flags & Nftables.setConcat == 0)
            return .set(key, set)
        case Nftables.newSetElement:
            let key = FirewallSetKey(family: family, table: attributes.string(Nftables.elementsTable), name: attributes.string(Nftables.elementsSet))
            return .elements(key, try elements(attributes, type: type))
        default: return .ignored
        }
    }

    private static func chain(_ attributes: Attributes, family: UInt8, type: UInt16) throws(Failure) -> FirewallChain {
        var chain = FirewallChain(family: family, table: attributes.string(Nftables.chainTable), name: attributes.string(Nftables.chainName))
        if let hook = attributes.value(Nftables.chainHook) {
            let hookAttributes = try Attributes(hook, from: 0, type: type)
            if let number = hookAttributes.big32(Nftables.hookNumber) {
                let priority = Int32(bitPattern: hookAttributes.big32(Nftables.hookPriority) ?? 0)
                chain.hook = (number, priority, attributes.big32(Nftables.chainPolicy) == 0)
            }
        }
        return chain
    }

    private static func elements(_ attributes: Attributes, type: UInt16) throws(Failure) -> [(key: [UInt8], end: Bool)] {
        guard let list = attributes.value(Nftables.elementsList) else { return [] }
        var found: [(key: [UInt8], end: Bool)] = []
        for element in try Attributes(list, from: 0, type: type).all(Nftables.listElement) {
            let fields = try Attributes(element, from: 0, type: type)
            guard let key = try fields.data(Nftables.elementKey, type: type) else { continue }
            let end = (fields.big32(Nftables.elementFlags) ?? 0) & Nftables.elementIntervalEnd != 0
            found.append((key, end))
            // A range in one element (pipapo): its closing key is inclusive.
            if let last = try fields.data(Nftables.elementKeyEnd, type: type) { found.append((Self.successor(last), true)) }
        }
        return found
    }

    /// The big-endian number one above `bytes` (all 0xff stays: nothing is above it).
    package static func successor(_ bytes: [UInt8]) -> [UInt8] {
        var next = bytes
        for index in next.indices.reversed() {
            if next[index] == 0xff { next[index] = 0 } else { next[index] += 1; return next }
        }
        return bytes
    }
}
