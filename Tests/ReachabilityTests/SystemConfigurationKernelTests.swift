import Foundation
import Synchronization
import Testing
@testable import Reachability
@testable import SystemConfiguration

/// issue 10: the two client patterns through a carrier flap and default-route changes in a
/// network namespace, answered in-process and by reachd: what each client sees, and exactly
/// how many callbacks fire (one per change of the SC flags, none for changes that leave them).
@Suite(rootOnly)
struct SystemConfigurationKernelTests {
    /// up0: the uplink, 192.0.2.2/24, default via 192.0.2.1 (its veth peer up0p sets its carrier).
    static func scenario(_ tag: String = #function) throws -> TestNamespace {
        let ns = try TestNamespace(tag)
        try KernelMonitorTests.uplink(ns, "up0", "192.0.2.2/24", gateway: "192.0.2.1", metric: 100)
        return ns
    }

    /// How long "no callback" is watched for after a change that must not cause one.
    static let quiet: Duration = .milliseconds(700)

    @Test func carrierFlapAndRouteChangesInProcess() async throws {
        let ns = try Self.scenario()
        try await withReachabilityService(namespace: ns) { service in
            try await Self.drive(ns, service: service)
            #expect(!service.answersFromDaemon)
        }
    }

    @Test func carrierFlapAndRouteChangesThroughReachd() async throws {
        let ns = try Self.scenario()
        let harness = try DaemonHarness(ns)
        try await harness.ready()
        try await withReachabilityService(namespace: ns, bus: harness.address) { service in
            try await Self.drive(ns, service: service, harness: harness)
            #expect(service.answersFromDaemon, "answered by reachd: \(harness.diagnostics)")
        }
        #expect(try Self.watchObjects(harness).isEmpty, "no watch left behind")
    }

    /// The watch objects reachd holds now (with none, their parent path does not exist either).
    static func watchObjects(_ harness: DaemonHarness) throws -> [String] {
        guard try harness.introspectXML().contains("<node name=\"watch\"/>") else { return [] }
        let xml: String
        do {
            xml = try harness.introspectXML(ReachdContract.watchPathNamespace)
        } catch let failure as CommandFailed where failure.output.contains("Unknown object") {
            return []  // the last watch went between the two calls
        }
        return xml.split(separator: "\n").filter { $0.contains("<node name=") }.map(String.init)
    }

    /// Three references follow the namespace: two for the zero address (one per client pattern)
    /// and an address pair toward the on-link gateway.
    static func drive(_ ns: TestNamespace, service: SCReachabilityService, harness: DaemonHarness? = nil) async throws {
        let boxes = BoxCount()
        var listener: ListenerClient? = ListenerClient(try #require(zeroAddressReference()), boxes: boxes)
        var notifier: NotifierClient? = NotifierClient(try #require(zeroAddressReference()), boxes: boxes)
        var gateway: NotifierClient? = NotifierClient(
            try #require(addressPairReference(local: "192.0.2.2", remote: "192.0.2.1")), boxes: boxes)

        #expect(listener!.startListening())
        try notifier!.startNotifier()
        try gateway!.startNotifier()
        let online: SCNetworkReachabilityFlags = [.reachable]
        #expect(listener!.flags == online)
        #expect(notifier!.currentFlags == online)
        #expect(gateway!.currentFlags == [.reachable, .isDirect])
        if let harness {
            // One watch per target: the two zero-address references share theirs.
            #expect(try watchObjects(harness).count == 2)
        }
        try await Task.sleep(for: quiet)
        #expect(listener!.callbackFlags.isEmpty, "no callback at scheduling: \(listener!.callbackFlags)")
        #expect(notifier!.callbackCount == 0)
        try await waitUntil("the listener's first status") { listener!.statuses == [.reachable] }

        // Carrier lost: the kernel keeps the route (linkdown), so a connection is required.
        try ns.ip("link set up0p down")
        try await waitUntil("carrier loss") { listener!.callbackFlags.count == 1 && notifier!.callbackCount == 1 && gateway!.callbackCount == 1 }
        #expect(listener!.callbackFlags == [[.connectionRequired]])
        #expect(notifier!.currentFlags == [.connectionRequired])
        #expect(gateway!.currentFlags == [.connectionRequired, .isDirect])
        #expect(listener!.flags == [.connectionRequired])

        try ns.ip("link set up0p up")
        try await waitUntil("carrier back") { listener!.callbackFlags.count == 2 && notifier!.callbackCount == 2 && gateway!.callbackCount == 2 }
        #expect(listener!.callbackFlags.last == online)
        #expect(listener!.statuses == [.reachable, .notReachable, .reachable])

        // A second way out, then the primary's default route goes: the host stays reachable
        // through lan0, so the SC flags stay the same and no callback fires.
        try KernelMonitorTests.uplink(ns, "lan0", "10.99.0.2/24", gateway: "10.99.0.1", metric: 200)
        try ns.ip("route del default via 192.0.2.1 dev up0")
        try await Task.sleep(for: quiet)
        #expect(listener!.flags == online)
        #expect(listener!.callbackFlags.count == 2, "\(listener!.callbackFlags)")
        #expect(notifier!.callbackCount == 2)

        // No default route at all: not reachable; then back through up0.
        try ns.ip("route del default via 10.99.0.1 dev lan0")
        try await waitUntil("no default route") { listener!.callbackFlags.count == 3 && notifier!.callbackCount == 3 }
        #expect(listener!.callbackFlags.last == [])
        #expect(notifier!.currentFlags == [])
        try ns.ip("route add default via 192.0.2.1 dev up0")
        try await waitUntil("default route back") { listener!.callbackFlags.count == 4 && notifier!.callbackCount == 4 }
        #expect(notifier!.changes == [online, [.connectionRequired], online, [], online])
        try await Task.sleep(for: quiet)
        #expect(listener!.callbackFlags.count == 4)
        // The on-link gateway never depended on a default route.
        #expect(gateway!.callbackCount == 2)

        // Stopped by hand, or released: no more callbacks, every context released, no watch left.
        listener!.stopListening()
        notifier = nil
        gateway = nil
        try ns.ip("link set up0p down")
        try await Task.sleep(for: quiet)
        #expect(listener!.callbackFlags.count == 4)
        listener = nil
        try await waitUntil("every weak box released") { boxes.value == 0 }
        if let harness {
            try await waitUntil("every watch released") { try Self.watchObjects(harness).isEmpty }
        }
    }

    /// reachd restarts while targets are followed, as a package upgrade or systemd restarts it:
    /// in the interim they are answered in-process (no callback for the move itself, the flap
    /// meanwhile still called back); once reachd is back it watches them again, a target
    /// scheduled while it was away among them, none is left in-process, no callback fires where
    /// reachd's answer is the one already seen, and the next carrier flap comes from reachd.
    @Test func followersGoBackToReachdWhenItReturns() async throws {
        let ns = try Self.scenario()
        let harness = try DaemonHarness(ns)
        try await harness.ready()
        try await withReachabilityService(namespace: ns, bus: harness.address) { service in
            let boxes = BoxCount()
            let listener = ListenerClient(try #require(zeroAddressReference()), boxes: boxes)
            #expect(listener.startListening())
            #expect(service.answersFromDaemon)
            #expect(try Self.watchObjects(harness).count == 1)

            harness.stopDaemon()
            try await waitUntil("reachd gone") { !service.answersFromDaemon }
            #expect(listener.flags == [.reachable], "answered in-process now")
            let gateway = NotifierClient(
                try #require(addressPairReference(local: "192.0.2.2", remote: "192.0.2.1")), boxes: boxes)
            try gateway.startNotifier()
            #expect(gateway.currentFlags == [.reachable, .isDirect])
            try await Task.sleep(for: Self.quiet)
            #expect(listener.callbackFlags.isEmpty, "no callback for the move: \(listener.callbackFlags)")
            try ns.ip("link set up0p down")
            try await waitUntil("carrier loss, seen in-process") {
                listener.callbackFlags == [[.connectionRequired]] && gateway.callbackCount == 1
            }

            try harness.startDaemon()
            try await waitUntil("reachd back: \(harness.diagnostics)") { service.answersFromDaemon }
            try await waitUntil("both targets watched by reachd again") { try Self.watchObjects(harness).count == 2 }
            try await waitUntil("none left in-process") { service.followerCount == 0 }
            try await Task.sleep(for: Self.quiet)
            #expect(listener.callbackFlags == [[.connectionRequired]], "the same answer: no callback")
            #expect(gateway.callbackCount == 1)
            #expect(gateway.currentFlags == [.connectionRequired, .isDirect])

            try ns.ip("link set up0p up")
            try await waitUntil("carrier back, from reachd") { listener.callbackFlags.count == 2 && gateway.callbackCount == 2 }
            #expect(listener.callbackFlags.last == [.reachable])
            #expect(gateway.currentFlags == [.reachable, .isDirect])
            #expect(service.followerCount == 0)
            listener.stopListening()
            gateway.stopNotifier()
            try await waitUntil("every watch released") { try Self.watchObjects(harness).isEmpty }
        }
    }

    /// dbus-daemon itself restarts (reachd, losing it, exits and is started again): the library
    /// connects to the new bus, a reference is watched by reachd there, and a carrier flap that
    /// follows calls back once.
    @Test func followersOutliveARestartOfTheBus() async throws {
        let ns = try Self.scenario()
        let harness = try DaemonHarness(ns)
        try await harness.ready()
        // The socket's path, not the address with the guid of this one dbus-daemon.
        try await withReachabilityService(namespace: ns, bus: harness.busPathAddress) { service in
            let listener = ListenerClient(try #require(zeroAddressReference()), boxes: BoxCount())
            #expect(listener.startListening())
            #expect(service.answersFromDaemon)

            try harness.restartBus()
            try await waitUntil("reachd gone with its bus") { !service.answersFromDaemon }
            #expect(harness.daemon?.waitForExit(timeout: .seconds(5)) == 1, "\(harness.diagnostics)")
            try harness.startDaemon()
            try await waitUntil("reachd back on the new bus: \(harness.diagnostics)") { service.answersFromDaemon }
            try await waitUntil("watched by reachd again") { try Self.watchObjects(harness).count == 1 }
            try await waitUntil("none left in-process") { service.followerCount == 0 }
            #expect(listener.callbackFlags.isEmpty, "nothing changed: \(listener.callbackFlags)")

            try ns.ip("link set up0p down")
            try await waitUntil("carrier loss, from reachd") { listener.callbackFlags == [[.connectionRequired]] }
            listener.stopListening()
        }
    }

    /// A callback in flight when its client goes away finds the weak box empty and does nothing;
    /// the box itself lives until that callback is over.
    @Test func clientReleasedWhileCallbacksAreInFlight() async throws {
        let ns = try Self.scenario()
        try await withReachabilityService(namespace: ns) { _ in
            let boxes = BoxCount()
            for round in 0..<20 {
                let reference = try #require(zeroAddressReference())
                var notifier: NotifierClient? = NotifierClient(reference, boxes: boxes)
                try notifier!.startNotifier()
                // Hold the serial queue so the carrier change's callback waits in it...
                let held = DispatchSemaphore(value: 0)
                notifier!.serialQueue.async { held.wait() }
                try ns.ip("link set up0p \(round % 2 == 0 ? "down" : "up")")
                try await Task.sleep(for: .milliseconds(50))
                // ...then release the client before the callback runs.
                notifier = nil
                held.signal()
            }
            try await waitUntil("every weak box released") { boxes.value == 0 }
        }
    }

    /// issue 10: creating, scheduling and releasing 10,000 references (without unscheduling
    /// them: their deinit does) leaves no watch in reachd, every context released, and this
    /// process's memory flat.
    @Test func tenThousandReferencesThroughReachdLeaveNothingBehind() async throws {
        let ns = try Self.scenario()
        let harness = try DaemonHarness(ns)
        try await harness.ready()
        try await withReachabilityService(namespace: ns, bus: harness.address) { service in
            try await Self.cycleReferences(service: service) { try Self.watchObjects(harness).isEmpty }
            #expect(service.answersFromDaemon)
        }
    }

    @Test func tenThousandReferencesInProcessLeaveNothingBehind() async throws {
        let ns = try Self.scenario()
        try await withReachabilityService(namespace: ns) { service in
            try await Self.cycleReferences(service: service) { service.followerCount == 0 }
        }
    }

    /// 1,000 references to warm up (allocator pools, the connection, reachd's tables), then
    /// 9,000 more, each for an address of its own, scheduled with a context and dropped.
    static func cycleReferences(service: SCReachabilityService, released: () throws -> Bool) async throws {
        let boxes = BoxCount()
        let queue = DispatchQueue(label: "test.many")
        func cycle(_ range: Range<Int>) {
            for i in range {
                var address = socketAddress("10.\((i >> 16) & 255).\((i >> 8) & 255).\(i & 255)")
                let made = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SCNetworkReachabilityCreateWithAddress(nil, $0) }
                }
                guard let reference = made else {
                    Issue.record("reference \(i) not made: \(SCError())")
                    return
                }
                let box = Counted(boxes)
                var context = SCNetworkReachabilityContext(
                    version: 0, info: Unmanaged.passUnretained(box).toOpaque(),
                    retain: { UnsafeRawPointer(Unmanaged<Counted>.fromOpaque($0).retain().toOpaque()) },
                    release: { Unmanaged<Counted>.fromOpaque($0).release() },
                    copyDescription: nil)
                guard SCNetworkReachabilitySetCallback(reference, { _, _, _ in }, &context),
                    SCNetworkReachabilitySetDispatchQueue(reference, queue)
                else {
                    Issue.record("reference \(i) not scheduled: \(SCError())")
                    return
                }
            }
        }
        cycle(0..<1000)
        try await waitUntil("the first thousand released") { try released() }
        let before = residentBytes()
        cycle(1000..<10000)
        try await waitUntil("every follower released") { try released() }
        let grown = residentBytes() - before
        #expect(grown < 4 << 20, "resident memory grew by \(grown) bytes over 9,000 references")
        try await waitUntil("every context released") { boxes.value == 0 }
    }

    /// A context's info that counts itself in `boxes` while alive.
    final class Counted {
        let boxes: BoxCount
        init(_ boxes: BoxCount) {
            self.boxes = boxes
            boxes.alive.add(1, ordering: .relaxed)
        }
        deinit { boxes.alive.subtract(1, ordering: .relaxed) }
    }

    /// This process's resident set, from /proc/self/statm.
    static func residentBytes() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
