import Foundation
import Testing
@testable import Reachability

/// issue 51: the journal has a bound. 100,000 flaps of the uplink (`ip -batch`, as fast as the
/// kernel takes them) wrote 67,475 lines in 22 s; now each lane of event lines (links, the
/// host's state, the core's incidents, the probe) passes 20 at once and 2 a second, and says
/// what it held back in one line with the last of it, so the log still ends with the truth.
@Suite(rootOnly, .serialized)
struct LogBoundTests {
    @Test func aHundredThousandFlapsWriteABoundedLogThatEndsWithTheTruth() async throws {
        let scenario = try DaemonBusTests.Scenario("logstorm")
        let harness = try DaemonHarness(scenario.ns)
        defer { withExtendedLifetime(scenario) { harness.shutdown() } }
        try await harness.ready()
        let before = harness.daemonErrorLines.count
        let batch = harness.directory + "/flaps"
        try String(repeating: "link set up0 down\nlink set up0 up\n", count: 50_000).write(toFile: batch, atomically: true, encoding: .utf8)
        let began = ContinuousClock.now
        let storm = try ChildProcess("/usr/sbin/ip", ["-n", scenario.ns.name, "-batch", batch])
        #expect(try await storm.exit(timeout: .seconds(120)) == 0, "\(storm.errorOutput)")
        let took = ContinuousClock.now - began
        // The lanes have room again within a second; a wake-up of the loop says what they held.
        try await Task.sleep(for: .seconds(1))
        _ = try harness.busctlCall("GetStatus")
        try await Task.sleep(for: .milliseconds(300))
        let lines = Array(harness.daemonErrorLines.dropFirst(before))
        let seconds = Int(took.components.seconds) + 2
        let lanes = 4  // links, state, incidents, probe: LogLane in reachd
        let bound = lanes * 2 * (20 + 2 * seconds)
        print("log storm: 100,000 flaps in \(took): \(lines.count) lines (bound \(bound)); the last: \(lines.suffix(3))")
        #expect(lines.count <= bound, "\(lines.count) lines in \(took)")
        #expect(lines.contains { $0.contains("further link line(s) suppressed; the last: link up0") }, "\(lines.suffix(10))")
        // The last word on the host's state is the truth (local: the kernel dropped the default
        // route with the first "down", and "up" does not bring it back).
        let now: String = try DaemonHarness.property(try harness.connect(), "State")
        let states = lines.filter { line in
            ["online", "offline", "local"].contains { line.hasPrefix($0) } || line.contains("further state line(s) suppressed")
        }
        let last = try #require(states.last, "\(lines.suffix(10))")
        #expect(last.hasPrefix(now) || last.contains("the last: \(now)"), "the log's last state \(last), reachd's \(now)")
    }
}
