import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// `/metrics` on a listening socket of reachd-metrics.socket (`FileDescriptorName=metrics`):
/// reachd opens no listening socket itself. On the loop, never blocking: the socket and every
/// connection are non-blocking, at most `maximumConnections` scrapes are served at once, each
/// has `headDeadline` to send its request head (at most `MetricsHTTP.maximumHead` bytes) and
/// `deadline` to take the answer, and then the connection is closed.
/// Connections that have not sent a request never hold a slot against one that has: when a new
/// one arrives at capacity, the heads already sent are read first, then the oldest connection
/// still without a head is closed to make room (counted as evicted); only when every slot is
/// answering a request is the newcomer refused (counted as refused). Four idle or one-byte-a-second connections that
/// reconnect when closed once kept every scraper out.
/// The close lingers: after the answer reachd shuts its side down and reads until the client
/// closes (within the same deadline, and at most `maximumDrain` bytes), because closing with
/// unread bytes (the rest of an oversized head) resets the connection and the client would lose
/// the answer; a client that keeps sending past that is cut off.
final class MetricsEndpoint {
    /// The socket's `FileDescriptorName=` in reachd-metrics.socket.
    static let socketName = "metrics"
    /// A Prometheus pair (HA) and a person with curl, with room to spare.
    static let maximumConnections = 4
    /// Prometheus' default scrape timeout is 10 s; a scrape of reachd is answered from memory,
    /// so a connection that has not finished within 5 s is stuck or hostile.
    static let deadline: Duration = .seconds(5)
    /// Prometheus sends its head with the connection; 2 s is room for a slow path and short
    /// enough that a connection which sends nothing soon gives its slot back.
    static let headDeadline: Duration = .seconds(2)
    /// What the lingering close reads past the head before it gives up: the rest of a head
    /// somewhat over the limit, not an 8 MB one (2,134 reads at a core's full speed, before).
    static let maximumDrain = 64 * 1024
    /// Connections accepted per wake-up, so a flood cannot keep the loop in this handler.
    static let acceptsPerWakeUp = 16
    static let pauseAfterFailure: Duration = .seconds(1)

    fileprivate let loop: EventLoop
    /// Renders the exposition for each scrape.
    private let render: () -> String
    /// Counts a newcomer closed unanswered (`maximumConnections`).
    private let refused: () -> Void
    /// Counts a connection closed before its exchange ended, by why.
    fileprivate let cutOff: (MetricsCutOff) -> Void
    private let listener: Descriptor
    private var source: (any LoopSource)?
    /// The timer that listens again after a failed accept (`pause`).
    private var resume: (any LoopSource)?
    /// The errno of the accept failures in a row, 0 after a success.
    private var failing: Int32 = 0
    private var scrapes: [Int32: Scrape] = [:]

    init(
        loop: EventLoop, listening descriptor: consuming Descriptor, render: @escaping () -> String,
        refused: @escaping () -> Void, cutOff: @escaping (MetricsCutOff) -> Void
    ) throws(SystemError) {
        self.loop = loop
        self.render = render
        self.refused = refused
        self.cutOff = cutOff
        descriptor.setNonBlocking()
        descriptor.setCloseOnExec()
        listener = descriptor
        source = try listen()
    }

    private func listen() throws(SystemError) -> any LoopSource {
        try loop.addWatch(fd: listener.rawValue, events: .readable) { [unowned self] _ in self.acceptPending() }
    }

    /// accept(2) failed for want of a resource (EMFILE, ENFILE, ENOBUFS, ENOMEM): the connection
    /// stays queued and the socket readable, so listening on would spin the loop. Stop listening
    /// for `pauseAfterFailure`, then listen again.
    private func pause(_ code: Int32) {
        // Once per streak: a lasting shortage would otherwise log every second.
        if code != failing {
            Log.warning("metrics: cannot accept a connection: \(String(cString: strerror(code))); pausing /metrics for 1 s at a time until it can")
        }
        failing = code
        source = nil
        do {
            let resume = try loop.addTimer(urgent: false) { [unowned self] in
                self.resume = nil
                do {
                    self.source = try self.listen()
                } catch {
                    Log.error("metrics: cannot listen again: \(error); /metrics is off until reachd restarts")
                }
            }
            resume.schedule(at: .now + Self.pauseAfterFailure)
            self.resume = resume
        } catch {
            Log.error("metrics: cannot arm a timer: \(error); /metrics is off until reachd restarts")
        }
    }

    private func acceptPending() {
        for _ in 0..<Self.acceptsPerWakeUp {
            // accept4 is not in Swift's Glibc module; reachd never execs, so CLOEXEC set after is as good.
            let fd = accept(listener.rawValue, nil, nil)
            if fd < 0 {
                let code = errno
                if code == EINTR || code == ECONNABORTED { continue }
                if code != EAGAIN { pause(code) }
                return  // EAGAIN: every queued connection is taken
            }
            if failing != 0 {
                Log.info("metrics: accepting connections again")
                failing = 0
            }
            let connection = Descriptor(fd)  // closed when refused or failed
            connection.setNonBlocking()
            connection.setCloseOnExec()
            guard scrapes.count < Self.maximumConnections || makeRoom() else {
                refused()
                continue
            }
            do {
                scrapes[fd] = try Scrape(connection, endpoint: self)
            } catch {
                Log.warning("metrics: cannot serve a connection: \(error)")
            }
        }
    }

    /// At capacity: reads the heads already sent (a scraper whose request is in is no longer
    /// idle), then closes the oldest connection still without a whole head. False when every
    /// slot serves a request.
    private func makeRoom() -> Bool {
        for scrape in Array(scrapes.values) where !scrape.hasHead { scrape.poll() }
        guard scrapes.count >= Self.maximumConnections else { return true }
        guard let oldest = scrapes.values.filter({ !$0.hasHead }).min(by: { $0.accepted < $1.accepted }) else { return false }
        cutOff(.evicted)
        oldest.end()
        return true
    }

    fileprivate var exposition: String { render() }

    /// Closes the connection with the scrape.
    fileprivate func finished(_ fd: Int32) { scrapes.removeValue(forKey: fd) }

    /// One connection: read the head, write the answer, close.
    private final class Scrape {
        let connection: Descriptor
        var fd: Int32 { connection.rawValue }
        unowned let endpoint: MetricsEndpoint
        let accepted = ContinuousClock.now
        var received: [UInt8] = []
        var answer: [UInt8] = []
        var sent = 0
        /// Bytes read and dropped after the answer (`maximumDrain`).
        var drained = 0
        /// The request is in (the answer is being written, or the close lingers).
        var hasHead: Bool { !answer.isEmpty }
        /// The answer is out and our side shut down: what still comes is read and dropped.
        var draining = false
        var io: (any LoopSource)?
        var timer: (any LoopSource)?

        init(_ connection: consuming Descriptor, endpoint: MetricsEndpoint) throws(SystemError) {
            self.connection = connection
            self.endpoint = endpoint
            io = try endpoint.loop.addWatch(fd: fd, events: .readable) { [unowned self] _ in self.ready() }
            timer = try endpoint.loop.addTimer(urgent: false) { [unowned self] in
                self.endpoint.cutOff(self.hasHead ? .deadline : .headDeadline)
                self.end()
            }
            timer?.schedule(at: accepted + MetricsEndpoint.headDeadline)
        }

        /// Reads what the client sent so far, if it is still sending its head.
        func poll() { if !hasHead { read() } }

        private func ready() {
            if draining { drain() } else if answer.isEmpty { read() } else { write() }
        }

        private func drain() {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count < 0, errno == EAGAIN { return }
                if count <= 0 { return end() }  // the client closed too (or failed)
                drained += count
                if drained > MetricsEndpoint.maximumDrain {
                    endpoint.cutOff(.drainLimit)
                    return end()
                }
            }
        }

        private func read() {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let room = min(chunk.count, MetricsHTTP.maximumHead + 1 - received.count)
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, room) }
            if count < 0, errno == EAGAIN || errno == EINTR { return }
            // The peer closed (or failed) before a whole head: nothing to answer.
            guard count > 0 else { return end() }
            received += chunk[0..<count]
            let request = MetricsHTTP.parse(received)
            if request == .incomplete { return }
            answer = MetricsHTTP.response(to: request) { endpoint.exposition }
            timer?.schedule(at: accepted + MetricsEndpoint.deadline)
            io?.setEvents(.writable)
            write()
        }

        private func write() {
            while sent < answer.count {
                let count = answer.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
                if count < 0, errno == EINTR { continue }
                if count < 0, errno == EAGAIN { return }
                guard count > 0 else { return end() }
                sent += count
            }
            shutdown(fd, Int32(SHUT_WR))
            draining = true
            io?.setEvents(.readable)
            drain()
        }

        /// Done, failed or past the deadline: release the sources, then the descriptor (with self).
        func end() {
            io?.cancel()
            timer?.cancel()
            io = nil
            timer = nil
            endpoint.finished(fd)
        }
    }
}
