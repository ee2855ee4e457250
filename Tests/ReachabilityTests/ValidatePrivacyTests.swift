import Foundation
import Testing
@testable import Reachability

/// issue 24: the probe keeps its privacy promise. Validate from a user other than root is
/// answered from the last verdict while it is younger than Interval=, and one user makes the
/// probe run at most once per Interval=; root still probes now.
@Suite(rootOnly, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/setpriv"), "needs setpriv"))
struct ValidatePrivacyTests {
    @Test func validateInALoopAsNobodyAddsNoRequests_rootStillProbesNow() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let server = try ChildProcess("/usr/bin/ip", ["netns", "exec", scenario.far.name, "/usr/bin/python3", "-c", ConnectivityProbeTests.servers])
        defer { server.kill() }
        #expect(try server.firstLine(timeout: .seconds(10)) == "ready")
        let harness = try DaemonHarness(
            scenario.ns, config: "[Connectivity]\nURL=http://192.0.2.1:8204/generate_204\nTimeout=1s\n", anyUser: true)
        defer { harness.shutdown() }
        try await harness.ready()
        var requests: Int { server.lines.filter { $0.hasPrefix("GET ") }.count }
        try await eventually("the first verdict: \(server.lines)") { requests == 1 }
        // Past the 2 s in which any caller's Validate is answered from the verdict just made.
        try await Task.sleep(for: .milliseconds(2100))

        func validate(as uid: Int?) throws -> String {
            let arguments = ["--address=\(harness.address)", "--json=short", "call", DaemonHarness.busName, DaemonHarness.objectPath,
                             DaemonHarness.interface, "Validate"]
            let child = try uid.map {
                try ChildProcess("/usr/bin/setpriv", ["--reuid=\($0)", "--regid=\($0)", "--clear-groups", "/usr/bin/busctl"] + arguments)
            } ?? ChildProcess("/usr/bin/busctl", arguments)
            let (status, stdout, stderr) = try child.finish(timeout: .seconds(10))
            let data = try DaemonHarness.jsonData(DaemonHarness.Output(status: status, stdout: stdout, stderr: stderr))
            return data.first as? String ?? "?"
        }
        for round in 0..<10 {
            #expect(try validate(as: 65534) == "full", "round \(round)")
            #expect(try validate(as: 33) == "full", "round \(round)")
        }
        #expect(requests == 1, "other users' Validate sent nothing: \(server.lines)")
        #expect(try validate(as: nil) == "full")
        #expect(requests == 2, "root's Validate probes now: \(server.lines)")
    }
}
