import Reachability

/// The resolver's sockets and deadline on reachd's sd-event loop: one I/O source per c-ares
/// socket, kept by descriptor and changed only where the resolver reports a change (a closing
/// socket's source is dropped as c-ares closes it: `socketWillClose`), and one
/// timer at the resolver's next deadline, ranked above bulk I/O so that a crowd of D-Bus calls
/// or DNS datagrams never holds an answer past its deadline.
///
/// Before this, every resolver event re-created a source for every socket: with one channel
/// per lookup and hundreds of lookups that was O(n) per event and O(n^2) per burst.
final class ResolverSources {
    private let loop: EventLoop
    private let timer: EventSource
    private var sources: [Int32: (source: EventSource, events: IOEvents)] = [:]
    /// Called when a watched socket is ready, with the descriptor and its poll events.
    private let ready: (Int32, IOEvents) -> Void

    init(loop: EventLoop, deadline: @escaping () -> Void, ready: @escaping (Int32, IOEvents) -> Void) throws {
        self.loop = loop
        self.ready = ready
        timer = try loop.timer(at: 0, deadline)
        timer.disable()
        timer.setPriority(EventLoop.urgent)
    }

    /// Drops every socket source: the resolver was replaced (its sockets are gone).
    func reset() {
        for entry in sources.values { entry.source.cancel() }
        sources.removeAll()
    }

    /// A c-ares socket is about to be closed: its source goes now, while the number is still
    /// that socket's. Dropped later (at `sync`), it would take out of epoll whatever socket got
    /// the number meanwhile, e.g. the connectivity probe's, opened in the lookup's completion.
    func socketWillClose(_ fd: Int32) {
        sources.removeValue(forKey: fd)?.source.cancel()
    }

    /// Applies the socket changes `hostChecks` reports and re-arms the deadline timer.
    func sync(_ hostChecks: HostChecks) {
        for change in hostChecks.takeSocketChanges() {
            var events: IOEvents = []
            if change.readable { events.insert(.readable) }
            if change.writable { events.insert(.writable) }
            let existing = sources[change.fd]
            if let existing, change.isClosed || change.renewed {
                // Cancelled before anything is added under the same number: a closed file is
                // already out of epoll, and a renewed number names a new socket not yet in it.
                existing.source.cancel()
                sources[change.fd] = nil
            }
            guard !change.isClosed else { continue }
            if let current = sources[change.fd] {
                if current.events != events {
                    current.source.setEvents(events)
                    sources[change.fd] = (current.source, events)
                }
                continue
            }
            let fd = change.fd
            do {
                let source = try loop.watch(fd: fd, events: events) { [unowned self] revents in self.ready(fd, revents) }
                sources[fd] = (source, events)
            } catch {
                Log.warning("cannot watch a DNS socket: \(error)")
            }
        }
        if let deadline = hostChecks.nextDeadline {
            timer.schedule(at: deadline.monotonicMicroseconds)
        } else {
            timer.disable()
        }
    }
}
