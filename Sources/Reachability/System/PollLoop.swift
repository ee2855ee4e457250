#if canImport(Glibc)
import Glibc
#endif

/// `EventLoopProtocol` on poll(2), for a thread of its own (the in-process monitor's): one poll
/// over every watch and the wake-up pipe, with the earliest timer as its timeout. Sources are
/// held weakly, as sd-event's end with their `EventSource`: one lives while its owner keeps it.
package final class PollLoop: EventLoopProtocol {
    private final class Source: LoopSource, DeferredSource {
        let fd: Int32
        var events: IOEvents = []
        var deadline: ContinuousClock.Instant?
        var urgent = false
        /// A deferred source's: runs at the end of this turn, or the next if it is running.
        var isDeferred = false
        var triggered = false
        let handler: (IOEvents) -> Void
        var isCancelled = false

        init(fd: Int32, handler: @escaping (IOEvents) -> Void) { (self.fd, self.handler) = (fd, handler) }
        func cancel() { (isCancelled, deadline) = (true, nil) }
        func setEvents(_ events: IOEvents) { self.events = events }
        func schedule(at instant: ContinuousClock.Instant) { deadline = instant }
        func disable() { deadline = nil }
        func trigger() { triggered = true }
    }

    private struct Weak { weak var source: Source? }
    private var sources: [Weak] = []
    private let wakeup: WakeUpPipe

    /// `wakeup` ends a wait early: other threads signal it when they queued work for this one.
    public init(wakeup: WakeUpPipe) { self.wakeup = wakeup }

    public func addWatch(fd: Int32, events: IOEvents, _ handler: @escaping (IOEvents) -> Void) throws(SystemError) -> any LoopSource {
        let source = Source(fd: fd, handler: handler)
        source.events = events
        sources.append(Weak(source: source))
        return source
    }

    public func addTimer(urgent: Bool, _ handler: @escaping () -> Void) throws(SystemError) -> any LoopSource {
        let source = Source(fd: -1) { _ in handler() }
        source.urgent = urgent
        sources.append(Weak(source: source))
        return source
    }

    public func addDeferred(_ handler: @escaping () -> Void) throws(SystemError) -> any DeferredSource {
        let source = Source(fd: -1) { _ in handler() }
        source.isDeferred = true
        sources.append(Weak(source: source))
        return source
    }

    /// One turn: waits for a watch, the earliest timer or the wake-up pipe (not at all while a
    /// deferred source is triggered), then calls `woken` (after a wake-up, before anything else;
    /// false ends the turn there), then urgent timers that are due, ready watches in order of
    /// registration, the other due timers, and the triggered deferred sources. Returns false
    /// when `woken` did, or poll failed for another reason than a signal.
    public func runOnce(woken: () -> Bool) -> Bool {
        sources.removeAll { $0.source?.isCancelled ?? true }
        let live = sources.compactMap(\.source)
        let watches = live.filter { $0.fd >= 0 }
        var fds = [pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0)]
        fds += watches.map { pollfd(fd: $0.fd, events: Int16(truncatingIfNeeded: $0.events.rawValue), revents: 0) }
        let timeout = live.contains(where: \.triggered) ? 0 : Self.timeout(until: live.compactMap(\.deadline).min())
        if poll(&fds, nfds_t(fds.count), timeout) < 0 && errno != EINTR { return false }
        if fds[0].revents != 0 {
            wakeup.drain()
            guard woken() else { return false }
        }
        let timers = live.filter { $0.fd < 0 }
        fireDue(timers.filter(\.urgent))
        for (offset, watch) in watches.enumerated() where fds[offset + 1].revents != 0 && !watch.isCancelled {
            watch.handler(IOEvents(rawValue: UInt32(UInt16(bitPattern: fds[offset + 1].revents))))
        }
        fireDue(timers.filter { !$0.urgent && !$0.isDeferred })
        for deferred in timers where deferred.triggered && !deferred.isCancelled {
            deferred.triggered = false
            deferred.handler([])
        }
        return true
    }

    private func fireDue(_ timers: [Source]) {
        let now = ContinuousClock.now
        for timer in timers where timer.deadline.map({ $0 <= now }) ?? false {
            timer.deadline = nil
            timer.handler([])
        }
    }

    /// poll(2)'s timeout in milliseconds, rounded up so a deadline is never woken for early.
    package static func timeout(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return -1 }
        let remaining = ContinuousClock.now.duration(to: deadline)
        guard remaining > .zero else { return 0 }
        return Int32(clamping: remaining.millisecondsRoundedUp)
    }
}
