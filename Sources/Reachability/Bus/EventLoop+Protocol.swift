extension EventLoop: EventLoopProtocol {
    public func addWatch(fd: Int32, events: IOEvents, _ handler: @escaping (IOEvents) -> Void) throws(SystemError) -> any LoopSource {
        try watch(fd: fd, events: events, handler)
    }

    public func addTimer(urgent: Bool, _ handler: @escaping () -> Void) throws(SystemError) -> any LoopSource {
        let timer = try timer(at: 0, handler)
        timer.disable()
        if urgent { timer.setPriority(Self.urgent) }
        return timer
    }

    public func addDeferred(_ handler: @escaping () -> Void) throws(SystemError) -> any DeferredSource {
        let source = try deferred(handler)
        source.disable()
        return source
    }
}

extension EventSource: LoopSource, DeferredSource {
    /// Enables a defer source for one run (`EventLoopProtocol.addDeferred`).
    public func trigger() { enableOnce() }

    public func schedule(at instant: ContinuousClock.Instant) { schedule(at: instant.monotonicMicroseconds) }
}
