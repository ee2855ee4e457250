#if canImport(Glibc)
import Glibc
#endif

/// `EventLoopProtocol` on poll(2), for a thread of its own (the in-process monitor's): one
/// poll over every watch and the wake-up pipe, with the earliest timer as its timeout. Holds its
/// sources weakly, as sd-event's end with their `EventSource`: a registration lives as long as
/// its owner keeps it. One thread only.
public final class PollLoop: EventLoopProtocol {
    private final class Source: LoopSource {
        let fd: Int32
        var events: UInt32
        var deadline: ContinuousClock.Instant?
        let urgent: Bool
        let io: ((UInt32) -> Void)?
        let fire: (() -> Void)?
        var isCancelled = false

        init(fd: Int32, events: UInt32, io: @escaping (UInt32) -> Void) {
            (self.fd, self.events, self.io, fire, urgent) = (fd, events, io, nil, false)
        }

        init(urgent: Bool, fire: @escaping () -> Void) {
            (fd, events, io, self.fire, self.urgent) = (-1, 0, nil, fire, urgent)
        }

        func cancel() {
            isCancelled = true
            deadline = nil
        }

        func setEvents(_ events: UInt32) { self.events = events }
        func schedule(at instant: ContinuousClock.Instant) { deadline = instant }
        func disable() { deadline = nil }
    }

    private struct Weak {
        weak var source: Source?
    }

    private var sources: [Weak] = []
    private let wakeup: WakeUpPipe

    /// `wakeup` ends a wait early: other threads signal it when they queued work for this one.
    public init(wakeup: WakeUpPipe) { self.wakeup = wakeup }

    public func addWatch(fd: Int32, events: UInt32, _ handler: @escaping (UInt32) -> Void) throws(SystemError) -> any LoopSource {
        add(Source(fd: fd, events: events, io: handler))
    }

    public func addTimer(urgent: Bool, _ handler: @escaping () -> Void) throws(SystemError) -> any LoopSource {
        add(Source(urgent: urgent, fire: handler))
    }

    private func add(_ source: Source) -> Source {
        sources.append(Weak(source: source))
        return source
    }

    /// One turn: waits for a watch, the earliest timer or the wake-up pipe, then calls `woken`
    /// (after a wake-up, before anything else; false ends the turn there), then urgent timers
    /// that are due, ready watches in order of registration, and the other due timers. Returns
    /// false when `woken` did, or poll failed for another reason than a signal.
    public func runOnce(woken: () -> Bool) -> Bool {
        sources.removeAll { $0.source == nil || $0.source!.isCancelled }
        let live = sources.compactMap(\.source)
        let watches = live.filter { $0.io != nil }
        var fds = [pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0)]
        fds += watches.map { pollfd(fd: $0.fd, events: Int16(truncatingIfNeeded: $0.events), revents: 0) }
        let deadline = live.compactMap(\.deadline).min()
        if poll(&fds, nfds_t(fds.count), Self.timeout(until: deadline)) < 0 && errno != EINTR { return false }
        if fds[0].revents != 0 {
            wakeup.drain()
            guard woken() else { return false }
        }
        fireDue(live.filter(\.urgent))
        for (offset, watch) in watches.enumerated() where fds[offset + 1].revents != 0 && !watch.isCancelled {
            watch.io?(UInt32(UInt16(bitPattern: fds[offset + 1].revents)))
        }
        fireDue(live.filter { !$0.urgent })
        return true
    }

    private func fireDue(_ timers: [Source]) {
        let now = ContinuousClock.now
        for timer in timers {
            guard let due = timer.deadline, due <= now, !timer.isCancelled else { continue }
            timer.deadline = nil
            timer.fire?()
        }
    }

    /// poll(2)'s timeout in milliseconds, rounded up so a deadline is never woken for early.
    static func timeout(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return -1 }
        let remaining = ContinuousClock.now.duration(to: deadline)
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}
