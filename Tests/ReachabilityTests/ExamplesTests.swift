import Foundation
import Testing
@testable import Reachability

/// Examples/: each is built as a user's package would build against the repository (`swift build
/// --package-path`, the repository a path dependency), then run inside a network namespace of its
/// own while a veth's carrier goes and comes back: its output has to follow. In-process (no bus):
/// the library alone, as on a machine without reachd. Minutes of building: scripts/test runs
/// this suite in a pass of its own, last. The examples share one build directory
/// (.build/examples in the repository), so the library's modules they both use are compiled
/// once: each is still its own package, resolved and built as a user's would be, and the
/// second's build took 14 s instead of about a minute.
@Suite(rootOnly, .serialized)
struct ExamplesTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples").path

    static let scratch = URL(fileURLWithPath: examples).deletingLastPathComponent().appendingPathComponent(".build/examples").path

    /// Builds `Examples/NAME` and returns the path of its program `product`.
    static func build(_ name: String, product: String) async throws -> String {
        let package = "\(examples)/\(name)"
        let place = ["--package-path", package, "--scratch-path", scratch]
        let built = try ChildProcess("/usr/bin/env", ["swift", "build"] + place, errorsToOutput: true)
        guard let status = try await built.exit(timeout: .seconds(1800)) else {
            built.kill()
            throw TimedOut(what: "swift build of \(name): \(built.output)")
        }
        guard status == 0 else { throw CommandFailed(command: built.command, status: status, output: built.output) }
        let binPath = try run("/usr/bin/env", ["swift", "build"] + place + ["--show-bin-path"])
        return binPath.trimmingCharacters(in: .whitespacesAndNewlines) + "/" + product
    }

    /// Runs `program` in `ns` with no bus to ask (the library answers in-process).
    static func start(_ program: String, _ arguments: [String], in ns: TestNamespace) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/system_bus_socket"
        return try ChildProcess("/usr/sbin/ip", ["netns", "exec", ns.name, program] + arguments, environment: environment)
    }

    /// Waits until `child` printed a line after the first `after` that satisfies `condition`; its index.
    @discardableResult
    static func line(
        _ child: ChildProcess, after: Int = -1, _ what: String, _ condition: @escaping (String) -> Bool
    ) async throws -> Int {
        var found: Int?
        try await eventually("\(what): \(child.lines), stderr \(child.errorOutput)") {
            found = child.lines.indices.first { $0 > after && condition(child.lines[$0]) }
            return found != nil
        }
        return found!
    }

    @Test func watchPathPrintsThePathAndEachCarrierChange() async throws {
        let program = try await Self.build("WatchPath", product: "watch-path")
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "ex0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let child = try Self.start(program, [], in: ns)
        defer { child.kill() }

        let online = try await Self.line(child, "the current path") { $0.hasPrefix("satisfied via ex0: ex0 ") }
        #expect(online == 0, "the current path first: \(child.lines)")
        try ns.ip("link set ex0p down")
        let down = try await Self.line(child, after: online, "carrier lost") { $0 == "unsatisfied: linkDown" }
        try ns.ip("link set ex0p up")
        try await Self.line(child, after: down, "carrier back") { $0.hasPrefix("satisfied via ex0: ex0 ") }
        #expect(child.errorOutput.isEmpty, "\(child.errorOutput)")
    }

    @Test func reachabilityCallbackPrintsTheFlagsAndEachCarrierChange() async throws {
        let program = try await Self.build("ReachabilityCallback", product: "reachability-callback")
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "ex1", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let child = try Self.start(program, ["192.0.2.1"], in: ns)
        defer { child.kill() }

        // GetFlags first: the gateway is on the link.
        let first = try await Self.line(child, "GetFlags") { $0.hasPrefix("192.0.2.1: ") }
        #expect(child.lines[first] == "192.0.2.1: reachable|isDirect", "\(child.lines)")
        try ns.ip("link set ex1p down")
        let down = try await Self.line(child, after: first, "carrier lost") { $0.hasPrefix("changed: ") && !$0.hasPrefix("changed: reachable") }
        try ns.ip("link set ex1p up")
        try await Self.line(child, after: down, "carrier back") { $0 == "changed: reachable|isDirect" }
        #expect(child.errorOutput.isEmpty, "\(child.errorOutput)")
    }

    @Test func badArgumentsAreNamed() async throws {
        let program = try await Self.build("ReachabilityCallback", product: "reachability-callback")
        let child = try ChildProcess(program, ["127.1"])
        #expect(try await child.exit(timeout: .seconds(30)) == 2)
        #expect(child.output.hasPrefix("127.1: not a host name or address"), "\(child.output)")
    }
}
