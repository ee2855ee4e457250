@testable import Reachability

/// The kernel as a test scripts it (`KernelEdge`): the first picture, then each read of the
/// monitor socket, each dump's end, each lifetime check, as the test queues them. Nothing is
/// opened: a core on it runs without a kernel, a namespace or root.
final class FakeKernel: KernelEdge {
    let monitorDescriptor: Int32 = 1_000_001
    let requestDescriptor: Int32 = 1_000_002
    let radioDescriptor: Int32? = nil
    let radioSourceDescription = "a test's fake"
    let receiveBufferBytes = 0
    let radioDeviceEnded = false
    private(set) var isDumping = false
    var overrunCount = 0
    private(set) var resyncCount = 0
    private(set) var resyncDeadline: ContinuousClock.Instant?

    /// The first picture's facts.
    var first: [NetworkEvent] = []
    /// What each read of the monitor socket returns, oldest first.
    var reads: [[NetworkEvent]] = []
    /// What the running dump ends with (the kernel's facts, whole).
    var dump = NetworkDump()
    /// Lines the next input's sequence tells the journal.
    var incidents: [String] = []
    private(set) var resyncsAsked = 0
    private(set) var lifetimeChecks: [ContinuousClock.Instant] = []
    /// The time a lifetime check brings in (virtual time); nil: the instant the core asked at.
    var clock: ContinuousClock.Instant?
    private(set) var refusals: [RefusedAnnouncement] = []

    func synchronize(knowing state: borrowing NetworkState) throws(SystemError) -> NetworkInput? {
        resyncCount += 1
        return first.isEmpty ? nil : .events(first)
    }

    func readAvailable(knowing state: borrowing NetworkState) -> NetworkInput? {
        guard !isDumping, !reads.isEmpty else { return nil }
        return .events(reads.removeFirst())
    }

    /// An overrun, as `KernelSource` meets one: the queue is gone, a dump starts at once.
    func overrun() {
        overrunCount += 1
        isDumping = true
        resyncDeadline = .now + .seconds(2)
    }

    func continueDump(knowing state: borrowing NetworkState) -> NetworkInput? {
        guard isDumping else { return nil }
        isDumping = false
        resyncDeadline = nil
        resyncCount += 1
        return .dump(dump, held: [], then: [])
    }

    func resyncIfDue() {
        guard resyncDeadline != nil, !isDumping else { return }
        isDumping = true
        resyncDeadline = .now + .seconds(2)
    }

    func requestResync() {
        resyncsAsked += 1
        resyncDeadline = .now
    }

    func lifetimesDue(at now: ContinuousClock.Instant, knowing state: borrowing NetworkState) -> NetworkInput? {
        lifetimeChecks.append(now)
        return .events([.clock(clock ?? now)])
    }

    func setNameservers(_ servers: [IPAddress]) -> NetworkInput? { nil }
    func readRadios() -> NetworkInput? { nil }
    func closeRadioDevice() {}
    func note(_ refusal: RefusedAnnouncement) { refusals.append(refusal) }

    func takeIncidentLines() -> [String] {
        defer { incidents = [] }
        return incidents
    }
}

/// A loop the test turns by hand (swift-nio's EmbeddedEventLoop is the model): a watch runs when
/// the test says its descriptor is readable, a timer when the test fires it, whatever the clock
/// says; the deferred sources run at the end of each such turn, as they would on a real loop.
final class VirtualLoop: EventLoopProtocol {
    final class Source: LoopSource, DeferredSource {
        let fd: Int32?
        var events: IOEvents = []
        var due: ContinuousClock.Instant?
        var triggered = false
        var cancelled = false
        let handler: (IOEvents) -> Void
        init(fd: Int32?, handler: @escaping (IOEvents) -> Void) { (self.fd, self.handler) = (fd, handler) }
        func cancel() { (cancelled, due, triggered) = (true, nil, false) }
        func setEvents(_ events: IOEvents) { self.events = events }
        func schedule(at instant: ContinuousClock.Instant) { due = instant }
        func disable() { due = nil }
        func trigger() { triggered = true }
    }

    private(set) var sources: [Source] = []

    func addWatch(fd: Int32, events: IOEvents, _ handler: @escaping (IOEvents) -> Void) throws(SystemError) -> any LoopSource {
        let source = Source(fd: fd, handler: handler)
        source.events = events
        sources.append(source)
        return source
    }

    func addTimer(urgent: Bool, _ handler: @escaping () -> Void) throws(SystemError) -> any LoopSource {
        let source = Source(fd: nil) { _ in handler() }
        sources.append(source)
        return source
    }

    func addDeferred(_ handler: @escaping () -> Void) throws(SystemError) -> any DeferredSource {
        let source = Source(fd: nil) { _ in handler() }
        sources.append(source)
        return source
    }

    /// The live watch of `fd`.
    func watch(_ fd: Int32) -> Source? { sources.first { $0.fd == fd && !$0.cancelled } }

    /// The armed timers' deadlines.
    var armed: [ContinuousClock.Instant] { sources.compactMap(\.due) }

    /// One turn in which `fd` is readable: its watch runs if it waits for input, then what the
    /// turn deferred. False when the watch does not wait for input (paused).
    @discardableResult
    func readable(_ fd: Int32) -> Bool {
        guard let watch = watch(fd), watch.events.contains(.readable) else { return false }
        watch.handler(.readable)
        runDeferred()
        return true
    }

    /// One turn in which the timer armed at `instant` fires, then what the turn deferred.
    func fire(at instant: ContinuousClock.Instant) {
        guard let timer = sources.first(where: { $0.due == instant }) else { return }
        timer.due = nil
        timer.handler([])
        runDeferred()
    }

    /// The deferred sources triggered, each turn after the other, until none is (at most 100 turns).
    func runDeferred() {
        for _ in 0..<100 {
            let ready = sources.filter { $0.triggered && !$0.cancelled }
            guard !ready.isEmpty else { return }
            for source in ready {
                source.triggered = false
                source.handler([])
            }
        }
    }
}
