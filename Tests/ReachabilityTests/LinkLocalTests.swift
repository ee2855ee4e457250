import Foundation
import Testing
@testable import Reachability
@testable import SystemConfiguration

/// issue 42: link-local targets (169.254/16, fe80::/10 with a scope) on links that hold nothing
/// else. The kernel routes them out of the link and a real client reaches the peer; reachd,
/// the library in-process and SCNetworkReachability answer reachable and direct, each answer
/// beside `ip route get`'s. A host whose only IPv4 address is link-local is not online, and
/// `status` and `why` say why.
@Suite(rootOnly)
struct LinkLocalTests {
    /// up0 holds 169.254.23.7/16 and its own fe80:: address, nothing global; its peer up0p, in
    /// a namespace of its own, holds 169.254.9.9/16 and fe80::1 and listens on TCP port 7.
    final class Scenario: @unchecked Sendable {
        let ns: TestNamespace
        let far: TestNamespace
        let listener: ChildProcess

        init(_ tag: String = #function) throws {
            ns = try TestNamespace(tag)
            far = try TestNamespace("far" + tag)
            try ns.ip("link add up0 type veth peer name up0p")
            try ns.ip("link set up0p netns \(far.name)")
            try ns.ip("addr add 169.254.23.7/16 dev up0")
            try far.ip("addr add 169.254.9.9/16 dev up0p")
            try far.ip("-6 addr add fe80::1/64 dev up0p nodad")
            try far.ip("link set up0p up")
            try ns.ip("link set up0 up")
            try ns.waitForCarrier("up0")
            // A TCP listener on both of the peer's addresses: what a real client connects to.
            listener = try ChildProcess(
                "/usr/sbin/ip",
                ["netns", "exec", far.name, "python3", "-c", """
                import socket, time
                s = socket.socket(socket.AF_INET6); s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                s.bind(("::", 7)); s.listen(8); print("listening", flush=True)
                while True: s.accept()
                """])
            try waitForLinkLocalAddress()
        }

        /// up0's own fe80:: address is tentative for about a second (DAD): until then the kernel
        /// has no source for fe80::1%up0.
        private func waitForLinkLocalAddress() throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while try !ns.ip("-6 addr show dev up0 tentative").isEmpty || ns.ip("-6 addr show dev up0 scope link").isEmpty {
                guard ContinuousClock.now < deadline else { throw TimedOut(what: "up0's fe80:: address") }
                usleep(20_000)
            }
        }

        /// `ip route get` for `target`: the kernel's own answer, to stand beside reachd's.
        func kernelRoute(_ target: String) throws -> String {
            let parts = target.split(separator: "%").map(String.init)
            return try ns.ip("route get \(parts[0])" + (parts.count > 1 ? " oif \(parts[1])" : ""))
        }

        /// A real TCP connection from `ns` to the peer, through the kernel alone.
        func connects(_ target: String) throws -> Bool {
            let script = """
            import socket, sys
            info = socket.getaddrinfo(sys.argv[1], 7, type=socket.SOCK_STREAM)[0]
            s = socket.socket(info[0], info[1]); s.settimeout(3); s.connect(info[4]); print("connected")
            """
            return (try? ns.exec("python3", ["-c", script, target]))?.contains("connected") == true
        }

        deinit { listener.signal(SIGTERM) }
    }

    static let targets = ["169.254.9.9", "fe80::1%up0"]

    /// The kernel routes each target out of up0 with no gateway, a client connects, and
    /// `reachctl check --json` says reachable and direct through up0, from reachd and in-process.
    @Test func linkLocalPeersAreReachableAndDirect() async throws {
        let scenario = try Scenario()
        try await eventually("the peer's listener: \(scenario.listener.lines)") { scenario.listener.lines.contains("listening") }
        let fixture = try ReachdFixture(namespace: scenario.ns)
        for target in Self.targets {
            let kernel = try scenario.kernelRoute(target)
            #expect(kernel.contains("dev up0") && !kernel.contains(" via "), "\(target): ip route get says \(kernel)")
            #expect(try scenario.connects(target), "\(target): a real client reaches the peer")
            for source in [["--bus-address", fixture.address, "--daemon"], ["--netns", scenario.ns.name]] {
                let result = try reachctl(["check", target, "--json"] + source)
                let json = try result.json()
                #expect(result.status == 0, "\(target) \(source): \(result.stdout) \(result.stderr); kernel: \(kernel)")
                #expect(json["flags"] as? [String] == ["reachable", "isDirect"], "\(target) \(source): \(result.stdout)")
                #expect(json["interface"] as? String == "up0", "\(target) \(source): \(result.stdout)")
                #expect((json["reason"] as? String ?? "").isEmpty, "\(target) \(source): \(result.stdout)")
                // why agrees: nothing broken, the address layer on the link-local source.
                let why = try reachctl(["why", target, "--json"] + source)
                let layers = try why.json()["layers"] as? [[String: Any]] ?? []
                let address = layers.first { $0["layer"] as? String == "address" }
                #expect(why.status == 0 && layers.allSatisfy { $0["status"] as? String != "broken" }, "\(target) \(source): \(why.stdout)")
                #expect((address?["evidence"] as? [String])?.first?.hasSuffix("(link-local)") == true, "\(target) \(source): \(why.stdout)")
            }
        }
        // A link-local address beyond any link the host has: still no route, as the kernel says.
        try scenario.ns.ip("route del 169.254.0.0/16 dev up0")
        #expect(throws: CommandFailed.self) { try scenario.kernelRoute("169.254.9.9") }
        let gone = try reachctl(["check", "169.254.9.9", "--json", "--netns", scenario.ns.name])
        let reason = try gone.json()["reason"] as? String
        #expect(gone.status == 1 && reason == "noRoute", "\(gone.stdout)")
    }

    /// The same two targets through SCNetworkReachability, answered in-process and by reachd.
    @Test(arguments: [false, true])
    func systemConfigurationAnswersLinkLocalPeersDirect(throughReachd: Bool) async throws {
        let scenario = try Scenario()
        let harness = throughReachd ? try DaemonHarness(scenario.ns) : nil
        if let harness { try await harness.ready(state: "local") }
        try await withReachabilityService(namespace: scenario.ns, bus: harness?.address) { service in
            for target in Self.targets {
                let reference = try #require(SCNetworkReachabilityCreateWithName(nil, target))
                var flags: SCNetworkReachabilityFlags = []
                #expect(SCNetworkReachabilityGetFlags(reference, &flags), "\(target)")
                let kernel = try scenario.kernelRoute(target)
                #expect(flags == [.reachable, .isDirect], "\(target): \(flags); kernel: \(kernel)")
            }
            #expect(service.answersFromDaemon == throughReachd)
        }
    }

    /// With only 169.254.23.7 (and even a default route out of up0, as some autoconfiguration
    /// daemons add one), the host is local, not online: `status` says the address is link-local
    /// only, `why` names the address layer with the same words, from reachd and in-process.
    @Test func hostWithOnlyLinkLocalIPv4IsNotOnline() async throws {
        let scenario = try Scenario()
        let fixture = try ReachdFixture(namespace: scenario.ns)
        for withDefault in [false, true] {
            if withDefault { try scenario.ns.ip("route add default dev up0") }
            for source in [["--bus-address", fixture.address, "--daemon"], ["--netns", scenario.ns.name]] {
                var status = CommandResult(status: -1, stdout: "", stderr: "")
                try await eventually("\(source) default \(withDefault): \(status.stdout)") {
                    status = try reachctl(["status"] + source)
                    return status.stdout.hasPrefix(withDefault ? "State: local, default route via up0" : "State: local\n")
                }
                #expect(status.status == 1)
                #expect(
                    status.stdout.contains(
                        "\nAddress: only link-local IPv4 (169.254.23.7/16 on up0): it reaches that link's neighbours, not the internet; no DHCP server answered\n"),
                    "\(source): \(status.stdout)")
                let why = try reachctl(["why", "--json"] + source)
                let layers = try why.json()["layers"] as? [[String: Any]] ?? []
                let broken = layers.first { $0["status"] as? String == "broken" }
                #expect(why.status == 1)
                #expect(broken?["layer"] as? String == "address", "\(source): \(why.stdout)")
                #expect((broken?["fix"] as? String)?.hasPrefix("only a link-local address on up0: it reaches that link's neighbours") == true,
                        "\(source): \(why.stdout)")
                #expect((broken?["evidence"] as? [String])?.contains("169.254.23.7/16 (link-local)") == true, "\(source): \(why.stdout)")
            }
        }
        // A global address beside it: online, and the line is gone.
        try scenario.ns.ip("addr add 192.0.2.2/24 dev up0")
        try scenario.ns.ip("route replace default via 192.0.2.1 dev up0")
        var online = CommandResult(status: -1, stdout: "", stderr: "")
        try await eventually("online: \(online.stdout)") {
            online = try reachctl(["status", "--bus-address", fixture.address, "--daemon"])
            return online.status == 0
        }
        #expect(!online.stdout.contains("link-local"), "\(online.stdout)")
    }
}
