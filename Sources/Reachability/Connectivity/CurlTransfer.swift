import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// One `HTTPQuestion` as a libcurl transfer, on `ExchangeThread`. Every bound is set on the
/// handle before it joins the multi handle; the body is kept up to the question's `maximumBody`
/// and the transfer is aborted past it. Owns the handle and what its options point to until
/// `close`.
package final class CurlTransfer {
    package let id: UInt64
    package let easy: UnsafeMutableRawPointer
    private let curl: UnsafePointer<reachd_curl>
    private let maximumBody: Int
    private var headers: UnsafeMutablePointer<curl_slist>?
    /// libcurl's sentence on a failure (CURLOPT_ERRORBUFFER, NUL-terminated).
    private let message = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    /// What the body callback writes into.
    private var body: [UInt8] = []
    private var overflowed = false

    /// The transfer, ready to join the multi handle; a failure when libcurl makes no handle or
    /// refuses an option.
    package static func make(_ id: UInt64, _ question: HTTPQuestion, curl: UnsafePointer<reachd_curl>) -> Result<CurlTransfer, HTTPFailure> {
        guard let easy = curl.pointee.easy_init() else { return .failure(HTTPFailure("libcurl made no handle")) }
        let transfer = CurlTransfer(id: id, easy: easy, curl: curl, maximumBody: question.maximumBody)
        guard transfer.configure(question) else {
            transfer.close()
            return .failure(HTTPFailure("libcurl refused an option (too old a libcurl?)"))
        }
        return .success(transfer)
    }

    private init(id: UInt64, easy: UnsafeMutableRawPointer, curl: UnsafePointer<reachd_curl>, maximumBody: Int) {
        self.id = id
        self.easy = easy
        self.curl = curl
        self.maximumBody = maximumBody
        message.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit { message.deallocate() }

    private func configure(_ question: HTTPQuestion) -> Bool {
        var failed = false
        func set(_ option: CURLoption, _ value: Int) { failed = failed || reachd_curl_setopt_long(curl, easy, option, value) != CURLE_OK }
        func set(_ option: CURLoption, _ text: String) {
            failed = failed || text.withCString { reachd_curl_setopt_pointer(curl, easy, option, $0) } != CURLE_OK
        }
        func set(_ option: CURLoption, _ pointer: UnsafeMutableRawPointer?) {
            failed = failed || reachd_curl_setopt_pointer(curl, easy, option, pointer) != CURLE_OK
        }
        let milliseconds = max(1, Int(question.timeout.components.seconds * 1000 + question.timeout.components.attoseconds / 1_000_000_000_000_000))
        set(CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(message))
        set(CURLOPT_URL, question.url)
        switch question.binding {
        case .routed: break
        // "if!": the interface by name only (SO_BINDTODEVICE); the kernel picks the source as it
        // routes, which a route's preferred source can make another link's address (seen with
        // libcurl 7.88: `ProbeSourceTests`); "host!": that address, with no lookup.
        case let .link(name): set(CURLOPT_INTERFACE, "if!" + name)
        case let .source(address): set(CURLOPT_INTERFACE, "host!\(address)")
        // libcurl 7.88 (Debian 12) binds a device or an address, not both ("ifhost!" came in
        // 8.9): the address through "host!", the device by this callback before the bind.
        case let .linkAddress(name, address):
            set(CURLOPT_INTERFACE, "host!\(address)")
            device = strdup(name)
            set(CURLOPT_SOCKOPTDATA, UnsafeMutableRawPointer(device))
            failed = failed || reachd_curl_setopt_sockopt(curl, easy, Self.bindToDevice) != CURLE_OK
        }
        for header in question.headers { headers = curl.pointee.slist_append(headers, header) }
        if let resolved = question.resolved {
            // The name reachd's resolver resolved: an address literal, so no lookup of libcurl's.
            resolves = curl.pointee.slist_append(nil, resolved.entry)
            set(CURLOPT_CONNECT_TO, UnsafeMutableRawPointer(resolves))
        }
        set(CURLOPT_PROTOCOLS_STR, question.protocols)
        set(CURLOPT_REDIR_PROTOCOLS_STR, "https")
        set(CURLOPT_FOLLOWLOCATION, question.redirects > 0 ? 1 : 0)
        set(CURLOPT_MAXREDIRS, question.redirects)
        set(CURLOPT_TIMEOUT_MS, milliseconds)
        set(CURLOPT_CONNECTTIMEOUT_MS, milliseconds)
        set(CURLOPT_NOSIGNAL, 1)
        // A fresh connection each time, closed after: an answer is about the path as it is now,
        // and no socket idles between questions.
        set(CURLOPT_FRESH_CONNECT, 1)
        set(CURLOPT_FORBID_REUSE, 1)
        // Past the timeout, a name lookup still running is left to end on its own: without this,
        // libcurl waits for it (glibc's resolver: 5 s per try, twice) and every transfer with it.
        _ = reachd_curl_setopt_long(curl, easy, CURLOPT_QUICK_EXIT, 1)
        set(CURLOPT_NOPROXY, "*")
        set(CURLOPT_USERAGENT, "reachd")
        set(CURLOPT_SSL_VERIFYPEER, 1)
        set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = question.caFile { set(CURLOPT_CAINFO, caFile) }
        set(CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headers))
        set(CURLOPT_WRITEDATA, Unmanaged.passUnretained(self).toOpaque())
        failed = failed || reachd_curl_setopt_write(curl, easy, Self.write) != CURLE_OK
        return !failed
    }

    private var resolves: UnsafeMutablePointer<curl_slist>?
    /// The link's name for `bindToDevice` (a C string of its own, freed with the transfer).
    private var device: UnsafeMutablePointer<CChar>?

    /// libcurl's socket-option callback: SO_BINDTODEVICE to the name it is given (`device`), on
    /// each socket the transfer opens; a refusal fails the transfer (libcurl says so).
    private static let bindToDevice: reachd_curl_sockopt = { name, fd, _ in
        guard let name else { return Int32(CURL_SOCKOPT_ERROR) }
        let length = socklen_t(strlen(name.assumingMemoryBound(to: CChar.self)) + 1)
        return setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name, length) == 0 ? Int32(CURL_SOCKOPT_OK) : Int32(CURL_SOCKOPT_ERROR)
    }

    /// The transfer ended with `code`: the answer, or why there is none. A body cut at the bound
    /// is an answer (incomplete), not a failure.
    package func answer(_ code: CURLcode) -> Result<HTTPResponse, HTTPFailure> {
        guard code == CURLE_OK || overflowed && code == CURLE_WRITE_ERROR else {
            let kind = curl.pointee.easy_strerror(code).map { String(cString: $0) } ?? "libcurl error \(code.rawValue)"
            // The sentence may quote what the peer sent: printable ASCII only, bounded.
            var said = Self.printable(String(cString: message), 200)
            while said.last == " " { said.removeLast() }
            let text = said.isEmpty ? kind : "\(kind) (\(said))"
            return .failure(HTTPFailure(text, timedOut: code == CURLE_OPERATION_TIMEDOUT))
        }
        var status = 0
        _ = reachd_curl_getinfo_long(curl, easy, CURLINFO_RESPONSE_CODE, &status)
        var headers: [String: String] = [:]
        var amount = 0
        for name in HTTPResponse.readHeaders {
            if let value = reachd_curl_header(curl, easy, name, 0, &amount) { headers[name] = String(cString: value) }
        }
        // RFC 9112 6.3: Content-Length headers that disagree leave the body's end unknowable (the
        // classic smuggling shape); libcurl takes one, the answer is refused.
        if let first = reachd_curl_header(curl, easy, "content-length", 0, &amount).map({ String(cString: $0) }), amount > 1 {
            for index in 1..<min(amount, 16) {
                guard let other = reachd_curl_header(curl, easy, "content-length", index, &amount).map({ String(cString: $0) }), other != first else { continue }
                return .failure(HTTPFailure("conflicting Content-Length headers ('\(Self.printable(first, 20))' and '\(Self.printable(other, 20))')"))
            }
        }
        return .success(HTTPResponse(status: status, headers: headers, body: body, isComplete: !overflowed))
    }

    package func close() {
        curl.pointee.easy_cleanup(easy)
        curl.pointee.slist_free_all(headers)
        curl.pointee.slist_free_all(resolves)
        free(device)
        device = nil
        headers = nil
        resolves = nil
    }

    /// At most `limit` characters of `text`, each that is not printable ASCII a space: what a
    /// peer chose, fit for a journal line.
    package static func printable(_ text: String, _ limit: Int) -> String {
        String(text.prefix(limit).map { $0.isASCII && ($0.asciiValue ?? 0) >= 0x20 && $0 != "\u{7F}" ? $0 : " " })
    }

    /// libcurl's body callback: appends up to the bound; returning less than given aborts.
    private static let write: reachd_curl_write = { data, size, count, context in
        guard let data, let context else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        let (length, overflow) = size.multipliedReportingOverflow(by: count)
        guard !overflow else { return 0 }
        let room = transfer.maximumBody - transfer.body.count
        let kept = min(length, max(room, 0))
        data.withMemoryRebound(to: UInt8.self, capacity: kept) { transfer.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: kept)) }
        guard kept == length else {
            transfer.overflowed = true
            return 0
        }
        return length
    }
}
