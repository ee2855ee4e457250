import Foundation
import Synchronization
@testable import Reachability
@testable import SystemConfiguration

// Two clients of the SystemConfiguration module, written for these tests in the two patterns
// real code uses SCNetworkReachability with (a listener manager as in Alamofire, a notifier as
// in the single-file Reachability.swift): a context whose retain/release/copyDescription manage
// an Unmanaged weak box, the zero address with sa_len set, `description as CFString`, callbacks
// on a serial queue, GetFlags synchronously from that queue, stop with a nil callback and a nil
// queue, and deinit while a callback may be in flight. Both record every callback they get.

/// Counts the weak boxes alive: every `retain` the module does must be balanced by a `release`
/// once a client stops or goes away, so this returns to zero.
final class BoxCount: Sendable {
    let alive = Atomic<Int>(0)
    var value: Int { alive.load(ordering: .acquiring) }
}

/// The zero address, as ported code writes it: a plain sockaddr, its BSD length byte set.
func zeroAddressReference() -> SCNetworkReachability? {
    var zero = sockaddr()
    zero.sa_len = UInt8(MemoryLayout<sockaddr>.size)
    zero.sa_family = sa_family_t(AF_INET)
    return SCNetworkReachabilityCreateWithAddress(nil, &zero)
}

/// An IPv4 socket address for `text`, with its length byte set as on BSD.
func socketAddress(_ text: String) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
    address.sin_family = sa_family_t(AF_INET)
    inet_pton(AF_INET, text, &address.sin_addr)
    return address
}

/// A reference for a pair of IPv4 addresses.
func addressPairReference(local: String, remote: String) -> SCNetworkReachability? {
    var local = socketAddress(local)
    var remote = socketAddress(remote)
    return withUnsafePointer(to: &local) { localPointer in
        withUnsafePointer(to: &remote) { remotePointer in
            localPointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { localAddress in
                remotePointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { remoteAddress in
                    SCNetworkReachabilityCreateWithAddressPair(nil, localAddress, remoteAddress)
                }
            }
        }
    }
}

/// The listener pattern: schedule on a queue of its own, then set the callback with a weak-box
/// context; the current status is pushed once by hand (the framework may not call back at
/// start); a listener hears each change of status (reachable or not), not each callback.
final class ListenerClient: @unchecked Sendable {
    // Mutable state is behind `lock`; the reference itself is thread-safe.
    enum Status: Equatable, Sendable { case notReachable, reachable }

    let reachability: SCNetworkReachability
    let reachabilityQueue = DispatchQueue(label: "test.listener.reachability")
    private let lock = NSLock()
    private var previous: Status?
    private var heard: [Status] = []
    private var callbacks: [SCNetworkReachabilityFlags] = []
    private let boxes: BoxCount

    init(_ reachability: SCNetworkReachability, boxes: BoxCount) {
        self.reachability = reachability
        self.boxes = boxes
    }

    deinit { stopListening() }

    /// GetFlags, as the manager's `flags` property asks it (from any thread).
    var flags: SCNetworkReachabilityFlags? {
        var flags = SCNetworkReachabilityFlags()
        return SCNetworkReachabilityGetFlags(reachability, &flags) ? flags : nil
    }

    /// What the listener heard, in order.
    var statuses: [Status] { lock.withLock { heard } }
    /// Every callback's flags, in order.
    var callbackFlags: [SCNetworkReachabilityFlags] { lock.withLock { callbacks } }

    @discardableResult
    func startListening() -> Bool {
        stopListening()
        let box = WeakListener(self, boxes: boxes)
        var context = SCNetworkReachabilityContext(
            version: 0,
            info: Unmanaged.passUnretained(box).toOpaque(),
            retain: { info in
                let unmanaged = Unmanaged<WeakListener>.fromOpaque(info)
                _ = unmanaged.retain()
                return UnsafeRawPointer(unmanaged.toOpaque())
            },
            release: { info in
                Unmanaged<WeakListener>.fromOpaque(info).release()
            },
            copyDescription: { info in
                let listener = Unmanaged<WeakListener>.fromOpaque(info).takeUnretainedValue().client
                let description = listener.map { "listener of \($0.reachability)" } ?? "nil"
                return Unmanaged.passRetained(description as CFString)
            })
        let callback: SCNetworkReachabilityCallBack = { _, flags, info in
            guard let info else { return }
            Unmanaged<WeakListener>.fromOpaque(info).takeUnretainedValue().client?.received(flags)
        }
        let queued = SCNetworkReachabilitySetDispatchQueue(reachability, reachabilityQueue)
        let added = SCNetworkReachabilitySetCallback(reachability, callback, &context)
        if let current = flags {
            reachabilityQueue.async { self.notify(current) }
        }
        return queued && added
    }

    func stopListening() {
        SCNetworkReachabilitySetCallback(reachability, nil, nil)
        SCNetworkReachabilitySetDispatchQueue(reachability, nil)
        lock.withLock { previous = nil }
    }

    /// On `reachabilityQueue`: a callback.
    private func received(_ flags: SCNetworkReachabilityFlags) {
        lock.withLock { callbacks.append(flags) }
        notify(flags)
    }

    private func notify(_ flags: SCNetworkReachabilityFlags) {
        let status: Status = flags.contains(.reachable) && !flags.contains(.connectionRequired) ? .reachable : .notReachable
        lock.withLock {
            guard previous != status else { return }
            previous = status
            heard.append(status)
        }
    }

    private final class WeakListener {
        weak var client: ListenerClient?
        private let boxes: BoxCount
        init(_ client: ListenerClient, boxes: BoxCount) {
            self.client = client
            self.boxes = boxes
            boxes.alive.add(1, ordering: .relaxed)
        }
        deinit { boxes.alive.subtract(1, ordering: .relaxed) }
    }
}

/// The notifier pattern: set the callback first, then the queue (a serial queue of its own),
/// then read the flags synchronously on that queue; the callback stores the flags, and a
/// change of them is announced on a notification queue.
final class NotifierClient: @unchecked Sendable {
    // `flags`, `running` and `announcements` change on `serialQueue` only; reads go through it.
    enum Failure: Error { case callback(Int32), queue(Int32), flags(Int32) }

    let reference: SCNetworkReachability
    let serialQueue = DispatchQueue(label: "test.notifier.serial")
    let notificationQueue = DispatchQueue(label: "test.notifier.notifications")
    private let boxes: BoxCount
    private var running = false
    private var announced: [SCNetworkReachabilityFlags] = []
    private var callbacks = 0
    private var flags: SCNetworkReachabilityFlags? {
        didSet {
            guard flags != oldValue, let flags else { return }
            announced.append(flags)
        }
    }

    init(_ reference: SCNetworkReachability, boxes: BoxCount) {
        self.reference = reference
        self.boxes = boxes
    }

    deinit { stopNotifier() }

    /// The flags as last stored, read on the serial queue.
    var currentFlags: SCNetworkReachabilityFlags? { serialQueue.sync { flags } }
    /// Each change of the stored flags, in order (the first is the starting point).
    var changes: [SCNetworkReachabilityFlags] { serialQueue.sync { announced } }
    /// How many callbacks arrived.
    var callbackCount: Int { serialQueue.sync { callbacks } }

    func startNotifier() throws {
        guard !serialQueue.sync(execute: { running }) else { return }
        let callback: SCNetworkReachabilityCallBack = { reference, flags, info in
            guard let info else { return }
            // The box outlives every callback (retain/release); the notifier may be gone already.
            let notifier = Unmanaged<WeakNotifier>.fromOpaque(info).takeUnretainedValue().notifier
            notifier?.callbacks += 1
            notifier?.flags = flags
        }
        let box = WeakNotifier(self, boxes: boxes)
        var context = SCNetworkReachabilityContext(
            version: 0,
            info: UnsafeMutableRawPointer(Unmanaged<WeakNotifier>.passUnretained(box).toOpaque()),
            retain: { (info: UnsafeRawPointer) -> UnsafeRawPointer in
                let unmanaged = Unmanaged<WeakNotifier>.fromOpaque(info)
                _ = unmanaged.retain()
                return UnsafeRawPointer(unmanaged.toOpaque())
            },
            release: { (info: UnsafeRawPointer) -> Void in
                Unmanaged<WeakNotifier>.fromOpaque(info).release()
            },
            copyDescription: { (info: UnsafeRawPointer) -> Unmanaged<CFString> in
                let notifier = Unmanaged<WeakNotifier>.fromOpaque(info).takeUnretainedValue().notifier
                let description = notifier.map { _ in "notifier" } ?? "nil"
                return Unmanaged.passRetained(description as CFString)
            })
        if !SCNetworkReachabilitySetCallback(reference, callback, &context) {
            stopNotifier()
            throw Failure.callback(SCError())
        }
        if !SCNetworkReachabilitySetDispatchQueue(reference, serialQueue) {
            stopNotifier()
            throw Failure.queue(SCError())
        }
        try serialQueue.sync {
            var flags = SCNetworkReachabilityFlags()
            if !SCNetworkReachabilityGetFlags(reference, &flags) {
                stopNotifier()
                throw Failure.flags(SCError())
            }
            self.flags = flags
            running = true
        }
    }

    func stopNotifier() {
        SCNetworkReachabilitySetCallback(reference, nil, nil)
        SCNetworkReachabilitySetDispatchQueue(reference, nil)
    }

    private final class WeakNotifier {
        weak var notifier: NotifierClient?
        private let boxes: BoxCount
        init(_ notifier: NotifierClient, boxes: BoxCount) {
            self.notifier = notifier
            self.boxes = boxes
            boxes.alive.add(1, ordering: .relaxed)
        }
        deinit { boxes.alive.subtract(1, ordering: .relaxed) }
    }
}

/// A service of the module's own for one test: the namespace's links, and reachd on `bus` when
/// given (nil: in-process only). References created inside `body` use it; it is shut down after.
func withReachabilityService<T>(
    namespace: TestNamespace, bus: String? = nil, resolvConf: String? = nil, hostTimeout: Duration = .seconds(2),
    _ body: (SCReachabilityService) async throws -> T
) async throws -> T {
    var settings = SCReachabilityService.Settings()
    settings.bus = bus.map { .address($0) }
    settings.monitor.namespacePath = namespace.path
    settings.monitor.sysfsRoot = "/nonexistent-sysfs"
    settings.monitor.resolvConfPath = resolvConf
    settings.hostTimeout = hostTimeout
    let service = SCReachabilityService(settings: settings)
    defer { service.shutdown() }
    return try await SCReachabilityService.$override.withValue(service) { try await body(service) }
}

/// Waits until `condition` holds, polling.
func waitUntil(_ what: String, timeout: Duration = waitLimit, _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}
