/// One rule run by the kernel's register machine over a `FirewallPacket`, every byte known or
/// not. A match on a known value holds or ends the rule; one on an unknown byte may hold, and
/// the rule's verdict is then uncertain.
package struct FirewallMachine {
    /// What a rule comes to when its matches hold.
    package enum Verdict: Equatable {
        case code(FirewallVerdictCode)
        case reject
        /// An expression that may decide on its own (an iptables target).
        case unknown
    }

    package let packet: FirewallPacket
    /// The verdict register's 16 bytes, then the data registers' 64.
    private var registers = [UInt8?](repeating: nil, count: 80)
    /// A match depended on something unknown.
    private var uncertain = false

    package init(packet: FirewallPacket) { self.packet = packet }

    /// The rule's verdict (nil: a match failed, or the rule gives none) and whether it is
    /// certain to match.
    package mutating func run(_ expressions: [FirewallExpression], sets: (String) -> FirewallSet?) -> (verdict: Verdict?, certain: Bool) {
        var verdict: Verdict?
        for expression in expressions {
            switch expression {
            case let .payload(base, offset, length, into):
                let header: [UInt8?] = base == 1 ? packet.networkHeader : base == 2 ? packet.transportHeader : []
                let bytes = (0..<length).map { offset + $0 < header.count ? header[offset + $0] : nil }
                store(bytes, at: into)
            case let .meta(key, into):
                store(packet.meta(key) ?? [nil, nil, nil, nil], at: into)
            case let .connectionTracking(key, into):
                store(packet.connectionTracking(key) ?? [nil, nil, nil, nil], at: into)
            case let .compare(from, operation, data):
                guard holds(Self.compare(load(from, data.count), operation, data)) else { return (nil, true) }
            case let .bitwise(from, into, mask, xor):
                let value = load(from, mask.count)
                store(zip(value.indices, value).map { index, byte in
                    // A zero mask bit is known whatever the input: xor's.
                    let masked = byte.map { $0 & mask[index] } ?? (mask[index] == 0 ? 0 : nil)
                    return masked.map { $0 ^ (index < xor.count ? xor[index] : 0) }
                }, at: into)
            case let .range(from, equal, low, high):
                let within = Self.within(load(from, low.count), low, high)
                guard holds(within.map { $0 == equal }) else { return (nil, true) }
            case let .lookup(from, name, inverted, isMap):
                guard !isMap, let set = sets(name), set.isJudged else {
                    if isMap { return (.unknown, !uncertain) }
                    uncertain = true
                    continue
                }
                guard holds(Self.member(load(from, set.keyLength), of: set).map { $0 != inverted }) else { return (nil, true) }
            case let .load(bytes, into): store(bytes.map(Optional.some), at: into)
            case let .verdict(code): verdict = .code(code)
            case .reject: verdict = .reject
            case .unknownMatch:
                uncertain = true
                registers = registers.map { _ in nil }
            case .unknownVerdict: verdict = .unknown
            case .noEffect: break
            }
        }
        return (verdict, !uncertain)
    }

    /// Whether to go on: a match that fails ends the rule; an unknown one makes it uncertain.
    private mutating func holds(_ match: Bool?) -> Bool {
        guard let match else {
            uncertain = true
            return true
        }
        return match
    }

    private mutating func store(_ bytes: [UInt8?], at register: FirewallRegister) {
        for (index, byte) in bytes.enumerated() where register + index < registers.count { registers[register + index] = byte }
    }

    private func load(_ register: FirewallRegister, _ count: Int) -> [UInt8?] {
        (0..<count).map { register + $0 < registers.count ? registers[register + $0] : nil }
    }

    /// enum nft_cmp_ops over big-endian bytes, as the kernel's memcmp: nil when a byte is unknown.
    package static func compare(_ value: [UInt8?], _ operation: UInt32, _ data: [UInt8]) -> Bool? {
        guard value.allSatisfy({ $0 != nil }) else {
            // A known byte that differs already decides equality.
            let differs = zip(value, data).contains { $0 != nil && $0 != $1 }
            if differs, operation == 0 { return false }
            if differs, operation == 1 { return true }
            return nil
        }
        let known = value.map { $0! }
        let order = known.lexicographicallyPrecedes(data) ? -1 : known == data ? 0 : 1
        switch operation {
        case 0: return order == 0
        case 1: return order != 0
        case 2: return order < 0
        case 3: return order <= 0
        case 4: return order > 0
        case 5: return order >= 0
        default: return nil
        }
    }

    package static func within(_ value: [UInt8?], _ low: [UInt8], _ high: [UInt8]) -> Bool? {
        guard let above = compare(value, 5, low), let below = compare(value, 3, high) else { return nil }
        return above && below
    }

    package static func member(_ value: [UInt8?], of set: FirewallSet) -> Bool? {
        guard value.allSatisfy({ $0 != nil }) else { return nil }
        let key = value.map { $0! }
        if set.isInterval {
            return set.ranges.contains { !key.lexicographicallyPrecedes($0.start) && key.lexicographicallyPrecedes($0.end) }
                || set.elements.contains(key)
        }
        return set.elements.contains(key)
    }
}
