import Dispatch
import Synchronization
import Testing
@testable import Reachability

/// `PathMonitor.hostChangeHandler`: each host change, what moved and whether to rebind, on the
/// monitor's queue, through a real reachd (its `HostChangeDescribed`) and in-process alike,
/// against the real kernel.
@Suite(rootOnly)
struct PathMonitorHostChangeTests {
    enum Source: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case reachd, inProcess
        var testDescription: String { rawValue }
    }

    @Test(arguments: Source.allCases)
    func hostChangesSayWhatMovedAndWhenToRebind(_ source: Source) async throws {
        let (ns, far, harness) = try WatchPathTests.scenario()
        defer { harness.shutdown() }
        let monitor = PathMonitor(configuration: ns.configuration(), bus: source == .reachd ? .address(harness.address) : nil)
        #expect(monitor.isThroughReachd == (source == .reachd))
        let queue = DispatchQueue(label: "PathMonitorHostChangeTests")
        let changes = Mutex<[HostChange]>([])
        let paths = Mutex<[Path]>([])
        monitor.hostChangeHandler = { change in
            dispatchPrecondition(condition: .onQueue(queue))
            changes.withLock { $0.append(change) }
        }
        monitor.pathUpdateHandler = { path in paths.withLock { $0.append(path) } }
        monitor.start(queue: queue)
        defer { monitor.cancel() }
        try await eventually("the first path") { paths.withLock { $0.last?.status == .satisfied } }

        // A second address on the primary: the path stays as it was, the host change is told.
        try ns.ip("addr add 192.0.2.3/24 dev pm0")
        try await eventually("the second address: \(changes.withLock { $0 })") { changes.withLock { $0.contains { $0.changed == [.addresses] } } }
        let added = try #require(changes.withLock { $0.first { $0.changed == [.addresses] } })
        #expect(!added.rebind)
        #expect(added.sourceAddress == IPAddress("192.0.2.2"))
        #expect(paths.withLock { $0.count } == 1, "the path did not change: \(paths.withLock { $0 })")

        // Carrier lost: the source went away, rebind.
        try far.ip("link set pm0p down")
        try await eventually("carrier lost: \(changes.withLock { $0 })") { changes.withLock { $0.contains(where: \.rebind) } }
        let lost = try #require(changes.withLock { $0.first(where: \.rebind) })
        #expect(lost.changed.contains(.state) && lost.changed.contains(.sourceAddress))
        #expect(lost.previousSourceAddress == IPAddress("192.0.2.2") && lost.sourceAddress == nil)
        try await eventually("the path unsatisfied") { paths.withLock { $0.last?.status == .unsatisfied } }
        #expect(changes.withLock { $0.filter(\.rebind).count } == 1, "\(changes.withLock { $0 })")
    }
}
