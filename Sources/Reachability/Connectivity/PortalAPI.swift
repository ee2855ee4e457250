import CCurl
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One question to a link's captive-portal API: the URI it announced, asked bound to the link.
package struct PortalQuestion: Hashable, Sendable {
    package var interfaceIndex: Int32
    package var interfaceName: String
    package var api: String
    /// When it was asked: `seconds-remaining` counts from here (the answer is younger).
    package var asked: ContinuousClock.Instant

    package init(interfaceIndex: Int32, interfaceName: String, api: String, asked: ContinuousClock.Instant) {
        self.interfaceIndex = interfaceIndex
        self.interfaceName = interfaceName
        self.api = api
        self.asked = asked
    }
}

/// The captive-portal APIs (RFC 8908) asked over HTTPS with libcurl, on a thread of their own:
/// a TLS handshake, a name lookup and a slow server take seconds, and reachd's loop may not wait
/// for any. The loop hands questions in (`ask`) and takes the replies (`takeReplies`) when
/// `pipe` is readable. The thread and libcurl (dlopen, `CCurl`) come with the first question, so
/// a host that never meets an API pays for neither.
///
/// Each question is bounded: the link (SO_BINDTODEVICE, so the answer is that link's network's),
/// https only, also after a redirect, at most `maximumRedirects`, `timeout` in all, a body of at
/// most `maximumBody` bytes, `Content-Type: application/captive+json` and status 200, the
/// system's trust store (or `caFile`), no proxy, no cookies.
package final class PortalAPI: Sendable {
    package typealias Reply = (question: PortalQuestion, result: Result<PortalAPIReply, PortalAPIRefusal>)

    package static let maximumBody = 64 << 10
    package static let maximumRedirects = 3
    package static let timeout: Duration = .seconds(5)
    /// Debian's libcurl (libcurl4: OpenSSL, the system's trust store).
    static let library = "libcurl.so.4"

    private struct State {
        var questions: [PortalQuestion] = []
        var replies: [Reply] = []
        var started = false
        var closed = false
    }

    private let state = Mutex(State())
    private let questionsWaiting = DispatchSemaphore(value: 0)
    /// Readable while replies wait for the loop.
    package let pipe: WakeUpPipe
    /// A file of trusted CAs instead of the system's store (a test's CA); nil: the system's.
    let caFile: String?

    package init(caFile: String?) throws(SystemError) {
        pipe = try WakeUpPipe()
        self.caFile = caFile
    }

    /// Hands a question to the thread, started with the first.
    package func ask(_ question: PortalQuestion) throws(SystemError) {
        let start = state.withLock { state -> Bool in
            state.questions.append(question)
            defer { state.started = true }
            return !state.started
        }
        questionsWaiting.signal()
        if start { try DedicatedThread.start { [self] in serve() } }
    }

    package func takeReplies() -> [Reply] {
        pipe.drain()
        return state.withLock { state in
            defer { state.replies.removeAll() }
            return state.replies
        }
    }

    /// Ends the thread once it finished the question it has.
    package func close() {
        state.withLock { $0.closed = true }
        questionsWaiting.signal()
    }

    private func serve() {
        // Kept for the process's life, as the library is.
        let curl = UnsafeMutablePointer<reachd_curl>.allocate(capacity: 1)
        curl.initialize(to: reachd_curl())
        let loaded = reachd_curl_load(Self.library, curl) == 0 && curl.pointee.global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
        let loadError = loaded ? "" : dlerror().map { String(cString: $0) } ?? "libcurl's functions are missing"
        while true {
            questionsWaiting.wait()
            let next = state.withLock { state -> PortalQuestion? in
                state.closed || state.questions.isEmpty ? nil : state.questions.removeFirst()
            }
            if state.withLock({ $0.closed }) { return }
            guard let question = next else { continue }
            let result: Result<PortalAPIReply, PortalAPIRefusal> =
                loaded ? PortalExchange(curl: UnsafePointer(curl), caFile: caFile).ask(question) : .failure(PortalAPIRefusal("libcurl could not be loaded: \(loadError)"))
            state.withLock { $0.replies.append((question, result)) }
            pipe.signal()
        }
    }
}
