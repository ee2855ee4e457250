import Foundation
import Testing
@testable import Reachability

/// The monitor against the real kernel, each test in a network namespace of its own.
@Suite(rootOnly)
struct KernelMonitorTests {
    @Test func carrierFlapOnVethPeer() async throws {
        let ns = try TestNamespace()
        try ns.ip("link add up0 type veth peer name up0p")
        try ns.ip("addr add 192.0.2.2/24 dev up0")
        try ns.ip("link set up0p up")
        try ns.ip("link set up0 up")
        try ns.ip("route add default via 192.0.2.1 dev up0")
        let monitor = try ns.monitor()
        let recorder = await UpdateRecorder(monitor)
        #expect(recorder.first.host.state == .online)
        #expect(recorder.first.host.primaryInterface == "up0")
        #expect(recorder.first.host.flags == [.reachable])  // a veth is virtual: no kind flag
        #expect(recorder.first.interface("up0")?.flags == [.reachable])

        try ns.ip("link set up0p down")
        let down = try await recorder.wait(for: "carrier loss") { $0.host.state != .online }
        #expect(down.host.flags == [.connectionRequired])
        #expect(down.host.primaryInterface == "up0")
        #expect(down.host.availableInterfaces == [])
        #expect(down.changedInterfaces.first { $0.name == "up0" }?.flags == [.connectionRequired])

        try ns.ip("link set up0p up")
        let up = try await recorder.wait(for: "carrier back") { $0.host.state == .online && $0.generation > down.generation }
        #expect(up.host.flags == [.reachable])
        #expect(up.host.availableInterfaces == ["up0"])
        try await Task.sleep(for: .milliseconds(200))
        // One change per real transition of the host: down, then up; no noise. (The peer's own
        // admin state changes are real changes of another interface, reported separately.)
        #expect(recorder.changes.filter(\.hostChanged).count == 2, "changes: \(recorder.changes)")
        #expect(recorder.changes.allSatisfy { !$0.changedInterfaces.isEmpty || $0.hostChanged })
    }
}
