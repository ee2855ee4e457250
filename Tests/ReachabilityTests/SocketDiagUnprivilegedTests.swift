import Foundation
import Testing
@testable import Reachability

/// The sock_diag dumper needs no privilege: reachd runs as its own user with no capabilities
/// (packaging/reachd.service: User=reachd, CapabilityBoundingSet= empty). The test makes a TCP
/// connection on loopback and dumps it; the root-only test runs that same test again in a child
/// process of this test binary under `setpriv` as nobody (uid 65534) with every capability dropped.
@Suite struct SocketDiagUnprivilegedTests {
    /// Set in the child that setpriv starts: the test must then really run without privilege.
    static let expectUnprivileged = ProcessInfo.processInfo.environment["REACHD_EXPECT_UNPRIVILEGED"] == "1"

    @Test func dumpsOwnLoopbackConnectionWithCounters() throws {
        if Self.expectUnprivileged {
            #expect(getuid() == 65534 && geteuid() == 65534)
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            #expect(status.contains("CapEff:\t0000000000000000"), "capabilities left: \(status)")
        }
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer {
            close(listener)
            close(client)
        }
        let loopback = IPAddress("127.0.0.1")!
        #expect(loopback.withSocketAddress(port: 0) { bind(listener, $0, $1) } == 0)
        #expect(listen(listener, 4) == 0)
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let port = UInt16(bigEndian: bound.sin_port)
        #expect(loopback.withSocketAddress(port: port) { connect(client, $0, $1) } == 0)
        let accepted = accept(listener, nil, nil)
        defer { close(accepted) }
        #expect(send(client, "hello", 5, 0) == 5)

        var dumper = try TCPSocketDumper()
        let samples = try dumper.dump()
        let ours = samples.filter { $0.destinationPort == port && $0.source == loopback }
        #expect(ours.count == 1, "\(samples)")
        #expect((ours.first?.counters?.segmentsOut ?? 0) >= 2, "SYN, ACK and data at least: \(ours)")
        #expect(samples.contains { $0.sourcePort == port }, "the accepted end too")
    }

    @Test(rootOnly) func dumpsAsNobodyWithoutCapabilities() throws {
        let binary = CommandLine.arguments[0]
        let child = try ChildProcess(
            "/usr/bin/setpriv",
            [
                "--reuid", "65534", "--regid", "65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                "--", binary, "--testing-library", "swift-testing",
                "--filter", "SocketDiagUnprivilegedTests/dumpsOwnLoopbackConnectionWithCounters",
            ],
            environment: ProcessInfo.processInfo.environment.merging(["REACHD_EXPECT_UNPRIVILEGED": "1"]) { $1 },
            errorsToOutput: true)
        let status = child.waitForExit(timeout: .seconds(120))
        #expect(status == 0, "\(child.output)")
        #expect(child.output.contains("dumpsOwnLoopbackConnectionWithCounters() passed"), "\(child.output)")
    }
}
