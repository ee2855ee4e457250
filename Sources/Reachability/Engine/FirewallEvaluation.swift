/// Whether the host's own ruleset lets a packet leave: the base chains of the output and
/// postrouting hooks of the packet's family (and inet), in the kernel's order (hook, then
/// priority), each run as the kernel runs it. Three-valued, since what the host does not know
/// before it sends (the source port, a rate limit, an iptables match) may decide a rule: a rule
/// whose matches all hold refuses for certain; one that depends on the unknown may refuse.
/// Pure: the ruleset and the packet in, a judgement out.
package struct FirewallEvaluation {
    package let ruleset: FirewallRuleset
    package let packet: FirewallPacket
    private let chains: [String: FirewallChain]

    /// The kernel's limit on jumps in a row.
    package static let depthLimit = 16

    package init(ruleset: FirewallRuleset, packet: FirewallPacket) {
        self.ruleset = ruleset
        self.packet = packet
        var chains: [String: FirewallChain] = [:]
        for chain in ruleset.chains { chains[Self.key(chain.family, chain.table, chain.name)] = chain }
        self.chains = chains
    }

    package func judge() -> FirewallJudgement {
        let bases = ruleset.chains.filter { chain in
            guard let hook = chain.hook, hook.number == 3 || hook.number == 4 else { return false }
            return chain.family == 1 || chain.family == packet.family
        }.sorted { ($0.hook!.number, $0.hook!.priority) < ($1.hook!.number, $1.hook!.priority) }
        var maybe: FirewallRuleName?
        for base in bases {
            var run = Run()
            let outcome = run.chain(base, in: self, depth: 0)
            if case let .refused(name, rejects) = outcome, !run.uncertain { return .refused(name, rejects: rejects) }
            if maybe == nil { maybe = run.mayRefuse ?? outcome.refusal }
        }
        return maybe.map(FirewallJudgement.mayBeRefused) ?? .leaves
    }

    package static func key(_ family: UInt8, _ table: String, _ name: String) -> String { "\(family) \(table) \(name)" }

    package func chain(named name: String, like chain: FirewallChain) -> FirewallChain? {
        chains[Self.key(chain.family, chain.table, name)]
    }

    package func set(named name: String, like chain: FirewallChain) -> FirewallSet? {
        ruleset.sets[FirewallSetKey(family: chain.family, table: chain.table, name: name)]
    }

    /// A chain's end, a verdict or a refusal, as one base chain's run reaches it.
    package enum Outcome {
        case accepted
        case refused(FirewallRuleName, rejects: Bool)
        /// The chain ended (or returned) without a verdict.
        case fellThrough

        package var refusal: FirewallRuleName? {
            if case let .refused(name, _) = self { name } else { nil }
        }
    }

    /// One base chain's run: whether an uncertain rule could have ended it before, and the first
    /// rule that may refuse.
    package struct Run {
        package var uncertain = false
        package var mayRefuse: FirewallRuleName?

        package mutating func chain(_ chain: FirewallChain, in evaluation: FirewallEvaluation, depth: Int) -> Outcome {
            for rule in chain.rules {
                let name = FirewallRuleName(family: chain.familyName, table: chain.table, chain: chain.name, handle: rule.handle)
                var machine = FirewallMachine(packet: evaluation.packet)
                let result = machine.run(rule.expressions) { set in evaluation.set(named: set, like: chain) }
                guard let verdict = result.verdict else { continue }
                if result.certain {
                    guard let ended = follow(verdict, name, chain, evaluation, depth) else { continue }
                    if case .fellThrough = ended { return end(of: chain, depth: depth) }
                    return ended
                }
                // It may or may not match: a refusal is possible; a verdict that ends the chain
                // makes all that follows uncertain; a jump is followed for what it may refuse.
                switch verdict {
                case .code(.drop), .reject, .unknown:
                    mayRefuse = mayRefuse ?? name
                    continue
                case .code(.continue): continue
                default: uncertain = true
                }
                if case .code(.jump) = verdict, let refusal = follow(verdict, name, chain, evaluation, depth)?.refusal {
                    mayRefuse = mayRefuse ?? refusal
                } else if case .code(.goto) = verdict, let refusal = follow(verdict, name, chain, evaluation, depth)?.refusal {
                    mayRefuse = mayRefuse ?? refusal
                }
            }
            return end(of: chain, depth: depth)
        }

        /// A base chain's end is its policy; any other's returns to the rule that jumped.
        private func end(of chain: FirewallChain, depth: Int) -> Outcome {
            guard depth == 0, let hook = chain.hook, hook.dropsByDefault else { return .fellThrough }
            return .refused(FirewallRuleName(family: chain.familyName, table: chain.table, chain: chain.name, handle: nil), rejects: false)
        }

        /// A verdict: the chain's end, or nil to go on with the next rule.
        private mutating func follow(
            _ verdict: FirewallMachine.Verdict, _ name: FirewallRuleName, _ chain: FirewallChain, _ evaluation: FirewallEvaluation, _ depth: Int
        ) -> Outcome? {
            switch verdict {
            case .reject: return .refused(name, rejects: true)
            case .unknown:
                mayRefuse = mayRefuse ?? name
                uncertain = true
                return nil
            case .code(.drop): return .refused(name, rejects: false)
            case .code(.accept): return .accepted
            case .code(.continue): return nil
            case .code(.break), .code(.return): return .fellThrough
            case let .code(.jump(target)), let .code(.goto(target)):
                guard depth < FirewallEvaluation.depthLimit, let next = evaluation.chain(named: target, like: chain) else {
                    uncertain = true
                    return nil
                }
                let outcome = self.chain(next, in: evaluation, depth: depth + 1)
                if case .fellThrough = outcome, case .code(.jump) = verdict { return nil }
                return outcome
            case .code(.other):
                uncertain = true
                return nil
            }
        }
    }
}
