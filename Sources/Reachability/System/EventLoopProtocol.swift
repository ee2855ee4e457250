/// What the core needs of an event loop, so that one core runs on sd-event in reachd and on a
/// poll(2) thread in-process (`PollLoop`): a readiness watch on a descriptor and a one-shot timer.
/// Events are `IOEvents` (poll(2)'s bits, which epoll(7)'s equal). Handlers run
/// on the loop's thread, one at a time.
package protocol EventLoopProtocol: AnyObject {
    /// Calls `handler` with the ready events whenever `fd` is ready for `events`.
    func addWatch(fd: Int32, events: IOEvents, _ handler: @escaping (IOEvents) -> Void) throws(SystemError) -> any LoopSource
    /// A disabled one-shot timer; `urgent` ones run before I/O that is ready in the same turn, so
    /// that a crowd of ready sockets never holds a deadline back.
    func addTimer(urgent: Bool, _ handler: @escaping () -> Void) throws(SystemError) -> any LoopSource
    /// A disabled source that runs `handler` once after each `trigger()`, behind the sources
    /// already ready in that turn: work that gathers what one turn's inputs did (sd-event's defer
    /// sources, as systemd-networkd's dirty-link handler is one).
    func addDeferred(_ handler: @escaping () -> Void) throws(SystemError) -> any DeferredSource
}

/// A deferred source (`EventLoopProtocol.addDeferred`); it ends when cancelled or released.
package protocol DeferredSource: AnyObject {
    /// Runs the handler once, soon: after the sources ready now, before the loop waits again.
    /// Triggered again from its own handler, it runs on the next turn.
    func trigger()
    func cancel()
}

/// One registration on an `EventLoopProtocol`; it ends when cancelled or released.
package protocol LoopSource: AnyObject {
    func cancel()
    /// Changes which events a watch waits for.
    func setEvents(_ events: IOEvents)
    /// Arms a timer for one shot at `instant`.
    func schedule(at instant: ContinuousClock.Instant)
    /// Disarms a timer until the next `schedule(at:)`.
    func disable()
}

extension LoopSource {
    /// Arms a timer at `instant`, or disarms it for nil.
    public func schedule(orDisableAt instant: ContinuousClock.Instant?) {
        if let instant { schedule(at: instant) } else { disable() }
    }
}
