import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// `--port` and `--udp` of `check` and `why`: the connection a program would open, so that the
/// host's own nftables rules (read as root: the kernel shows them to CAP_NET_ADMIN only) are
/// judged for it. reachd cannot read them (it runs unprivileged), so reachctl does.
struct FirewallOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The port a program would connect to: as root, the host's own firewall rules (nftables) are judged for it.", valueName: "port"))
    var port: UInt16?

    @Flag(help: "The connection is UDP, not TCP (with --port).")
    var udp = false

    func validate() throws {
        if port == 0 { throw ValidationError("--port 0: give the port a program connects to (1-65535).") }
        if udp, port == nil { throw ValidationError("--udp needs --port: the firewall's rules are judged for one port.") }
    }

    /// The ruleset's judgement for a connection to `destination`, asked for with `--port`; nil
    /// without it, when not root (said on standard error) or when the rules cannot be read
    /// (said). Only when asked: reading nf_tables on a host that never loaded it would load it.
    func judge(_ destination: IPAddress, uid: UInt32?, namespacePath: String?) -> (FirewallJudgement, HostFirewall.Question)? {
        guard port != nil else { return nil }
        guard geteuid() == 0 else {
            Terminal.write("reachctl: --port: the host's firewall rules can be read only as root; answering from the routes alone\n", to: 2)
            return nil
        }
        let question = HostFirewall.Question(destination: destination, udp: udp, port: port, uid: uid)
        do {
            return (try HostFirewall.judge(question, namespacePath: namespacePath), question)
        } catch {
            Terminal.write("reachctl: \(error)\n", to: 2)
            return nil
        }
    }
}

extension FirewallJudgement {
    /// How to see the rule: `nft -a list chain inet wall out`.
    static func listing(_ rule: FirewallRuleName) -> String { "nft -a list chain \(rule.family) \(rule.table) \(rule.chain)" }

    /// A check's answer with what the ruleset says: a certain refusal makes it not reachable.
    func applied(to result: CheckResult, _ question: HostFirewall.Question) -> CheckResult {
        guard case let .refused(rule, rejects) = self, result.isReachable else { return result }
        var refused = result
        refused.flags.remove(.reachable)
        refused.reason = .firewallRefused
        refused.message = "the host's own firewall \(rejects ? "rejects" : "drops") \(question.phrase): \(rule) (\(Self.listing(rule)))"
        return refused
    }

    /// `why`'s firewall layer with what the ruleset says.
    func applied(to explanation: Explanation, _ question: HostFirewall.Question) -> Explanation {
        var explanation = explanation
        guard let index = explanation.layers.firstIndex(where: { $0.name == .firewall }) else { return explanation }
        var layer = explanation.layers[index]
        switch self {
        case let .refused(rule, rejects):
            layer.status = .broken
            layer.evidence.insert("\(rule) \(rejects ? "rejects" : "drops") \(question.phrase)", at: 0)
            layer.fix = "the host's own firewall refuses it before it leaves: see the rule with \(Self.listing(rule)), and change or delete it"
        case let .mayBeRefused(rule):
            layer.evidence.insert(
                "\(rule) may drop \(question.phrase): it matches on what is not known before the connection (its source port, a rate, a mark)", at: 0)
        case .leaves:
            layer.evidence.insert("the output and postrouting hooks' rules let \(question.phrase) leave", at: 0)
            if layer.status == .unknown { layer.status = .ok }
        }
        explanation.layers[index] = layer
        return explanation
    }
}
