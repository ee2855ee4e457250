import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's one event loop: an sd-event carrying netlink, the bus, c-ares sockets, timers,
/// signals and the watchdog. Every source owns its sd_event_source and its Swift handler; the
/// source ends when its `EventSource` is released or cancelled. One thread only.
package final class EventLoop {
    package let event: OpaquePointer

    public init() throws(SystemError) {
        var event: OpaquePointer?
        let result = sd_event_new(&event)
        guard result >= 0, let event else { throw SystemError("sd_event_new", errno: -result) }
        self.event = event
    }

    deinit { sd_event_unref(event) }

    /// `EventSource.setPriority` for what must not wait behind bulk I/O: deadline timers.
    public static let urgent = Int64(SD_EVENT_PRIORITY_IMPORTANT)

    /// Calls `handler` with the events found whenever `fd` is ready for `events`.
    package func watch(fd: Int32, events: IOEvents, _ handler: @escaping (IOEvents) -> Void) throws(SystemError) -> EventSource {
        try add("sd_event_add_io", EventSource.Handler(io: handler)) { source, context in
            sd_event_add_io(event, &source, fd, events.rawValue, { _, _, revents, context in
                Unmanaged<EventSource.Handler>.fromOpaque(context!).takeUnretainedValue().io?(IOEvents(rawValue: revents))
                return 0
            }, context)
        }
    }

    /// A one-shot timer at `usec` (CLOCK_MONOTONIC); re-arm with `EventSource.schedule(at:)`.
    package func timer(at usec: UInt64, _ handler: @escaping () -> Void) throws(SystemError) -> EventSource {
        // Accuracy 1 ms: deadlines are promises to callers, and coalescing does not matter here.
        try add("sd_event_add_time", EventSource.Handler(fire: handler)) { source, context in
            sd_event_add_time(event, &source, CLOCK_MONOTONIC, usec, 1000, { _, _, context in
                Unmanaged<EventSource.Handler>.fromOpaque(context!).takeUnretainedValue().fire?()
                return 0
            }, context)
        }
    }

    /// A defer source: `handler` runs on the loop's next turn, without a wait, each time the
    /// source is enabled for one shot (`EventSource.enableOnce`).
    package func deferred(_ handler: @escaping () -> Void) throws(SystemError) -> EventSource {
        try add("sd_event_add_defer", EventSource.Handler(fire: handler)) { source, context in
            sd_event_add_defer(event, &source, { _, context in
                Unmanaged<EventSource.Handler>.fromOpaque(context!).takeUnretainedValue().fire?()
                return 0
            }, context)
        }
    }

    /// Calls `handler` after every turn of the loop that dispatched another source: work that
    /// rides on wake-ups the loop has anyway and never causes one of its own (sd_event_add_post).
    public func afterEachWake(_ handler: @escaping () -> Void) throws(SystemError) -> EventSource {
        try add("sd_event_add_post", EventSource.Handler(fire: handler)) { source, context in
            sd_event_add_post(event, &source, { _, context in
                Unmanaged<EventSource.Handler>.fromOpaque(context!).takeUnretainedValue().fire?()
                return 0
            }, context)
        }
    }

    /// Calls `handler` on `signal`. The signal must already be blocked in every thread
    /// (`EventLoop.blockSignals` at the very start of main), or it kills the process first.
    public func onSignal(_ signal: Int32, _ handler: @escaping () -> Void) throws(SystemError) -> EventSource {
        try add("sd_event_add_signal \(signal)", EventSource.Handler(fire: handler)) { source, context in
            sd_event_add_signal(event, &source, signal, { _, _, context in
                Unmanaged<EventSource.Handler>.fromOpaque(context!).takeUnretainedValue().fire?()
                return 0
            }, context)
        }
    }

    /// Registers a source whose C callback finds `handler` through its userdata; the returned
    /// EventSource owns both.
    private func add(
        _ call: String, _ handler: EventSource.Handler,
        _ register: (inout OpaquePointer?, UnsafeMutableRawPointer) -> Int32
    ) throws(SystemError) -> EventSource {
        let context = Unmanaged.passRetained(handler).toOpaque()
        var source: OpaquePointer?
        let result = register(&source, context)
        guard result >= 0, let source else {
            Unmanaged<EventSource.Handler>.fromOpaque(context).release()
            throw SystemError(call, errno: -result)
        }
        return EventSource(source: source, context: context)
    }

    /// Blocks `signals` for this thread and every thread created after; call first thing in main.
    public static func blockSignals(_ signals: [Int32]) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Sends WATCHDOG=1 from the loop at half of WATCHDOG_USEC when the service manager asks for it.
    /// Returns whether the watchdog is on.
    @discardableResult
    public func enableWatchdog() -> Bool { sd_event_set_watchdog(event, 1) > 0 }

    /// Runs until `exit(code:)`; returns the code.
    public func run() -> Int32 { sd_event_loop(event) }

    public func exit(code: Int32) { sd_event_exit(event, code) }
}

/// An event source: owns its sd_event_source and handler. Released or cancelled, it ends.
package final class EventSource {
    package final class Handler {
        package let io: ((IOEvents) -> Void)?
        package let fire: (() -> Void)?
        /// Runs before the loop waits (see `onPrepare`).
        package var prepare: (() -> Void)?
        package init(io: @escaping (IOEvents) -> Void) { self.io = io; fire = nil }
        package init(fire: @escaping () -> Void) { io = nil; self.fire = fire }
    }

    private var source: OpaquePointer?
    private let context: UnsafeMutableRawPointer

    package init(source: OpaquePointer, context: UnsafeMutableRawPointer) {
        self.source = source
        self.context = context
    }

    deinit {
        cancel()
        Unmanaged<Handler>.fromOpaque(context).release()
    }

    /// Stops the source for good. Safe to call from its own handler.
    public func cancel() {
        guard let source else { return }
        sd_event_source_disable_unref(source)
        self.source = nil
    }

    /// Re-arms a timer for `usec` (CLOCK_MONOTONIC) and enables it for one shot.
    package func schedule(at usec: UInt64) {
        guard let source else { return }
        sd_event_source_set_time(source, usec)
        sd_event_source_set_enabled(source, Int32(SD_EVENT_ONESHOT))
    }

    /// Enables the source for one run: a defer source's next turn.
    package func enableOnce() {
        guard let source else { return }
        sd_event_source_set_enabled(source, Int32(SD_EVENT_ONESHOT))
    }

    /// Disables a timer until the next `schedule(at:)`.
    public func disable() {
        guard let source else { return }
        sd_event_source_set_enabled(source, Int32(SD_EVENT_OFF))
    }

    /// Runs `body` every time before the loop polls while this source is enabled: the place to
    /// tell the loop what a library that keeps its own queues (sd-bus) waits for next.
    public func onPrepare(_ body: @escaping () -> Void) throws(SystemError) {
        guard let source else { return }
        Unmanaged<Handler>.fromOpaque(context).takeUnretainedValue().prepare = body
        let result = sd_event_source_set_prepare(source) { _, context in
            Unmanaged<EventSource.Handler>.fromOpaque(context!).takeUnretainedValue().prepare?()
            return 0
        }
        guard result >= 0 else { throw SystemError("sd_event_source_set_prepare", errno: -result) }
    }

    /// Ranks the source against the others: when several are ready in one turn, sd-event runs
    /// the lowest value first (`EventLoop.urgent` before the default 0 of I/O and the bus).
    public func setPriority(_ priority: Int64) {
        guard let source else { return }
        sd_event_source_set_priority(source, priority)
    }

    /// Changes which events an I/O source waits for.
    public func setEvents(_ events: IOEvents) {
        guard let source else { return }
        sd_event_source_set_io_events(source, events.rawValue)
    }
}
