/// Whether a systemd service's sandbox lets its packets reach a destination, judged from the
/// unit's settings (`UnitSandbox`) and the route the kernel picks for the unit's traffic (as its
/// user, in its namespace), in the order the kernel applies them: the socket's family
/// (`RestrictAddressFamilies=`, refused at socket()), the namespace (`PrivateNetwork=`: a
/// loopback alone), the route, the unit's IP filter (`IPAddressAllow=` before `IPAddressDeny=`,
/// as systemd's), then the egress interface (`RestrictNetworkInterfaces=`). Pure: what denies is
/// named, with the unit, in the answer's message and in `why`'s `policy` layer.
package enum UnitPolicy {
    /// The unit's answer for one destination and the policy layer that explains it.
    public struct Verdict: Hashable, Sendable {
        public var result: CheckResult
        public var layer: Explanation.Layer
    }

    /// `route`: the kernel's answer for `destination` as the unit's traffic is routed (its
    /// user, its namespace); ignored for a loopback-only namespace, which has nothing else.
    public static func judge(_ sandbox: UnitSandbox, namespace: UnitSandbox.Namespace, destination: IPAddress, route: CheckResult) -> Verdict {
        var evidence = facts(of: sandbox, namespace: namespace)
        let of = " of \(sandbox.unit)"
        func denied(_ setting: String, _ why: String, fix: String, interface: String = "") -> Verdict {
            let message = setting + of + ": " + why
            return Verdict(
                result: CheckResult(target: route.target, interface: interface, addresses: route.addresses, reason: .policyBlocked, message: message),
                layer: .init(name: .policy, status: .broken, evidence: [message] + evidence, fix: fix))
        }
        let family = destination.family == .ipv4 ? "AF_INET" : "AF_INET6"
        if !sandbox.families.isEmpty, !sandbox.families.permits(family) {
            return denied(
                "RestrictAddressFamilies=\(sandbox.families.description)", "\(family) sockets are refused",
                fix: "add \(family) to RestrictAddressFamilies= of \(sandbox.unit) if it must reach \(destination)")
        }
        if namespace == .loopbackOnly, !destination.isLoopback {
            return denied(
                "PrivateNetwork=yes", "its namespace has a loopback only, no way to \(destination)",
                fix: "PrivateNetwork=no, or NetworkNamespacePath= to a namespace with an uplink, if \(sandbox.unit) must reach \(destination)")
        }
        var result = namespace == .loopbackOnly
            ? CheckResult(target: route.target, flags: [.reachable, .isLocalAddress, .isDirect], interface: "lo", addresses: route.addresses)
            : route
        guard result.isReachable else {
            if case let .path(path) = namespace {
                return denied(
                    "NetworkNamespacePath=\(path)", "that namespace has no way to \(destination) (\(result.reason?.rawValue ?? "noRoute"))",
                    fix: "give the namespace at \(path) an uplink (a veth or tunnel with a route), or take \(sandbox.unit) out of it",
                    interface: result.interface)
            }
            evidence.insert("the route denies, not \(sandbox.unit)'s sandbox", at: 0)
            return Verdict(result: result, layer: .init(name: .policy, status: .ok, evidence: evidence))
        }
        let filters = !sandbox.addressAllow.isEmpty || !sandbox.addressDeny.isEmpty
        if filters, !sandbox.addressFilterEnforced {
            evidence.append("IPAddressAllow= and IPAddressDeny= are not enforced: systemd filters only on the unified cgroup hierarchy (cgroup v2), which this system does not use")
        } else if let allowed = sandbox.addressAllow.first(where: { $0.contains(destination) }) {
            evidence.insert("IPAddressAllow=\(allowed)\(of) allows \(destination)", at: 0)
        } else if let deny = sandbox.addressDeny.first(where: { $0.contains(destination) }) {
            return denied(
                "IPAddressDeny=\(spelled(deny))", "\(destination) is denied",
                fix: "add \(destination) (or its subnet) to IPAddressAllow= of \(sandbox.unit) if it must reach it", interface: result.interface)
        }
        if !sandbox.interfaces.isEmpty, !sandbox.interfacesEnforced {
            evidence.append("RestrictNetworkInterfaces= is not enforced: this systemd is built without BPF_FRAMEWORK and ignores it")
        } else if !sandbox.interfaces.isEmpty, !sandbox.interfaces.permits(result.interface) {
            return denied(
                "RestrictNetworkInterfaces=\(sandbox.interfaces.description)", "the route to \(destination) leaves through \(result.interface)",
                fix: "route \(sandbox.unit)'s traffic through an interface it may use (a uid or namespace of its own), or allow \(result.interface)",
                interface: result.interface)
        }
        if case let .path(path) = namespace { result.message = "in the network namespace \(path)" }
        evidence.insert("nothing of \(sandbox.unit)'s sandbox denies \(destination)", at: 0)
        return Verdict(result: result, layer: .init(name: .policy, status: .ok, evidence: evidence))
    }

    /// `0.0.0.0/0` and `::/0` as systemd spells them where both are denied: `any`.
    package static func spelled(_ prefix: IPPrefix) -> String { prefix.isDefault ? "any" : prefix.description }

    /// The sandbox as the policy layer tells it, one fact a line.
    package static func facts(of sandbox: UnitSandbox, namespace: UnitSandbox.Namespace) -> [String] {
        var facts: [String] = []
        switch sandbox.user {
        case let .known(uid): facts.append("routed as uid \(uid)" + (sandbox.mainPID != 0 ? " (main process \(sandbox.mainPID))" : ""))
        case .dynamic: facts.append("DynamicUser=yes and not running: its uid is allocated at start; routed as the system's traffic")
        case let .unresolved(name): facts.append("User=\(name.inertExcerpt()) is not in /etc/passwd; routed as the system's traffic")
        }
        switch namespace {
        case .host: facts.append("the host's network namespace")
        case let .path(path): facts.append("network namespace \(path)")
        case .loopbackOnly: facts.append("PrivateNetwork=yes: a namespace with a loopback only")
        }
        if !sandbox.addressAllow.isEmpty { facts.append("IPAddressAllow=" + sandbox.addressAllow.map(spelled).joined(separator: " ")) }
        if !sandbox.addressDeny.isEmpty { facts.append("IPAddressDeny=" + sandbox.addressDeny.map(spelled).joined(separator: " ")) }
        if !sandbox.interfaces.isEmpty { facts.append("RestrictNetworkInterfaces=" + sandbox.interfaces.description) }
        if !sandbox.families.isEmpty { facts.append("RestrictAddressFamilies=" + sandbox.families.description) }
        return facts
    }

    /// The explanation of the unit's answer: the host's layers as they are for its traffic when
    /// it leaves from the host's namespace; in a namespace of its own, the host's links, routes
    /// and probe say nothing of its path (unknown), and the policy layer holds that namespace's
    /// route. The policy layer comes right after the route's.
    public static func explanation(_ host: Explanation, _ verdict: Verdict, namespace: UnitSandbox.Namespace, unit: String) -> Explanation {
        var layers = host.layers
        if namespace != .host {
            let elsewhere = namespace == .loopbackOnly ? "PrivateNetwork=yes" : "its own network namespace"
            layers = layers.map { .init(name: $0.name, status: .unknown, evidence: ["not the host's: \(unit)'s traffic leaves from \(elsewhere)"]) }
        }
        let at = (layers.firstIndex { $0.name == .route }).map { $0 + 1 } ?? layers.endIndex
        layers.insert(verdict.layer, at: at)
        return Explanation(target: host.target, uid: host.uid, layers: layers)
    }
}

extension UnitPolicy {
    /// The answer for `address` in a namespace reachd does not follow (a unit's own), from the
    /// kernel's route there and its egress link alone: reachable through a link that is up with
    /// carrier; a refusing route is a kill switch, as on the host.
    public static func namespaceAnswer(_ lookup: RouteLookup, link: Link?, for address: IPAddress, target: String) -> CheckResult {
        var result = CheckResult(target: target, addresses: [address])
        switch lookup {
        case let .failed(errno):
            result.reason = RouteType(refusal: errno) != nil ? .policyBlocked : .noRoute
        case let .route(route) where route.type == .local:
            result.flags = [.reachable, .isLocalAddress, .isDirect]
            result.interface = link?.name ?? ""
        case let .route(route) where route.type.isBlocking:
            result.reason = .policyBlocked
        case let .route(route):
            result.interface = link?.name ?? ""
            result.gateway = route.nextHops.first?.gateway
            result.source = route.preferredSource
            guard let link, link.isReady || link.isLoopback else {
                result.reason = .linkDown
                return result
            }
            result.flags = result.gateway == nil ? [.reachable, .isDirect] : [.reachable]
        }
        return result
    }
}
