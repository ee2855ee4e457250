import Foundation
import Testing
@testable import Reachability

/// issue 8: reachd's answers against the kernel's own (`ip route get`), over random routing
/// tables and policy rules (priorities, to/from prefixes, fwmark, `not`, suppress_prefixlength,
/// blackhole/unreachable/prohibit routes and rules). For every random destination the address
/// check names the same egress interface and gateway, or fails where the kernel fails; the
/// host's primary interface is the kernel's path to reachd's internet destination.
///
/// CI runs a fixed seed; run more locally with REACHD_DIFF_SEED=N REACHD_DIFF_DESTINATIONS=20000.
@Suite(rootOnly)
struct DifferentialRoutingTests {
    /// SplitMix64: a small, seedable generator, so a failing layout can be replayed.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
        mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    }

    static func dotted(_ value: UInt32) -> String {
        "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
    }

    /// A prefix of `length` around a random address (kept near the ranges destinations are drawn from).
    static func prefix(_ random: inout Random, length: Int) -> String {
        let address = UInt32(truncatingIfNeeded: random.next())
        let mask: UInt32 = length == 0 ? 0 : ~UInt32(0) << (32 - length)
        return "\(dotted(address & mask))/\(length)"
    }

    static func randomLayout(_ random: inout Random, routes: Int, rules: Int) -> [String] {
        let tables = ["main", "100", "101", "102", "103"]
        var lines: [String] = []
        for _ in 0..<routes {
            let length = random.pick([0, 1, 2, 4, 8, 12, 16, 24, 32])
            let destination = prefix(&random, length: length)
            let table = random.pick(tables)
            let metric = random.below(3) * 100
            let target: String = switch random.below(6) {
            case 0, 1: "via 192.0.2.\(1 + random.below(9)) dev up0"
            case 2: "via 198.51.100.1 dev up1"
            case 3: "dev tun0"
            default: ""
            }
            let type = target.isEmpty ? random.pick(["blackhole", "unreachable", "prohibit"]) + " " : ""
            lines.append("route replace \(type)\(destination) \(target) table \(table) metric \(metric)")
        }
        var priorities = Set<Int>()
        for _ in 0..<rules {
            var priority = 1 + random.below(32000)
            while priorities.contains(priority) { priority += 1 }
            priorities.insert(priority)
            var selector = ""
            if random.chance(30) { selector += " not" }
            if random.chance(50) { selector += " to \(prefix(&random, length: random.pick([1, 2, 4, 8])))" }
            if random.chance(25) { selector += " fwmark 0x\(String(1 + random.below(3), radix: 16))/0xf" }
            if random.chance(10) { selector += " from \(prefix(&random, length: random.pick([0, 1, 8])))" }
            let action: String = switch random.below(10) {
            case 0: "blackhole"
            case 1: "unreachable"
            case 2: "prohibit"
            case 3, 4: "table main suppress_prefixlength \(random.pick([0, 1, 8]))"
            default: "table \(random.pick(tables))"
            }
            lines.append("rule add pref \(priority)\(selector) \(action)")
        }
        return lines
    }

    /// What `ip -o route get` said for one destination. `blocked`: refused by an unreachable,
    /// prohibit or blackhole route or rule (reachd's policyBlocked), not "Network is unreachable".
    enum KernelAnswer: Equatable {
        case failed(blocked: Bool)
        case local
        case route(device: String, gateway: String?)
    }

    /// `ip -o -force -batch` with one `route get` per destination: successful answers print one
    /// line each, in order, on stdout; failures name their batch line on stderr.
    static func kernelAnswers(_ ns: TestNamespace, _ destinations: [String]) throws -> [KernelAnswer] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(ns.name)-get")
        try destinations.map { "route get \($0)" }.joined(separator: "\n").appending("\n")
            .write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let (_, output, errors) = try ChildProcess("/usr/sbin/ip", ["-n", ns.name, "-o", "-force", "-batch", file.path])
            .finish(timeout: .seconds(600))
        // Each failure is "RTNETLINK answers: <strerror>" then "Command failed FILE:LINE".
        var failed: [Int: Bool] = [:]
        var refusal = ""
        for line in errors.split(separator: "\n") {
            if line.hasPrefix("RTNETLINK answers: ") { refusal = String(line.dropFirst("RTNETLINK answers: ".count)) }
            guard line.hasPrefix("Command failed "), let number = line.split(separator: ":").last.flatMap({ Int($0) }) else { continue }
            failed[number - 1] = ["No route to host", "Permission denied", "Invalid argument"].contains(refusal)
        }
        var lines = output.split(separator: "\n").makeIterator()
        return try destinations.indices.map { index in
            if let blocked = failed[index] { return .failed(blocked: blocked) }
            guard let line = lines.next() else { throw CommandFailed(command: "ip route get", status: 0, output: "too few answers") }
            let words = line.split(separator: " ").map(String.init)
            if words.first == "local" { return .local }
            if ["blackhole", "unreachable", "prohibit"].contains(words.first) { return .failed(blocked: true) }
            if words.first == "throw" { return .failed(blocked: false) }
            guard let dev = words.firstIndex(of: "dev").map({ words[$0 + 1] }) else { return .failed(blocked: false) }
            return .route(device: dev, gateway: words.firstIndex(of: "via").map { words[$0 + 1] })
        }
    }

    static func ours(_ result: CheckResult) -> KernelAnswer {
        if result.flags.contains(.isLocalAddress) { return .local }
        if result.interface.isEmpty, result.reason == .noRoute { return .failed(blocked: false) }
        if result.interface.isEmpty, result.reason == .policyBlocked { return .failed(blocked: true) }
        return .route(device: result.interface, gateway: result.gateway?.description)
    }

    @Test func addressChecksAndTheHostPathEqualTheKernelsOverRandomTablesAndRules() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["REACHD_DIFF_SEED"].flatMap { UInt64($0) } ?? 20261123
        let count = environment["REACHD_DIFF_DESTINATIONS"].flatMap { Int($0) } ?? 1500
        let layouts = environment["REACHD_DIFF_LAYOUTS"].flatMap { Int($0) } ?? 4
        var random = Random(state: seed)
        var routed = 0, failed = 0, blocked = 0
        for layout in 0..<layouts {
            let ns = try TestNamespace("diff\(layout)")
            let tun = try HostPathTests.uplinkAndTunnel(ns)
            try ns.ip("link add up1 type veth peer name up1p")
            try ns.ip("addr add 198.51.100.2/24 dev up1")
            try ns.ip("link set up1p up")
            try ns.ip("link set up1 up")
            let lines = Self.randomLayout(&random, routes: 60, rules: 12 + layout * 6)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(ns.name)-layout")
            try lines.joined(separator: "\n").appending("\n").write(to: file, atomically: true, encoding: .utf8)
            try ns.ip("-force -batch \(file.path)")
            try? FileManager.default.removeItem(at: file)
            let monitor = try ns.monitor()

            var destinations = (0..<count).map { _ in Self.dotted(UInt32(truncatingIfNeeded: random.next())) }
            destinations += ["192.0.2.2", "192.0.2.9", "198.51.100.77", "10.8.0.9"]
            let kernel = try Self.kernelAnswers(ns, destinations)
            var mismatches: [String] = []
            for (destination, expected) in zip(destinations, kernel) {
                let result = monitor.check(address: destination)
                let answer = Self.ours(result)
                if answer != expected { mismatches.append("\(destination): kernel \(expected), reachd \(answer) (\(result.reason?.rawValue ?? "-"))") }
            }
            #expect(mismatches.isEmpty, "seed \(seed) layout \(layout): \(mismatches.count) of \(destinations.count) differ: \(mismatches.prefix(10))\nlayout:\n\(lines.joined(separator: "\n"))")
            for answer in kernel {
                switch answer {
                case .route: routed += 1
                case let .failed(refused): failed += 1; if refused { blocked += 1 }
                case .local: break
                }
            }

            // The host's path: the kernel's route to reachd's internet destination.
            let expectedPrimary: String
            switch try Self.kernelAnswers(ns, ["193.0.14.129"])[0] {
            case let .route(device, _): expectedPrimary = device
            case .failed, .local: expectedPrimary = ""
            }
            let snapshot = try await eventually(monitor, "the host's path settles", timeout: .seconds(5)) { $0.host.primaryInterface == expectedPrimary }
            #expect(snapshot.host.primaryInterface == expectedPrimary)
            monitor.stop()
            withExtendedLifetime(tun) {}
        }
        // A run that only ever failed (or only ever routed) would prove little.
        #expect(routed > count / 2 && failed > count / 10, "routed \(routed), failed \(failed)")
        // ... or never met a blocking route or rule, nor ever none at all.
        #expect(blocked > 0 && blocked < failed, "blocked \(blocked) of \(failed) failed")
    }
}
