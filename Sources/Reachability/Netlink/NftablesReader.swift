#if canImport(Glibc)
import Glibc
#endif

/// Reads the host's nftables ruleset from the kernel (nf_tables dumps of chains, rules, sets and
/// each set's elements), for `reachctl` run as root: the kernel answers only a caller with
/// CAP_NET_ADMIN. Blocking, each dump bounded by `patience` per datagram and `limit` bytes in
/// all: a client's question, never reachd's loop.
package enum NftablesReader {
    package enum Refusal: Error, CustomStringConvertible {
        /// EPERM: the caller lacks CAP_NET_ADMIN.
        case notPermitted
        case failed(String)

        package var description: String {
            switch self {
            case .notPermitted: "reading the firewall's rules needs root (CAP_NET_ADMIN)"
            case let .failed(why): "reading the firewall's rules: \(why)"
            }
        }
    }

    /// Far beyond any host's ruleset; a kernel that keeps sending is cut off here.
    package static let limit = 16 << 20
    package static let patience: Int32 = 1000

    package static func read(namespacePath: String? = nil) throws(Refusal) -> FirewallRuleset {
        var dump: Dump
        do { dump = Dump(socket: try NetlinkSocket(nonBlocking: true, namespacePath: namespacePath, netfilter: true)) } catch {
            throw .failed("\(error)")
        }
        var messages = try dump.run(Nftables.getChain, family: 0) + dump.run(Nftables.getRule, family: 0) + dump.run(Nftables.getSet, family: 0)
        for case let .set(key, set) in messages where set.isJudged {
            var attributes: [UInt8] = []
            NetlinkRequest.appendAttribute(Nftables.elementsTable, Array(key.table.utf8) + [0], to: &attributes)
            NetlinkRequest.appendAttribute(Nftables.elementsSet, Array(key.name.utf8) + [0], to: &attributes)
            messages += try dump.run(Nftables.getSetElement, family: key.family, attributes: attributes)
        }
        return ruleset(messages)
    }

    /// The ruleset the dumps' messages describe, whatever their order: each rule in its chain
    /// (in the order given), each judged set with its elements. Pure, for the fuzz target too.
    package static func ruleset(_ messages: [NftablesDecoder.Message]) -> FirewallRuleset {
        var ruleset = FirewallRuleset()
        var rules: [String: [FirewallRule]] = [:]
        var elements: [FirewallSetKey: [(key: [UInt8], end: Bool)]] = [:]
        for message in messages {
            switch message {
            case let .chain(chain): ruleset.chains.append(chain)
            case let .rule(family, table, chain, rule): rules[FirewallEvaluation.key(family, table, chain), default: []].append(rule)
            case let .set(key, set): ruleset.sets[key] = set
            case let .elements(key, found): elements[key, default: []] += found
            case .done, .error, .ignored: continue
            }
        }
        for index in ruleset.chains.indices {
            let chain = ruleset.chains[index]
            ruleset.chains[index].rules = rules[FirewallEvaluation.key(chain.family, chain.table, chain.name)] ?? []
        }
        for (key, set) in ruleset.sets where set.isJudged { ruleset.sets[key] = filled(set, with: elements[key] ?? []) }
        return ruleset
    }

    /// A set with its elements; an interval set's start and end keys made into ranges.
    package static func filled(_ set: FirewallSet, with elements: [(key: [UInt8], end: Bool)]) -> FirewallSet {
        var set = set
        guard set.isInterval else {
            set.elements = elements.filter { !$0.end }.map(\.key)
            return set
        }
        // In key order, an end before a start of the same key: [1,5) then [5,9).
        let sorted = elements.sorted { $0.key == $1.key ? $0.end && !$1.end : $0.key.lexicographicallyPrecedes($1.key) }
        var start: [UInt8]? = nil
        for element in sorted {
            if element.end {
                set.ranges.append((start ?? [UInt8](repeating: 0, count: element.key.count), element.key))
                start = nil
            } else {
                if let open = start { set.elements.append(open) }
                start = element.key
            }
        }
        // An open start runs to the top of the key space.
        if let open = start {
            let top = [UInt8](repeating: 0xff, count: open.count)
            set.ranges.append((open, top))
            set.elements.append(top)
        }
        return set
    }

    /// One dump after another on one socket.
    package struct Dump: ~Copyable {
        package let socket: NetlinkSocket
        package var sequence: UInt32 = 0
        package var received = 0
        package var buffer = [UInt8](repeating: 0, count: 64 << 10)

        package mutating func run(_ message: UInt16, family: UInt8, attributes: [UInt8] = []) throws(Refusal) -> [NftablesDecoder.Message] {
            sequence &+= 1
            var request = NetlinkRequest.header(
                type: Nftables.subsystem << 8 | message, flags: RT.flagRequest | RT.flagDump, sequence: sequence, bodyLength: 4 + attributes.count)
            request += [family, 0, 0, 0] + attributes
            do { try socket.send(request) } catch { throw .failed("\(error)") }
            var messages: [NftablesDecoder.Message] = []
            while true {
                let reception: NetlinkSocket.Reception
                do { reception = try socket.receive(into: &buffer) } catch { throw .failed("\(error)") }
                switch reception {
                case .wouldBlock:
                    var descriptor = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&descriptor, 1, NftablesReader.patience) > 0 else { throw .failed("the kernel did not answer within \(NftablesReader.patience) ms") }
                case .foreign: continue
                case let .datagram(count, truncated):
                    guard !truncated else { throw .failed("a datagram larger than \(buffer.count) bytes") }
                    received += count
                    guard received <= NftablesReader.limit else { throw .failed("more than \(NftablesReader.limit) bytes") }
                    let decoded = NftablesDecoder.decode(Array(buffer[..<count]))
                    if let error = decoded.errors.first { throw .failed("\(error)") }
                    for message in decoded.messages {
                        switch message {
                        case .done: return messages
                        case let .error(code) where code == -EPERM: throw .notPermitted
                        case let .error(code) where code < 0: throw .failed(String(cString: strerror(-code)))
                        case .error: continue
                        default: messages.append(message)
                        }
                    }
                }
            }
        }
    }
}
