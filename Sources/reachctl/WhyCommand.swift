import ArgumentParser
import Reachability

struct WhyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "why",
        abstract: "Explain an answer layer by layer, from the radio to the probe, and name the first layer that fails.",
        discussion: """
            Walks the chain a packet needs, for the host's answer (no TARGET) or for one target, \
            and prints each layer with its state (ok, BROKEN, unknown) and the facts it rests on: \
            radio (rfkill), link (carrier, operstate, dormant), address (tentative, deprecated, \
            lifetimes), gateway (the kernel's own ARP/ND state of the next hop and how fresh its \
            last answer is: FAILED means nobody answered the kernel's fresh resolutions either), route (the table and type the kernel \
            chose for your uid: an unreachable or prohibit rule is a kill switch), firewall (the \
            host's own rules: as root, its nftables output and postrouting rules judged for a \
            TCP connection, or --udp, to --port; for anyone, connections whose segments the \
            host refuses to send while the path is stalled), dns \
            (nameservers, routable or not, lookups timing out), traffic (passive stall \
            detection) and portal (the connectivity probe, reachd only). Then what would fix the \
            first broken layer.

            --unit NAME explains as the systemd service NAME's traffic would go (reachd only): \
            a policy layer after the route names what of its sandbox denies \
            ("IPAddressDeny=any of backup.service: 203.0.113.9 is denied", \
            "RestrictNetworkInterfaces=wg0 of ...", "PrivateNetwork=yes of ...", \
            "NetworkNamespacePath=... of ...: that namespace has no way to ..."); in a namespace of \
            its own the host's layers are unknown. The JSON then carries "unit", and \
            "trafficScope": "unit" when the traffic layer judged the service's own connections \
            (reachd.conf [Units] Watch=), else "host".

            A host name is resolved first (as `check` does); the layers below DNS are those of \
            its first address, or the host's when it did not resolve.

            With --json it prints one object: target ("" for the host), uid, brokenLayer (radio, \
            link, address, gateway, route, policy, firewall, dns, traffic or portal; "" when nothing is broken) \
            and layers (each: layer, status, evidence, fix).

            Examples:
              reachctl why
              reachctl why 192.0.2.1
              sudo reachctl why 198.51.100.7 --port 443
              reachctl why example.org --json | jq -r .brokenLayer
              reachctl why --unit backup.service 203.0.113.9

            Exit status: 0 nothing broken, 1 a layer is broken, 255 usage error or invalid target.
            """
    )

    @Argument(help: "An IPv4/IPv6 address or a host name; without it, the host's own answer.")
    var target: String?

    @OptionGroup var unitOption: UnitQuestion.Option

    var unit: String? { unitOption.unit }

    @OptionGroup var firewall: FirewallOptions

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    func validate() throws {
        if let unit, let port = firewall.port {
            throw ValidationError(
                "--unit \(unit) takes no --port \(port): the service may run in a network namespace whose firewall reachctl does not read; "
                    + "`reachctl why TARGET --port \(port)` judges the host's own rules.")
        }
    }

    func run() async throws {
        var (explanation, destination) = try await reportingErrors { () async throws -> (Explanation, IPAddress?) in
            // A unit's explanation is reachd's; the host's own rules are judged for the host's traffic.
            if let unit { return (try await UnitQuestion.ask(unit, target ?? "", options: options).explanation, nil) }
            let source = try options.openSource()
            defer { source.stop() }
            guard let target, !target.isEmpty, !AddressTarget.looksLikeAddress(target) else {
                return (try await source.explain(target ?? ""), target.flatMap(IPAddress.init))
            }
            let resolved = try await source.check(target, timeout: nil, asUser: nil)
            if resolved.reason == .invalidTarget { throw ReachctlError("invalid target: \(resolved.message ?? target)") }
            let below = try await source.explain(resolved.addresses.first?.description ?? "")
            return (below.resolving(resolved), resolved.addresses.first)
        }
        // The host's own rules, for one destination (the host's answer has none to judge).
        if let destination, let (judgement, question) = firewall.judge(destination, uid: nil, namespacePath: try options.netns.map(CommonOptions.namespacePath(for:))) {
            explanation = judgement.applied(to: explanation, question)
        }
        Terminal.writeLine(output.json ? explanation.json.serialized() : renderExplanation(explanation))
        if explanation.brokenLayer != nil { throw ExitStatus.notReachable.exitCode }
    }
}
