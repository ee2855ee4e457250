import Foundation
import Testing
@testable import Reachability

/// The host's own firewall read from the kernel and judged (issue 48): real nft rulesets in a
/// namespace of their own, read back over nf_tables' netlink and run for packets the host would
/// send; the kernel's own answer to a real connection agrees for each certain verdict.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/sbin/nft"), "needs nft"))
struct FirewallRulesetTests {
    static func ruleset(_ text: String, in namespace: TestNamespace) throws -> FirewallRuleset {
        let file = NSTemporaryDirectory() + "reachd-nft-\(namespace.name).nft"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        try namespace.exec("/usr/sbin/nft", ["-f", file])
        return try NftablesReader.read(namespacePath: namespace.path)
    }

    static func judge(_ ruleset: FirewallRuleset, _ destination: String, _ port: UInt16?, transport: UInt8 = 6) -> FirewallJudgement {
        // Leaving through eth0, as the route lookup says; `oifname "lo"` then certainly does not match.
        let packet = FirewallPacket(destination: IPAddress(destination)!, transport: transport, port: port, outputInterface: (2, "eth0"))
        return FirewallEvaluation(ruleset: ruleset, packet: packet).judge()
    }

    static func refusedBy(_ judgement: FirewallJudgement) -> String? {
        if case let .refused(name, _) = judgement { name.description } else { nil }
    }

    @Test func aDropOfOneDestinationAndPortRefusesThatAndNothingElse() throws {
        let namespace = try TestNamespace()
        let ruleset = try Self.ruleset("""
            table inet wall {
                chain out {
                    type filter hook output priority 0; policy accept;
                    ip daddr 198.51.100.2 tcp dport 8080 drop
                }
            }
            """, in: namespace)
        let rule = try #require(Self.refusedBy(Self.judge(ruleset, "198.51.100.2", 8080)))
        #expect(rule.hasPrefix("table inet wall chain out rule handle "), "\(rule)")
        #expect(Self.judge(ruleset, "198.51.100.2", 8081) == .leaves)
        #expect(Self.judge(ruleset, "198.51.100.3", 8080) == .leaves)
        #expect(Self.judge(ruleset, "198.51.100.2", 8080, transport: 17) == .leaves, "a UDP datagram")
        guard case .mayBeRefused = Self.judge(ruleset, "198.51.100.2", nil) else {
            Issue.record("no port: the rule may refuse: \(Self.judge(ruleset, "198.51.100.2", nil))")
            return
        }
        #expect(Self.judge(ruleset, "2001:db8::2", 8080) == .leaves)
    }

    @Test func rejectsThroughSetsRangesAndJumps_andAPolicyOfDrop() throws {
        let namespace = try TestNamespace()
        let ruleset = try Self.ruleset("""
            table ip guard {
                chain mail { tcp dport 25 reject with icmp type admin-prohibited; }
                chain out {
                    type filter hook output priority 10; policy drop;
                    ct state established,related accept
                    oifname "lo" accept
                    ip daddr { 203.0.113.0/24, 198.51.100.64-198.51.100.127 } tcp dport { 80, 443 } reject
                    jump mail
                    ip daddr 192.0.2.0/24 accept
                    tcp dport 1000-2000 accept
                }
            }
            table ip6 guard6 {
                chain post { type filter hook postrouting priority 0; ip6 daddr 2001:db8::/32 drop; }
            }
            """, in: namespace)
        guard case let .refused(web, rejects) = Self.judge(ruleset, "203.0.113.9", 443) else {
            Issue.record("\(Self.judge(ruleset, "203.0.113.9", 443))")
            return
        }
        #expect(rejects && web.table == "guard" && web.chain == "out" && web.handle != nil)
        #expect(Self.refusedBy(Self.judge(ruleset, "198.51.100.100", 80)) != nil, "inside the range")
        #expect(Self.refusedBy(Self.judge(ruleset, "198.51.100.128", 80))?.hasSuffix("policy") == true, "past the range: the policy")
        #expect(Self.refusedBy(Self.judge(ruleset, "192.0.2.5", 25))?.contains("chain mail") == true, "through the jump")
        #expect(Self.judge(ruleset, "192.0.2.5", 22) == .leaves)
        #expect(Self.judge(ruleset, "198.51.100.200", 1500) == .leaves)
        #expect(Self.refusedBy(Self.judge(ruleset, "198.51.100.200", 22)) == "table ip guard chain out policy")
        #expect(Self.refusedBy(Self.judge(ruleset, "2001:db8::7", 443)) != nil)
        #expect(Self.judge(ruleset, "2001:db9::7", 443) == .leaves)
    }

    @Test func aRuleThatDependsOnWhatIsNotKnownMayRefuse_neverCertainly() throws {
        let namespace = try TestNamespace()
        let ruleset = try Self.ruleset("""
            table inet shaped {
                chain out {
                    type filter hook output priority 0;
                    tcp dport 9000 limit rate 1/second drop
                    tcp sport 40000-50000 tcp dport 9001 drop
                    meta mark 0x2a tcp dport 9002 drop
                }
            }
            """, in: namespace)
        for port: UInt16 in [9000, 9001, 9002] {
            guard case .mayBeRefused = Self.judge(ruleset, "198.51.100.2", port) else {
                Issue.record("port \(port): \(Self.judge(ruleset, "198.51.100.2", port))")
                continue
            }
        }
        #expect(Self.judge(ruleset, "198.51.100.2", 9003) == .leaves)
    }

    /// What the kernel does to a real connection agrees with the judgement.
    @Test func theKernelsOwnAnswerAgrees() throws {
        let namespace = try TestNamespace()
        try namespace.ip("link add v0 type veth peer name v1")
        try namespace.ip("link set v0 up")
        try namespace.ip("link set v1 up")
        try namespace.ip("addr add 192.0.2.2/24 dev v0")
        try namespace.ip("route add default via 192.0.2.1")
        let ruleset = try Self.ruleset("""
            table inet wall {
                chain out {
                    type filter hook output priority 0;
                    ip daddr 198.51.100.2 tcp dport 8080 reject with tcp reset
                }
            }
            """, in: namespace)
        #expect(Self.refusedBy(Self.judge(ruleset, "198.51.100.2", 8080)) != nil)
        let connect = """
            import socket, sys
            s = socket.socket(); s.settimeout(0.5)
            try:
                s.connect((sys.argv[1], int(sys.argv[2]))); print("connected")
            except ConnectionRefusedError: print("refused")
            except OSError as e: print("other", e)
            """
        let refused = try namespace.exec("/usr/bin/python3", ["-c", connect, "198.51.100.2", "8080"])
        let other = try namespace.exec("/usr/bin/python3", ["-c", connect, "198.51.100.2", "8081"])
        #expect(refused.contains("refused") && !other.contains("refused"), "\(refused) / \(other)")
    }

    @Test func withoutCapNetAdminTheKernelRefusesAndTheRefusalSaysSo() throws {
        let namespace = try TestNamespace()
        let reader = """
            import socket, struct, errno
            s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)
            s.send(struct.pack("=IHHII", 20, (10 << 8) | 4, 0x301, 1, 0) + bytes([0, 0, 0, 0]))
            data = s.recv(65536)
            length, kind = struct.unpack("=IH", data[:6])
            print(kind, struct.unpack("=i", data[16:20])[0])
            """
        let line = try namespace.exec("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", reader])
        #expect(line.trimmingCharacters(in: .whitespacesAndNewlines) == "2 -\(EPERM)", "\(line)")
        #expect("\(NftablesReader.Refusal.notPermitted)".contains("needs root"))
    }
}

/// nf_tables' decoder against hostile bytes: every truncation of a real rule and seeded random
/// buffers are errors or messages, never a trap.
struct NftablesDecoderGarbageTests {
    /// NFT_MSG_NEWRULE for table inet "t", chain "c", handle 3: `ip daddr 198.51.100.2 drop`
    /// as payload, cmp, immediate.
    static var rule: [UInt8] {
        func attribute(_ type: UInt16, _ value: [UInt8]) -> [UInt8] {
            var bytes: [UInt8] = []
            NetlinkRequest.appendAttribute(type, value, to: &bytes)
            return bytes
        }
        func big(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
        func element(_ name: String, _ data: [UInt8]) -> [UInt8] {
            attribute(1, attribute(1, Array(name.utf8) + [0]) + attribute(0x8000 | 2, data))
        }
        let payload = element("payload", attribute(1, big(1)) + attribute(2, big(1)) + attribute(3, big(16)) + attribute(4, big(4)))
        let compare = element("cmp", attribute(1, big(1)) + attribute(2, big(0)) + attribute(0x8000 | 3, attribute(1, [198, 51, 100, 2])))
        let verdict = element("immediate", attribute(1, big(0)) + attribute(0x8000 | 2, attribute(0x8000 | 2, attribute(1, big(0)))))
        let body = [1, 0, 0, 0] + attribute(1, Array("t".utf8) + [0]) + attribute(2, Array("c".utf8) + [0])
            + attribute(3, withUnsafeBytes(of: UInt64(3).bigEndian, Array.init)) + attribute(0x8000 | 4, payload + compare + verdict)
        return NetlinkRequest.header(type: 10 << 8 | 6, flags: 2, sequence: 1, bodyLength: body.count) + body
    }

    @Test func aRuleDecodesToItsExpressions() throws {
        let decoded = NftablesDecoder.decode(Self.rule)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        guard case let .rule(family, table, chain, rule)? = decoded.messages.first else {
            Issue.record("\(decoded.messages)")
            return
        }
        #expect(family == 1 && table == "t" && chain == "c" && rule.handle == 3 && rule.expressions.count == 3)
        var chainValue = FirewallChain(family: 1, table: "t", name: "c", hook: (3, 0, false))
        chainValue.rules = [rule]
        let judged = FirewallEvaluation(ruleset: FirewallRuleset(chains: [chainValue]), packet: FirewallPacket(destination: IPAddress("198.51.100.2")!)).judge()
        #expect(judged == .refused(FirewallRuleName(family: "inet", table: "t", chain: "c", handle: 3), rejects: false))
    }

    /// The fuzz target's seed of a whole ruleset, recorded from the kernel (a chain dump, a rule
    /// dump, a set dump and two sets' elements in one buffer), assembled by the reader's own
    /// `ruleset(_:)` and judged: the rules it holds decide as `nft` wrote them.
    @Test func aRecordedDumpAssemblesIntoTheRulesetItDescribes() throws {
        let seed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/nftables/whole-ruleset")
        let decoded = NftablesDecoder.decode(Array(try Data(contentsOf: seed)))
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        let ruleset = NftablesReader.ruleset(decoded.messages)
        #expect(Set(ruleset.chains.map(\.name)) == ["out", "more", "post", "tail"])
        #expect(ruleset.sets.values.contains { $0.isInterval && $0.ranges.count >= 2 }, "10.0.0.0/8 and 192.0.2.0/24")
        func judge(_ address: String, _ port: UInt16, uid: UInt32 = 0) -> FirewallJudgement {
            FirewallEvaluation(ruleset: ruleset, packet: FirewallPacket(destination: IPAddress(address)!, transport: 6, port: port, uid: uid)).judge()
        }
        // `ip daddr @blocked tcp dport 443 reject`, in the set's elements.
        guard case .refused(let name, rejects: true) = judge("192.0.2.7", 443) else { Issue.record("\(judge("192.0.2.7", 443))"); return }
        #expect(name.table == "wall" && name.chain == "out")
        // `tcp dport { 22, 80-90 } drop` in the chain jumped to, for an address out of the set.
        guard case .refused(_, rejects: false) = judge("10.1.2.3", 85) else { Issue.record("\(judge("10.1.2.3", 85))"); return }
        // Past every filter rule, the nat chain's policy drop for what is not in its interval set,
        // unless its `goto tail` to a rate limit may accept first: never a certain answer there.
        #expect(judge("10.1.2.3", 8080) == .leaves)
        #expect(judge("203.0.113.1", 8080) != .leaves)
    }

    @Test func everyTruncationAndTwentyThousandRandomBuffersNeverTrap() {
        let rule = Self.rule
        for length in 0..<rule.count {
            var cut = Array(rule[..<length])
            if cut.count >= 4 { cut.replaceSubrange(0..<4, with: withUnsafeBytes(of: UInt32(length), Array.init)) }
            let decoded = NftablesDecoder.decode(cut)
            #expect(decoded.messages.count + decoded.errors.count <= 1)
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            var bytes = rule
            for _ in 0..<4 { bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            _ = NftablesDecoder.decode(bytes)
            _ = NftablesDecoder.decode((0..<Int.random(in: 0..<200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
    }
}

/// `reachctl check|why --port` as root against a real ruleset (issue 48): the host's own reject
/// is named at once, what a real connection meets agrees, and without root nothing is claimed.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/sbin/nft"), "needs nft"))
struct FirewallCheckTests {
    static func uplink() throws -> TestNamespace {
        let namespace = try TestNamespace()
        try namespace.ip("link add up0 type veth peer name up1")
        try namespace.ip("link set up0 up")
        try namespace.ip("link set up1 up")
        try namespace.ip("addr add 192.0.2.2/24 dev up0")
        try namespace.ip("route add default via 192.0.2.1")
        _ = try FirewallRulesetTests.ruleset("""
            table inet wall {
                chain out {
                    type filter hook output priority 0;
                    ip daddr 198.51.100.2 tcp dport 8080 reject
                    ip daddr 198.51.100.2 udp dport 53 drop
                    ip daddr 198.51.100.9 drop
                }
            }
            """, in: namespace)
        return namespace
    }

    @Test func checkNamesTheRuleThatRefusesAndOnlyForItsPort() throws {
        let namespace = try Self.uplink()
        let refused = try reachctl(["check", "198.51.100.2", "--port", "8080", "--json", "--netns", namespace.name])
        let json = try refused.json()
        #expect(refused.status == 1 && json["reason"] as? String == "firewallRefused", "\(refused)")
        let message = json["message"] as? String ?? ""
        #expect(message.contains("rejects tcp port 8080 to 198.51.100.2: table inet wall chain out rule handle "), "\(message)")
        #expect(message.contains("nft -a list chain inet wall out"), "\(message)")
        let text = try reachctl(["check", "198.51.100.2", "--port", "8080", "--netns", namespace.name])
        #expect(text.status == 1 && text.stdout.contains("firewall"), "\(text)")
        // Another port, no port (the rule may refuse: not claimed), UDP to its own rule.
        #expect(try reachctl(["check", "198.51.100.2", "--port", "8081", "--netns", namespace.name]).status == 0)
        #expect(try reachctl(["check", "198.51.100.2", "--netns", namespace.name]).status == 0)
        // The rules are read only when a port is asked about: a drop of every port shows then.
        #expect(try reachctl(["check", "198.51.100.9", "--netns", namespace.name]).status == 0)
        #expect(try reachctl(["check", "198.51.100.9", "--port", "1", "--netns", namespace.name]).status == 1)
        let udp = try reachctl(["check", "198.51.100.2", "--port", "53", "--udp", "--json", "--netns", namespace.name])
        let udpMessage = try udp.json()["message"] as? String ?? ""
        #expect(udp.status == 1 && udpMessage.contains("drops udp port 53"), "\(udp)")
        // What a program meets: the kernel refuses that connection at once, not the other.
        let connect = """
            import socket, sys
            s = socket.socket(); s.settimeout(0.3)
            try:
                s.connect(("198.51.100.2", int(sys.argv[1]))); print("connected")
            except ConnectionRefusedError: print("refused")
            except OSError as e: print("other")
            """
        let met = try namespace.exec("/usr/bin/python3", ["-c", connect, "8080"])
        let other = try namespace.exec("/usr/bin/python3", ["-c", connect, "8081"])
        #expect(met.contains("refused") && !other.contains("refused"), "\(met) / \(other)")
    }

    @Test func whyNamesTheFirewallLayerAtOnce() throws {
        let namespace = try Self.uplink()
        let why = try reachctl(["why", "198.51.100.2", "--port", "8080", "--json", "--netns", namespace.name])
        let json = try why.json()
        #expect(why.status == 1 && json["brokenLayer"] as? String == "firewall", "\(why)")
        let layer = (json["layers"] as? [[String: Any]])?.first { $0["layer"] as? String == "firewall" }
        #expect((layer?["evidence"] as? [String])?.first?.contains("rejects tcp port 8080 to 198.51.100.2") == true, "\(json)")
        let open = try reachctl(["why", "198.51.100.2", "--port", "8081", "--json", "--netns", namespace.name]).json()
        let fine = (open["layers"] as? [[String: Any]])?.first { $0["layer"] as? String == "firewall" }
        #expect(fine?["status"] as? String == "ok" && open["brokenLayer"] as? String != "firewall", "\(open)")
    }

    @Test func withoutRootNothingIsClaimedAndTheNoteSaysWhy() throws {
        let namespace = try Self.uplink()
        let child = try ChildProcess(
            "/usr/sbin/ip", ["netns", "exec", namespace.name, "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                reachctlPath(), "check", "198.51.100.2", "--port", "8080"])
        let (status, stdout, stderr) = try child.finish(timeout: .seconds(30))
        #expect(status == 0 && stderr.contains("can be read only as root"), "\(status) \(stdout) \(stderr)")
    }

    @Test func badPortsAreRefusedNamingTheValue() throws {
        let zero = try reachctl(["check", "192.0.2.1", "--port", "0"])
        #expect(zero.status == 255 && zero.stderr.contains("--port 0"), "\(zero)")
        let big = try reachctl(["check", "192.0.2.1", "--port", "70000"])
        #expect(big.status == 255 && big.stderr.contains("70000"), "\(big)")
        let udp = try reachctl(["why", "192.0.2.1", "--udp"])
        #expect(udp.status == 255 && udp.stderr.contains("--udp needs --port"), "\(udp)")
        for command in ["check", "why"] {
            let unit = try reachctl([command, "--unit", "backup.service", "192.0.2.1", "--port", "443"])
            #expect(unit.status == 255 && unit.stderr.contains("--unit backup.service takes no --port 443"), "\(unit)")
        }
    }
}
