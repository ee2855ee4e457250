#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Reachability

/// `PathMonitor` used as NWPathMonitor is: `pathUpdateHandler`, `start(queue:)`, `cancel()`,
/// `currentPath`, against the real kernel (veth carrier flaps) and a real reachd; and an
/// initializer that never waits, whatever the bus does.
@Suite(rootOnly)
struct PathMonitorHandlerTests {
    static let rules = PathMonitorTests.rules

    /// A handler's calls: each path, and whether it ran on the queue given to `start(queue:)`.
    final class HandlerCalls: Sendable {
        let queue = DispatchQueue(label: "PathMonitorHandlerTests")
        private let key = DispatchSpecificKey<Bool>()
        private let calls = Mutex<[(path: Path, onQueue: Bool)]>([])

        init() { queue.setSpecific(key: key, value: true) }

        /// Starts `monitor` with a handler that records here.
        func start(_ monitor: PathMonitor) {
            monitor.pathUpdateHandler = { [self] path in
                let onQueue = DispatchQueue.getSpecific(key: key) == true
                calls.withLock { $0.append((path, onQueue)) }
            }
            monitor.start(queue: queue)
        }

        var paths: [Path] { calls.withLock { $0.map(\.path) } }
        var allOnQueue: Bool { calls.withLock { $0.allSatisfy(\.onQueue) } }

        func wait(for what: String, timeout: Duration = waitLimit, _ condition: @escaping (Path) -> Bool) async throws {
            try await eventually("\(what): \(paths)", timeout: timeout) { paths.last.map(condition) ?? false }
        }
    }

    /// Flaps `link`'s carrier (down, then up) while `monitor` can be called, and waits until an
    /// in-process monitor of the namespace saw both, so that a handler that was still called
    /// would have been by then.
    static func flapUnseen(_ ns: TestNamespace, peerIn far: TestNamespace? = nil, _ link: String, watching: ReachabilityMonitor) async throws {
        try (far ?? ns).ip("link set \(link)p down")
        try await eventually(watching, "\(link) without carrier") { $0.interface(link)?.flags.contains(.connectionRequired) == true }
        try (far ?? ns).ip("link set \(link)p up")
        try await eventually(watching, "\(link)'s carrier back") { $0.interface(link)?.flags.contains(.reachable) == true }
        // The monitor under test follows the same kernel events from sockets of its own: give
        // its loop the time to have handed them on, had it still been running.
        try await Task.sleep(for: .milliseconds(300))
    }

    @Test func handlerGetsTheCurrentPathOnItsQueue_thenEachChange_untilCancelled() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "pm0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        // In-process with a monitor of its own, made after start(queue:).
        let monitor = PathMonitor(requiredInterfaceType: .wired, configuration: ns.configuration(rules: Self.rules), bus: nil)
        #expect(monitor.queue == nil)
        let calls = HandlerCalls()
        calls.start(monitor)
        #expect(monitor.queue === calls.queue)

        try await calls.wait(for: "the current path") { $0.status == .satisfied }
        #expect(calls.paths.count == 1, "the current path first, alone: \(calls.paths)")
        #expect(calls.paths.first?.availableInterfaces.map(\.name) == ["pm0"])
        #expect(monitor.currentPath == calls.paths.last, "currentPath is the last path delivered")

        try ns.ip("link set pm0p down")
        try await calls.wait(for: "carrier lost") { $0.status == .unsatisfied && $0.unsatisfiedReason == .linkDown }
        try ns.ip("link set pm0p up")
        try await calls.wait(for: "carrier back") { $0.status == .satisfied }
        #expect(calls.paths.map(\.status) == [.satisfied, .unsatisfied, .satisfied], "\(calls.paths)")
        #expect(calls.allOnQueue, "every call on the queue given to start(queue:)")

        monitor.cancel()
        let watching = try ns.monitor(rules: Self.rules)
        try await Self.flapUnseen(ns, "pm0", watching: watching)
        #expect(calls.paths.count == 3, "no call after cancel(): \(calls.paths)")
        // Once cancelled, for good.
        monitor.start(queue: calls.queue)
        try ns.ip("link set pm0p down")
        try await Task.sleep(for: .milliseconds(300))
        #expect(calls.paths.count == 3, "start(queue:) after cancel() does nothing: \(calls.paths)")
    }

    /// An application that blocks every thread of Swift's cooperative pool (synchronous waits in
    /// async code) still gets its first path, in-process and through reachd, as NWPathMonitor's
    /// handler is called on its queue whatever else runs: the monitor follows on a queue of its own,
    /// and so does the in-process path it derives while the reachd on its bus does not answer.
    @Test func pathsArriveWhileTheCooperativePoolIsHeld() async throws {
        let (ns, _, harness) = try WatchPathTests.scenario()
        defer { harness.shutdown() }
        let silent = try SilentBusPeer()
        defer { silent.close() }
        let dead = BusAddress.address("unix:path=\(silent.directory)/nobody-listens")
        for bus in [nil, BusAddress.address(harness.address), dead] {
            let monitor = PathMonitor(configuration: ns.configuration(), bus: bus)
            let arrived = DispatchSemaphore(value: 0)
            monitor.pathUpdateHandler = { _ in arrived.signal() }
            // Every pool thread and more, each blocked until the first path came (or 15 s passed).
            let release = DispatchSemaphore(value: 0)
            let holders = ProcessInfo.processInfo.activeProcessorCount + 2
            for _ in 0..<holders { Task.detached { release.wait() } }
            monitor.start(queue: DispatchQueue(label: "pathsArriveWhileTheCooperativePoolIsHeld"))
            // This test's own task blocks its thread too.
            let came = arrived.wait(timeout: .now() + 15) == .success
            for _ in 0..<holders { release.signal() }
            monitor.cancel()
            #expect(came, "no path with the pool held (\(bus.map { $0 == dead ? "reachd away" : "through reachd" } ?? "in-process"))")
        }
    }

    @Test func handlerThroughReachd_followsItsAnswers_untilCancelled() async throws {
        let (ns, far, harness) = try WatchPathTests.scenario()
        // In-process, without the rules that make pm0 wired, a wired path would be unsatisfied:
        // a satisfied one can only be reachd's.
        let monitor = PathMonitor(requiredInterfaceType: .wired, configuration: ns.configuration(), bus: .address(harness.address))
        #expect(monitor.isThroughReachd)
        let calls = HandlerCalls()
        calls.start(monitor)

        try await calls.wait(for: "reachd's current path") { $0.status == .satisfied }
        #expect(calls.paths.first?.primaryInterface == "pm0" && calls.paths.first?.flags.contains(.isWired) == true, "\(calls.paths)")
        try far.ip("link set pm0p down")
        try await calls.wait(for: "carrier lost") { $0.status == .unsatisfied && $0.unsatisfiedReason == .linkDown }
        try far.ip("link set pm0p up")
        try await calls.wait(for: "carrier back") { $0.status == .satisfied }
        #expect(calls.paths.map(\.status) == [.satisfied, .unsatisfied, .satisfied], "\(calls.paths)")
        #expect(calls.allOnQueue)

        monitor.cancel()
        let watching = try ns.monitor(rules: Self.rules)
        try await Self.flapUnseen(ns, peerIn: far, "pm0", watching: watching)
        #expect(calls.paths.count == 3, "no call after cancel(): \(calls.paths)")
        withExtendedLifetime(harness) {}
    }

    @Test func releasingAStartedMonitorCancelsIt() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "pm0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let calls = HandlerCalls()
        do {
            let monitor = PathMonitor(requiredInterfaceType: .wired, configuration: ns.configuration(rules: Self.rules), bus: nil)
            calls.start(monitor)
            try await calls.wait(for: "the current path") { $0.status == .satisfied }
        }
        let watching = try ns.monitor(rules: Self.rules)
        try await Self.flapUnseen(ns, "pm0", watching: watching)
        #expect(calls.paths.count == 1, "no call once the monitor is gone: \(calls.paths)")
    }

    /// The old initializer asked reachd first and waited up to 500 ms for an answer; now neither
    /// the initializer nor `start(queue:)` waits for the bus: against a socket nobody listens on,
    /// and against a peer that takes the connection and never says a word, both return at once,
    /// and the paths come in-process once reachd is known not to answer.
    @Test func initAndStartNeverWait_evenWhenTheBusIsDeadOrSilent() async throws {
        let ns = try TestNamespace()
        try KernelMonitorTests.uplink(ns, "pm0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        let silent = try SilentBusPeer()
        defer { silent.close() }
        let buses: [(String, BusAddress)] = [
            ("a dead socket", .address("unix:path=\(silent.directory)/nobody-listens")),
            ("a silent peer", .address("unix:path=\(silent.path)")),
        ]
        let clock = ContinuousClock()
        for (what, bus) in buses {
            var made: PathMonitor?
            let initTime = clock.measure {
                made = PathMonitor(requiredInterfaceType: .wired, configuration: ns.configuration(rules: Self.rules), bus: bus)
            }
            let monitor = try #require(made)
            let calls = HandlerCalls()
            let startTime = clock.measure { calls.start(monitor) }
            print("PathMonitor against \(what): init \(initTime), start(queue:) \(startTime)")
            // Generous bounds (a loaded 2-core machine): what is measured is nothing that waits on
            // the bus, which took 500 ms before.
            #expect(initTime < .milliseconds(50), "init against \(what) took \(initTime)")
            #expect(startTime < .milliseconds(50), "start(queue:) against \(what) took \(startTime)")
            // Started, currentPath is the last path delivered: it never asks the bus either.
            let currentPathTime = clock.measure { _ = monitor.currentPath }
            #expect(currentPathTime < .milliseconds(50), "currentPath against \(what) took \(currentPathTime)")

            let answered = clock.now
            try await calls.wait(for: "the in-process path against \(what)") { $0.status == .satisfied }
            print("PathMonitor against \(what): first path in-process after \(clock.now - answered)")
            #expect(calls.allOnQueue)
            monitor.cancel()
        }
        #expect(silent.accepted > 0, "the silent peer took the connection")
    }

    /// Every synchronous call is bounded by its own timeout, the bus's set-up included: sd-bus
    /// alone waited 90 s for a peer that never finishes authentication, whatever the call's
    /// timeout, so "is reachd there?" (reachctl, SystemConfiguration) hung that long.
    @Test func aSilentBusAnswersNoWithinTheProbesTimeout() throws {
        let silent = try SilentBusPeer()
        defer { silent.close() }
        let bus = BusAddress.address("unix:path=\(silent.path)")
        let clock = ContinuousClock()
        let start = clock.now
        #expect {
            _ = try ReachdOrInProcess.connect(bus, probeTimeout: .milliseconds(300), callTimeout: .seconds(2))
        } throws: { error in
            "\(error)" == "no answer on the bus at unix:path=\(silent.path) within 300ms"
        }
        let took = clock.now - start
        #expect(took >= .milliseconds(300) && took < .seconds(5), "the probe took \(took)")
    }
}

/// A Unix socket that takes every connection and never says a word: a bus that never answers
/// (not even to the client's authentication), as a wedged dbus-daemon would be.
final class SilentBusPeer: Sendable {
    let directory: String
    var path: String { directory + "/silent" }
    private let listener: Int32
    private final class Connections: Sendable { let fds = Mutex<[Int32]>([]) }
    private let connections = Connections()

    init() throws {
        directory = try makeScratchDirectory("silent-bus")
        let fd = try listeningUnixSocket(at: directory + "/silent", backlog: 16)
        listener = fd
        let connections = self.connections
        // accept(2) blocks: a thread of its own, ended by shutting the listener down.
        try DedicatedThread.start {
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 { return }
                connections.fds.withLock { $0.append(connection) }
            }
        }
    }

    var accepted: Int { connections.fds.withLock { $0.count } }

    func close() {
        // Ends the accepting thread's accept(2); the listener itself goes with the test process.
        shutdown(listener, Int32(SHUT_RDWR))
        for fd in connections.fds.withLock({ $0 }) { Glibc.close(fd) }
        removeTree(directory)
    }
}
