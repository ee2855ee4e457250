import CCurl
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Every HTTP(S) exchange reachd makes (a network's captive-portal API, the connectivity probe),
/// through libcurl on a thread of its own: a TLS handshake, a name lookup and a slow server take
/// seconds, and reachd's loop may not wait for any. The loop hands questions in (`ask`) and takes
/// the replies (`takeReplies`) when `pipe` is readable. The thread and libcurl (dlopen, `CCurl`)
/// come with the first question, so a host that asks none pays for neither.
///
/// The exchanges run side by side (libcurl's multi interface): one slow server never delays
/// another question, nor its deadline. Idle, the thread waits on a semaphore and wakes nothing.
package final class ExchangeThread: Sendable {
    package typealias Reply = (id: UInt64, answer: Result<HTTPResponse, HTTPFailure>)

    /// Debian's libcurl (libcurl4: OpenSSL, the system's trust store).
    package static let library = "libcurl.so.4"

    private struct State {
        var questions: [(id: UInt64, question: HTTPQuestion)] = []
        var cancelled: Set<UInt64> = []
        var replies: [Reply] = []
        var started = false
        /// libcurl's functions and its multi handle (their addresses), once loaded and kept for
        /// the process's life: `wake` ends the thread's `multi_poll` with them.
        var curl: UInt = 0
        var multi: UInt = 0
    }

    private let state = Mutex(State())
    private let questionsWaiting = DispatchSemaphore(value: 0)
    /// Readable while replies wait for the loop.
    package let pipe: WakeUpPipe

    package init() throws(SystemError) {
        pipe = try WakeUpPipe()
    }

    /// Hands a question to the thread, started with the first.
    package func ask(_ id: UInt64, _ question: HTTPQuestion) throws(SystemError) {
        let start = state.withLock { state -> Bool in
            state.questions.append((id, question))
            defer { state.started = true }
            return !state.started
        }
        wake()
        if start { try DedicatedThread.start { [self] in serve() } }
    }

    /// Ends the exchange `id` unanswered (a probe given up, a path that moved): its socket closes
    /// at once and no reply comes.
    package func cancel(_ id: UInt64) {
        state.withLock { state in
            state.questions.removeAll { $0.id == id }
            state.cancelled.insert(id)
        }
        wake()
    }

    package func takeReplies() -> [Reply] {
        pipe.drain()
        return state.withLock { state in
            defer { state.replies.removeAll() }
            return state.replies
        }
    }

    private func wake() {
        let (curl, multi) = state.withLock { ($0.curl, $0.multi) }
        questionsWaiting.signal()
        if let curl = UnsafePointer<reachd_curl>(bitPattern: curl), let multi = UnsafeMutableRawPointer(bitPattern: multi) {
            _ = curl.pointee.multi_wakeup(multi)
        }
    }

    private func reply(_ id: UInt64, _ answer: Result<HTTPResponse, HTTPFailure>) {
        state.withLock { $0.replies.append((id, answer)) }
        pipe.signal()
    }

    private func serve() {
        let curl = UnsafeMutablePointer<reachd_curl>.allocate(capacity: 1)
        curl.initialize(to: reachd_curl())
        let loaded = reachd_curl_load(Self.library, curl) == 0 && curl.pointee.global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
        guard loaded, let multi = curl.pointee.multi_init() else {
            let why = dlerror().map { String(cString: $0) } ?? "libcurl's functions are missing"
            while true {
                questionsWaiting.wait()
                let questions = state.withLock { state -> [(id: UInt64, question: HTTPQuestion)] in
                    defer { state.questions = [] }
                    return state.questions
                }
                for (id, _) in questions { reply(id, .failure(HTTPFailure("libcurl could not be loaded: \(why)"))) }
            }
        }
        let addresses = (UInt(bitPattern: curl), UInt(bitPattern: multi))
        state.withLock { ($0.curl, $0.multi) = addresses }
        run(curl: UnsafePointer(curl), multi: multi)
    }

    /// Takes questions and cancellations in, drives the transfers, hands each end back.
    private func run(curl: UnsafePointer<reachd_curl>, multi: UnsafeMutableRawPointer) {
        var transfers: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        func end(_ transfer: CurlTransfer) {
            _ = curl.pointee.multi_remove_handle(multi, transfer.easy)
            transfers.removeValue(forKey: transfer.easy)
            transfer.close()
        }
        while true {
            let (questions, cancelled) = state.withLock { state in
                defer { (state.questions, state.cancelled) = ([], []) }
                return (state.questions, state.cancelled)
            }
            for transfer in transfers.values where cancelled.contains(transfer.id) { end(transfer) }
            for (id, question) in questions {
                switch CurlTransfer.make(id, question, curl: curl) {
                case let .success(transfer):
                    guard curl.pointee.multi_add_handle(multi, transfer.easy) == CURLM_OK else {
                        transfer.close()
                        reply(id, .failure(HTTPFailure("libcurl took no more transfers")))
                        continue
                    }
                    transfers[transfer.easy] = transfer
                case let .failure(failure): reply(id, .failure(failure))
                }
            }
            guard !transfers.isEmpty else {
                questionsWaiting.wait()
                continue
            }
            var running: Int32 = 0
            _ = curl.pointee.multi_perform(multi, &running)
            var left: Int32 = 0
            var easy: UnsafeMutableRawPointer?
            var code = CURLE_OK
            while let message = curl.pointee.multi_info_read(multi, &left) {
                guard reachd_curl_done(message, &easy, &code) == 1, let easy, let transfer = transfers[easy] else { continue }
                let answer = transfer.answer(code)
                end(transfer)
                reply(transfer.id, answer)
            }
            // libcurl's own timeouts cut the wait short; `wake` ends it for a new question.
            if !transfers.isEmpty { _ = curl.pointee.multi_poll(multi, nil, 0, 1000, nil) }
        }
    }
}
