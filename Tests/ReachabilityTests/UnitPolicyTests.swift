import Testing
@testable import Reachability

/// `UnitPolicy`: a service's sandbox judged against a destination and the route its traffic
/// would take, without root; and `UnitName`, which refuses what systemd would.
@Suite struct UnitPolicyTests {
    static let server = IPAddress("198.51.100.7")!
    static let other = IPAddress("203.0.113.9")!
    static let routed = CheckResult(target: "198.51.100.7", flags: [.reachable, .isDirect], interface: "up0", addresses: [server])
    static let noRoute = CheckResult(target: "198.51.100.7", interface: "", addresses: [server], reason: .noRoute)

    func judge(_ sandbox: UnitSandbox, _ namespace: UnitSandbox.Namespace = .host, to destination: IPAddress = server, route: CheckResult = routed)
        -> UnitPolicy.Verdict
    {
        UnitPolicy.judge(sandbox, namespace: namespace, destination: destination, route: route)
    }

    @Test func noRestriction_answersAsTheRoute() {
        let verdict = judge(UnitSandbox(unit: "plain.service"))
        #expect(verdict.result == Self.routed)
        #expect(verdict.layer.status == .ok && verdict.layer.evidence.first == "nothing of plain.service's sandbox denies 198.51.100.7")
    }

    @Test func ipAddressDenyAny_withOneAllow_letsOnlyThatOne() {
        let sandbox = UnitSandbox(
            unit: "backup.service", addressAllow: [IPPrefix("198.51.100.7/32")!], addressDeny: [IPPrefix("0.0.0.0/0")!, IPPrefix("::/0")!])
        #expect(judge(sandbox).result.isReachable)
        #expect(judge(sandbox).layer.evidence.contains("IPAddressAllow=198.51.100.7/32 of backup.service allows 198.51.100.7"))
        let denied = judge(sandbox, to: Self.other, route: CheckResult(target: "203.0.113.9", flags: [.reachable], interface: "up0"))
        #expect(!denied.result.isReachable && denied.result.reason == .policyBlocked)
        #expect(denied.result.message == "IPAddressDeny=any of backup.service: 203.0.113.9 is denied")
        #expect(denied.layer.status == .broken && denied.layer.name == .policy && denied.layer.fix.contains("IPAddressAllow="))
        var legacy = sandbox
        legacy.addressFilterEnforced = false
        let ignored = judge(legacy, to: Self.other, route: CheckResult(target: "203.0.113.9", flags: [.reachable], interface: "up0"))
        #expect(ignored.result.isReachable && ignored.layer.evidence.contains { $0.contains("not enforced: systemd filters only on the unified cgroup hierarchy") })
    }

    @Test func restrictNetworkInterfaces_judgesTheRoutesInterface() {
        let allowList = UnitSandbox(unit: "vpn-only.service", interfaces: .init(allows: true, names: ["wg0"]))
        let denied = judge(allowList)
        #expect(denied.result.reason == .policyBlocked && denied.result.interface == "up0")
        #expect(denied.result.message == "RestrictNetworkInterfaces=wg0 of vpn-only.service: the route to 198.51.100.7 leaves through up0")
        let viaTunnel = CheckResult(target: "198.51.100.7", flags: [.reachable], interface: "wg0")
        #expect(judge(allowList, route: viaTunnel).result.isReachable)
        let denyList = UnitSandbox(unit: "no-up.service", interfaces: .init(allows: false, names: ["up0"]))
        #expect(judge(denyList).result.message?.hasPrefix("RestrictNetworkInterfaces=~up0 of no-up.service") == true)
        #expect(judge(denyList, route: viaTunnel).result.isReachable)
        var ignored = allowList
        ignored.interfacesEnforced = false
        #expect(judge(ignored).result.isReachable)
        #expect(judge(ignored).layer.evidence.contains { $0.contains("not enforced: this systemd is built without BPF_FRAMEWORK") })
    }

    @Test func restrictAddressFamilies_refusesTheFamily_beforeAnyRoute() {
        let unixOnly = UnitSandbox(unit: "local.service", families: .init(allows: true, names: ["AF_UNIX"]))
        let verdict = judge(unixOnly, route: Self.noRoute)
        #expect(verdict.result.reason == .policyBlocked && verdict.result.message == "RestrictAddressFamilies=AF_UNIX of local.service: AF_INET sockets are refused")
        let noSix = UnitSandbox(unit: "four.service", families: .init(allows: false, names: ["AF_INET6"]))
        #expect(judge(noSix).result.isReachable)
        #expect(judge(noSix, to: IPAddress("2001:db8::1")!).result.message?.contains("AF_INET6 sockets are refused") == true)
    }

    @Test func privateNetwork_reachesItsLoopbackOnly() {
        let sandbox = UnitSandbox(unit: "private.service", privateNetwork: true)
        let out = judge(sandbox, .loopbackOnly)
        #expect(out.result.reason == .policyBlocked && out.result.message?.hasPrefix("PrivateNetwork=yes of private.service") == true)
        let loopback = judge(sandbox, .loopbackOnly, to: IPAddress("127.0.0.1")!, route: Self.noRoute)
        #expect(loopback.result.isReachable && loopback.result.interface == "lo")
    }

    @Test func namespaceWithoutUplink_namesTheNamespace_andOneWithAnUplinkAnswersItsRoute() {
        let sandbox = UnitSandbox(unit: "confined.service", namespacePath: "/run/netns/vpn")
        let none = judge(sandbox, .path("/run/netns/vpn"), route: Self.noRoute)
        #expect(none.result.reason == .policyBlocked)
        #expect(none.result.message == "NetworkNamespacePath=/run/netns/vpn of confined.service: that namespace has no way to 198.51.100.7 (noRoute)")
        let through = judge(sandbox, .path("/run/netns/vpn"))
        #expect(through.result.isReachable && through.result.message == "in the network namespace /run/netns/vpn")
    }

    @Test func aRouteThatRefuses_isTheRoutesNotTheSandboxs() {
        let prohibited = CheckResult(target: "198.51.100.7", reason: .policyBlocked, message: "prohibit")
        let verdict = judge(UnitSandbox(unit: "user.service", user: .known(4242)), route: prohibited)
        #expect(verdict.result == prohibited && verdict.layer.status == .ok)
        #expect(verdict.layer.evidence.contains("routed as uid 4242"))
    }

    @Test func explanation_putsPolicyAfterRoute_andHidesTheHostsLayersInANamespace() {
        let host = Explanation(target: "198.51.100.7", uid: 0, layers: Explanation.hostLayers.map { .init(name: $0, status: .ok, evidence: ["host"]) })
        let verdict = judge(UnitSandbox(unit: "confined.service"), .path("/run/netns/vpn"), route: Self.noRoute)
        let inNamespace = UnitPolicy.explanation(host, verdict, namespace: .path("/run/netns/vpn"), unit: "confined.service")
        #expect(inNamespace.layers.map(\.name) == [.radio, .link, .address, .gateway, .route, .policy, .firewall, .dns, .traffic, .portal])
        #expect(inNamespace.brokenLayer == .policy)
        #expect(inNamespace[.link]?.status == .unknown)
        let onHost = UnitPolicy.explanation(host, judge(UnitSandbox(unit: "plain.service")), namespace: .host, unit: "plain.service")
        #expect(onHost[.link]?.evidence == ["host"] && onHost.brokenLayer == nil)
    }

    @Test(arguments: ["backup", "backup.service", "getty@tty1.service", "a:b-c_d.e\\x2d.service"])
    func unitName_acceptsServices(_ name: String) {
        #expect((try? UnitName.validate(name).get())?.hasSuffix(".service") == true)
    }

    @Test(arguments: ["", "../x.service", "x y.service", "backup.socket", "@.service", "getty@.service", "a@b@c.service",
                      "x\n.service", "é.service", String(repeating: "a", count: 250)])
    func unitName_refusesTheRest_namingTheValue(_ name: String) {
        guard case let .failure(refusal) = UnitName.validate(name) else { Issue.record("accepted \(name)"); return }
        #expect(refusal.description.hasPrefix("invalid unit name "))
    }
}
