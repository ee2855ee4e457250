/// The host's nftables ruleset as the kernel holds it (nf_tables over netlink, which needs
/// CAP_NET_ADMIN: `reachctl` run as root reads it), reduced to what decides whether a packet
/// the host sends leaves: the base chains of the output and postrouting hooks, the chains they
/// jump to, their rules as the kernel's register machine runs them, and the sets they look in.
/// iptables-nft's rules are here too (its own expressions are read as unknown).
package struct FirewallRuleset: Sendable {
    package var chains: [FirewallChain]
    /// Sets by table (family and name) and set name.
    package var sets: [FirewallSetKey: FirewallSet]

    package init(chains: [FirewallChain] = [], sets: [FirewallSetKey: FirewallSet] = [:]) {
        self.chains = chains
        self.sets = sets
    }
}

package struct FirewallSetKey: Hashable, Sendable {
    package var family: UInt8
    package var table: String
    package var name: String

    package init(family: UInt8, table: String, name: String) {
        self.family = family
        self.table = table
        self.name = name
    }
}

/// One set: its elements' keys (network byte order, as the registers hold them), single
/// values or, for an interval set, half-open ranges [start, end).
package struct FirewallSet: Sendable {
    package var keyLength: Int
    package var isInterval: Bool
    /// A map, a concatenation or a set whose elements were not all read: a lookup in it is
    /// not judged.
    package var isJudged: Bool
    package var elements: [[UInt8]] = []
    package var ranges: [(start: [UInt8], end: [UInt8])] = []

    package init(keyLength: Int, isInterval: Bool, isJudged: Bool) {
        self.keyLength = keyLength
        self.isInterval = isInterval
        self.isJudged = isJudged
    }
}

package struct FirewallChain: Sendable {
    /// NFPROTO_INET (1), NFPROTO_IPV4 (2), NFPROTO_IPV6 (10), or another the host's packets
    /// never meet on their way out.
    package var family: UInt8
    package var table: String
    package var name: String
    /// For a base chain: its hook (3 output, 4 postrouting), priority and policy (true: drop).
    package var hook: (number: UInt32, priority: Int32, dropsByDefault: Bool)?
    package var rules: [FirewallRule] = []

    package init(family: UInt8, table: String, name: String, hook: (number: UInt32, priority: Int32, dropsByDefault: Bool)? = nil) {
        self.family = family
        self.table = table
        self.name = name
        self.hook = hook
    }

    package var familyName: String {
        switch family {
        case 1: "inet"
        case 2: "ip"
        case 10: "ip6"
        case 3: "arp"
        case 5: "netdev"
        case 7: "bridge"
        default: "family \(family)"
        }
    }
}

package struct FirewallRule: Sendable {
    package var handle: UInt64
    package var expressions: [FirewallExpression]

    package init(handle: UInt64, expressions: [FirewallExpression]) {
        self.handle = handle
        self.expressions = expressions
    }
}

/// A register of the kernel's machine: a byte offset into its 80 bytes (the verdict's 16, then
/// four of 16 bytes, which are also sixteen of 4).
package typealias FirewallRegister = Int

/// The expressions the evaluation reads; every other one is `other`, by what it may do.
package enum FirewallExpression: Sendable {
    case payload(base: UInt32, offset: Int, length: Int, into: FirewallRegister)
    case meta(key: UInt32, into: FirewallRegister)
    /// ct's `key` (0: state) into a register.
    case connectionTracking(key: UInt32, into: FirewallRegister)
    case compare(from: FirewallRegister, operation: UInt32, data: [UInt8])
    case bitwise(from: FirewallRegister, into: FirewallRegister, mask: [UInt8], xor: [UInt8])
    case range(from: FirewallRegister, equal: Bool, low: [UInt8], high: [UInt8])
    case lookup(from: FirewallRegister, set: String, inverted: Bool, isMap: Bool)
    /// A value an immediate loads into a data register.
    case load([UInt8], into: FirewallRegister)
    case verdict(FirewallVerdictCode)
    /// `reject`: the packet is dropped and refused.
    case reject
    /// An expression that may end the rule (a rate limit, an iptables match, fib...): the
    /// rule's verdict is no longer certain, and the registers are not known after it.
    case unknownMatch(String)
    /// An expression that may give a verdict of its own (an iptables target, a queue).
    case unknownVerdict(String)
    /// Counters, logging, NAT, setting a mark: nothing that decides whether the packet leaves.
    case noEffect
}

package enum FirewallVerdictCode: Sendable, Equatable {
    case accept, drop, `continue`, `break`, `return`
    case jump(String), goto(String)
    /// Queue, stolen, repeat: not judged.
    case other(Int32)
}

/// What the ruleset does with a packet.
package enum FirewallJudgement: Sendable, Equatable {
    /// Every hook on the way out lets it through (as far as the rules can be judged).
    case leaves
    /// A rule drops or rejects it, whatever is not known of the packet.
    case refused(FirewallRuleName, rejects: Bool)
    /// A rule would, if what it matches on that is not known (the source port, a rate) matches.
    case mayBeRefused(FirewallRuleName)
}

/// Names a rule as `nft -a list chain` shows it, or a base chain's policy (`handle` nil).
package struct FirewallRuleName: Sendable, Equatable, CustomStringConvertible {
    package var family: String
    package var table: String
    package var chain: String
    package var handle: UInt64?

    package init(family: String, table: String, chain: String, handle: UInt64? = nil) {
        self.family = family
        self.table = table
        self.chain = chain
        self.handle = handle
    }

    package var description: String {
        "table \(family) \(table) chain \(chain) " + (handle.map { "rule handle \($0)" } ?? "policy")
    }
}
