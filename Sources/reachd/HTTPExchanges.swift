import Reachability

/// The loop's side of `ExchangeThread`: every HTTP(S) exchange reachd makes (the portal APIs,
/// the connectivity probes) is handed to that one thread, and its answer comes back to the
/// asker's completion on the loop, through the thread's wake-up pipe. The thread, its pipe and
/// libcurl come with the first question: a host whose probe is off and whose networks announce no
/// API loads none of them. Loop-thread only.
final class HTTPExchanges {
    typealias Completion = (Result<HTTPResponse, HTTPFailure>) -> Void

    private let loop: EventLoop
    private var thread: ExchangeThread?
    private var wake: (any LoopSource)?
    private var waiting: [UInt64: Completion] = [:]
    private var nextID: UInt64 = 1
    /// `[Portal] CAFile=`: trusted instead of the system's store by every exchange (nil: the store).
    var caFile: String?

    init(loop: EventLoop, caFile: String?) {
        self.loop = loop
        self.caFile = caFile
    }

    /// Asks `question`; `completion` runs on the loop with its answer, unless `cancel` came first.
    func ask(_ question: HTTPQuestion, _ completion: @escaping Completion) throws(SystemError) -> UInt64 {
        let thread: ExchangeThread
        if let started = self.thread { thread = started } else { thread = try start() }
        let id = nextID
        nextID += 1
        var question = question
        question.caFile = caFile
        waiting[id] = completion
        do throws(SystemError) {
            try thread.ask(id, question)
        } catch {
            waiting[id] = nil
            throw error
        }
        return id
    }

    /// Ends exchange `id` unanswered: its completion never runs.
    func cancel(_ id: UInt64) {
        guard waiting.removeValue(forKey: id) != nil else { return }
        thread?.cancel(id)
    }

    private func start() throws(SystemError) -> ExchangeThread {
        let thread = try ExchangeThread()
        wake = try loop.addWatch(fd: thread.pipe.fd, events: .readable) { [unowned self] _ in
            for reply in thread.takeReplies() { self.waiting.removeValue(forKey: reply.id)?(reply.answer) }
        }
        self.thread = thread
        Log.info("HTTP exchanges: the first question; libcurl asks it on a thread of its own")
        return thread
    }
}
