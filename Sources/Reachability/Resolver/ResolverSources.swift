#if canImport(Glibc)
import Glibc
#endif

/// The resolver's sockets and deadline on the core's loop: one watch per c-ares socket, kept by
/// descriptor and changed only where the resolver reports a change (a closing socket's watch is
/// dropped as c-ares closes it: `socketWillClose`), and one urgent timer at the resolver's next
/// deadline, so that a crowd of D-Bus calls or DNS datagrams never holds an answer past its deadline.
///
/// Re-creating a watch for every socket at every resolver event was O(n) per event and O(n^2)
/// per burst with one channel per lookup and hundreds of lookups.
package final class ResolverSources {
    private let loop: any EventLoopProtocol
    private var timer: (any LoopSource)?
    private var sources: [Int32: (source: any LoopSource, events: IOEvents)] = [:]
    /// Called when a watched socket is ready, with the descriptor and its events.
    private let ready: (Int32, IOEvents) -> Void
    private let deadline: () -> Void
    private let warn: (String) -> Void

    package init(loop: any EventLoopProtocol, warn: @escaping (String) -> Void, deadline: @escaping () -> Void, ready: @escaping (Int32, IOEvents) -> Void) {
        self.loop = loop
        self.ready = ready
        self.deadline = deadline
        self.warn = warn
    }

    /// Drops every socket watch: the resolver was replaced (its sockets are gone).
    package func reset() {
        for entry in sources.values { entry.source.cancel() }
        sources.removeAll()
    }

    /// A c-ares socket is about to be closed: its watch goes now, while the number is still
    /// that socket's. Dropped later (at `sync`), it would take out of epoll whatever socket got
    /// the number meanwhile, e.g. the connectivity probe's, opened in the lookup's completion.
    package func socketWillClose(_ fd: Int32) {
        sources.removeValue(forKey: fd)?.source.cancel()
    }

    /// Applies the socket changes `resolver` reports and re-arms the deadline timer.
    package func sync(_ resolver: HostResolver) {
        for change in resolver.takeSocketChanges() {
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
                let source = try loop.addWatch(fd: fd, events: events) { [unowned self] revents in self.ready(fd, revents) }
                sources[fd] = (source, events)
            } catch {
                warn("cannot watch a DNS socket: \(error)")
            }
        }
        do {
            if timer == nil { timer = try loop.addTimer(urgent: true) { [unowned self] in self.deadline() } }
            timer?.schedule(orDisableAt: resolver.nextDeadline)
        } catch {
            warn("cannot arm the DNS deadline timer: \(error)")
        }
    }
}
