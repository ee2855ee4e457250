/// nf_tables' numbers (linux/netfilter/nf_tables.h, nfnetlink.h), pinned in `NftablesTests`.
package enum Nftables {
    package static let netlinkProtocol: Int32 = 12  // NETLINK_NETFILTER
    package static let subsystem: UInt16 = 10  // NFNL_SUBSYS_NFTABLES
    package static let newChain: UInt16 = 3, getChain: UInt16 = 4, newRule: UInt16 = 6, getRule: UInt16 = 7
    package static let newSet: UInt16 = 9, getSet: UInt16 = 10, newSetElement: UInt16 = 12, getSetElement: UInt16 = 13
    package static let chainTable: UInt16 = 1, chainName: UInt16 = 3, chainHook: UInt16 = 4, chainPolicy: UInt16 = 5
    package static let hookNumber: UInt16 = 1, hookPriority: UInt16 = 2
    package static let ruleTable: UInt16 = 1, ruleChain: UInt16 = 2, ruleHandle: UInt16 = 3, ruleExpressions: UInt16 = 4
    package static let listElement: UInt16 = 1, expressionName: UInt16 = 1, expressionData: UInt16 = 2
    package static let setTable: UInt16 = 1, setName: UInt16 = 2, setFlags: UInt16 = 3, setKeyLength: UInt16 = 5
    package static let setInterval: UInt32 = 0x4, setMap: UInt32 = 0x8, setConcat: UInt32 = 0x80
    package static let elementsTable: UInt16 = 1, elementsSet: UInt16 = 2, elementsList: UInt16 = 3
    package static let elementKey: UInt16 = 1, elementFlags: UInt16 = 3, elementKeyEnd: UInt16 = 10
    package static let elementIntervalEnd: UInt32 = 0x1
    package static let dataValue: UInt16 = 1, dataVerdict: UInt16 = 2, verdictCode: UInt16 = 1, verdictChain: UInt16 = 2
}

/// One message's attributes, by type (the last of each type; `all` for lists).
package struct Attributes {
    private var values: [(type: UInt16, value: ByteReader)] = []
    private let messageType: UInt16

    package init(_ container: ByteReader, from start: Int, type: UInt16) throws(NftablesDecoder.Failure) {
        messageType = type
        var found: [(type: UInt16, value: ByteReader)] = []
        let collect: (UInt16, ByteReader) throws(NftablesDecoder.Failure) -> Void = { attribute, value in found.append((attribute, value)) }
        try NetlinkHeader.forEachAttribute(in: container, from: start, collect) { attribute, declared, _ in
            NftablesDecoder.Failure.invalidAttribute(messageType: type, attribute: attribute, length: declared)
        }
        values = found
    }

    package func value(_ type: UInt16) -> ByteReader? { values.last { $0.type == type }?.value }
    package func all(_ type: UInt16) -> [ByteReader] { values.filter { $0.type == type }.map(\.value) }

    package func string(_ type: UInt16) -> String {
        guard let value = value(type) else { return "" }
        return NetlinkDecoder.string(value)
    }

    package func big32(_ type: UInt16) -> UInt32? {
        guard let value = value(type), value.count == 4 else { return nil }
        return value.integer(at: 0, as: UInt32.self).map(UInt32.init(bigEndian:))
    }

    package func big64(_ type: UInt16) -> UInt64? {
        guard let value = value(type), value.count == 8 else { return nil }
        return value.integer(at: 0, as: UInt64.self).map(UInt64.init(bigEndian:))
    }

    /// `struct nft_data`'s value (NFTA_DATA_VALUE inside the nested attribute), at most 64 bytes.
    package func data(_ type: UInt16, type messageType: UInt16) throws(NftablesDecoder.Failure) -> [UInt8]? {
        guard let nested = value(type) else { return nil }
        guard let value = try Attributes(nested, from: 0, type: messageType).value(Nftables.dataValue) else { return nil }
        guard value.count <= 64, let bytes = value.bytes(at: 0, length: value.count) else {
            throw .invalidAttribute(messageType: messageType, attribute: type, length: value.count)
        }
        return bytes
    }

    /// A register number as the kernel reads it (nft_parse_register) into a byte offset in the
    /// 80 bytes of registers: 1-4 are 16 bytes each after the verdict's 16, 8-23 are 4 each.
    package func register(_ type: UInt16) throws(NftablesDecoder.Failure) -> FirewallRegister? {
        guard let number = big32(type) else { return nil }
        switch number {
        case 0...4: return Int(number) * 16
        case 8...23: return Int(number - 8) * 4 + 16
        default: throw .invalidAttribute(messageType: messageType, attribute: type, length: Int(number))
        }
    }
}

extension NftablesDecoder {
    /// A rule's NFTA_RULE_EXPRESSIONS: each list element's name and data.
    package static func expressions(_ list: ByteReader, type: UInt16) throws(Failure) -> [FirewallExpression] {
        var expressions: [FirewallExpression] = []
        for element in try Attributes(list, from: 0, type: type).all(Nftables.listElement) {
            let fields = try Attributes(element, from: 0, type: type)
            let data = try fields.value(Nftables.expressionData).map { nested throws(Failure) in try Attributes(nested, from: 0, type: type) }
            expressions.append(try expression(fields.string(Nftables.expressionName), data, type: type))
        }
        return expressions
    }

    /// Each expression's NFTA_<NAME>_* attributes by number (payload: dreg 1, base 2, offset 3,
    /// len 4; meta and ct: dreg 1, key 2; cmp: sreg 1, op 2, data 3; bitwise: sreg 1, dreg 2,
    /// len 3, mask 4, xor 5, op 6; range: sreg 1, op 2, from 3, to 4; lookup: set 1, sreg 2,
    /// dreg 3, flags 5; immediate: dreg 1, data 2).
    package static func expression(_ name: String, _ data: Attributes?, type: UInt16) throws(Failure) -> FirewallExpression {
        guard let data else { return name == "reject" ? .reject : .noEffect }
        switch name {
        case "payload":
            // A payload that writes (sreg, no dreg) changes the packet, not the verdict.
            guard let into = try data.register(1) else { return .noEffect }
            return .payload(base: data.big32(2) ?? 0, offset: Int(data.big32(3) ?? 0), length: min(Int(data.big32(4) ?? 0), 64), into: into)
        case "meta", "ct":
            guard let into = try data.register(1), let key = data.big32(2) else { return .noEffect }
            return name == "meta" ? .meta(key: key, into: into) : .connectionTracking(key: key, into: into)
        case "cmp":
            guard let from = try data.register(1), let bytes = try data.data(3, type: type) else { return .unknownMatch(name) }
            return .compare(from: from, operation: data.big32(2) ?? 0, data: bytes)
        case "bitwise":
            guard data.big32(6) ?? 0 == 0, let from = try data.register(1), let into = try data.register(2),
                let mask = try data.data(4, type: type), let xor = try data.data(5, type: type)
            else { return .unknownMatch(name) }
            return .bitwise(from: from, into: into, mask: mask, xor: xor)
        case "range":
            guard let from = try data.register(1), let low = try data.data(3, type: type), let high = try data.data(4, type: type) else {
                return .unknownMatch(name)
            }
            return .range(from: from, equal: data.big32(2) ?? 0 == 0, low: low, high: high)
        case "lookup":
            guard let from = try data.register(2) else { return .unknownMatch(name) }
            let isMap = try data.register(3) != nil
            return .lookup(from: from, set: data.string(1), inverted: (data.big32(5) ?? 0) & 1 != 0, isMap: isMap)
        case "immediate":
            return try immediate(data, type: type)
        case "reject": return .reject
        case "counter", "log", "nat", "masq", "redir", "notrack", "dynset", "objref", "dup":
            return .noEffect
        case "target", "queue", "fwd", "synproxy", "tproxy": return .unknownVerdict(name)
        default: return .unknownMatch(name)
        }
    }

    /// An immediate to the verdict register is the rule's verdict; to another, a value it
    /// loads, which later matches read as unknown.
    private static func immediate(_ data: Attributes, type: UInt16) throws(Failure) -> FirewallExpression {
        guard let into = try data.register(1), let nested = data.value(2) else { return .unknownMatch("immediate") }
        guard into == 0 else {
            guard let value = try data.data(2, type: type) else { return .unknownMatch("immediate") }
            return .load(value, into: into)
        }
        guard let verdict = try Attributes(nested, from: 0, type: type).value(Nftables.dataVerdict) else { return .unknownMatch("immediate") }
        let fields = try Attributes(verdict, from: 0, type: type)
        guard let raw = fields.big32(Nftables.verdictCode) else { return .unknownMatch("immediate") }
        let code = Int32(bitPattern: raw)
        let chain = fields.string(Nftables.verdictChain)
        switch code {
        case 0: return .verdict(.drop)
        case 1: return .verdict(.accept)
        case -1: return .verdict(.continue)
        case -2: return .verdict(.break)
        case -3: return .verdict(.jump(chain))
        case -4: return .verdict(.goto(chain))
        case -5: return .verdict(.return)
        default: return .verdict(.other(code))
        }
    }
}
