import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// One HTTPS exchange with a captive-portal API through libcurl, on `PortalAPI`'s thread (it
/// blocks until the answer or `PortalAPI.timeout`). Every bound is set on the handle before
/// anything is sent; the body is kept only up to `PortalAPI.maximumBody` bytes, and the
/// transfer is aborted past it.
struct PortalExchange {
    /// libcurl's functions, loaded once for the process (`PortalAPI`).
    let curl: UnsafePointer<reachd_curl>
    let caFile: String?

    /// What the body callback writes into; `overflowed` once more than the limit came.
    private final class Body {
        var bytes: [UInt8] = []
        var overflowed = false
    }

    static let contentType = "application/captive+json"

    func ask(_ question: PortalQuestion) -> Result<PortalAPIReply, PortalAPIRefusal> {
        guard let easy = curl.pointee.easy_init() else { return .failure(PortalAPIRefusal("libcurl made no handle")) }
        defer { curl.pointee.easy_cleanup(easy) }
        let headers = curl.pointee.slist_append(nil, "Accept: " + Self.contentType)
        defer { curl.pointee.slist_free_all(headers) }
        let body = Body()
        let context = Unmanaged.passUnretained(body).toOpaque()
        let milliseconds = Int(PortalAPI.timeout.components.seconds * 1000)
        var failed = false
        func set(_ option: CURLoption, _ value: Int) { failed = failed || reachd_curl_setopt_long(curl, easy, option, value) != CURLE_OK }
        func set(_ option: CURLoption, _ text: String) {
            failed = failed || text.withCString { reachd_curl_setopt_pointer(curl, easy, option, $0) } != CURLE_OK
        }
        set(CURLOPT_URL, question.api)
        // "if!": the interface by name only (SO_BINDTODEVICE), never an address of another link.
        set(CURLOPT_INTERFACE, "if!" + question.interfaceName)
        set(CURLOPT_PROTOCOLS_STR, "https")
        set(CURLOPT_REDIR_PROTOCOLS_STR, "https")
        set(CURLOPT_FOLLOWLOCATION, 1)
        set(CURLOPT_MAXREDIRS, PortalAPI.maximumRedirects)
        set(CURLOPT_TIMEOUT_MS, milliseconds)
        set(CURLOPT_CONNECTTIMEOUT_MS, milliseconds)
        set(CURLOPT_NOSIGNAL, 1)
        // Past the timeout, a name lookup still running is left to end on its own: without this,
        // libcurl waits for it (glibc's resolver: 5 s per try, twice) and the next question with it.
        _ = reachd_curl_setopt_long(curl, easy, CURLOPT_QUICK_EXIT, 1)
        set(CURLOPT_MAXFILESIZE, PortalAPI.maximumBody)
        set(CURLOPT_NOPROXY, "*")
        set(CURLOPT_USERAGENT, "reachd")
        set(CURLOPT_SSL_VERIFYPEER, 1)
        set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile { set(CURLOPT_CAINFO, caFile) }
        failed = failed || reachd_curl_setopt_pointer(curl, easy, CURLOPT_HTTPHEADER, headers) != CURLE_OK
        failed = failed || reachd_curl_setopt_pointer(curl, easy, CURLOPT_WRITEDATA, context) != CURLE_OK
        failed = failed || reachd_curl_setopt_write(curl, easy, Self.write) != CURLE_OK
        guard !failed else { return .failure(PortalAPIRefusal("libcurl refused an option (too old a libcurl?)")) }
        let code = curl.pointee.easy_perform(easy)
        if body.overflowed || code == CURLE_FILESIZE_EXCEEDED { return .failure(PortalAPIRefusal("an answer longer than \(PortalAPI.maximumBody) bytes")) }
        guard code == CURLE_OK else { return .failure(PortalAPIRefusal(curl.pointee.easy_strerror(code).map { String(cString: $0) } ?? "libcurl error \(code.rawValue)")) }
        return check(easy, body.bytes)
    }

    /// Status 200 and the API's content type, then the body's members.
    private func check(_ easy: UnsafeMutableRawPointer, _ body: [UInt8]) -> Result<PortalAPIReply, PortalAPIRefusal> {
        var status = 0
        _ = reachd_curl_getinfo_long(curl, easy, CURLINFO_RESPONSE_CODE, &status)
        guard status == 200 else { return .failure(PortalAPIRefusal("HTTP status \(status), not 200")) }
        var type: UnsafeMutablePointer<CChar>?
        _ = reachd_curl_getinfo_string(curl, easy, CURLINFO_CONTENT_TYPE, &type)
        let mediaType = type.map { String(cString: $0) } ?? ""
        let essence = String(mediaType.prefix { $0 != ";" }).trimmingSpaces.lowercased()
        guard essence == Self.contentType else {
            return .failure(PortalAPIRefusal("Content-Type \(mediaType.inertExcerpt()), not \(Self.contentType)"))
        }
        return PortalAPIReply.parse(body)
    }

    /// libcurl's body callback: appends up to the limit; returning less than given aborts.
    private static let write: reachd_curl_write = { data, size, count, context in
        guard let data, let context else { return 0 }
        let body = Unmanaged<Body>.fromOpaque(context).takeUnretainedValue()
        let (length, overflow) = size.multipliedReportingOverflow(by: count)
        guard !overflow, body.bytes.count + length <= PortalAPI.maximumBody else {
            body.overflowed = true
            return 0
        }
        data.withMemoryRebound(to: UInt8.self, capacity: length) { body.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) }
        return length
    }
}

extension String {
    fileprivate var trimmingSpaces: Substring {
        let trimmed = drop { $0 == " " || $0 == "\t" }
        return trimmed.prefix(trimmed.count - (trimmed.reversed().prefix { $0 == " " || $0 == "\t" }.count))
    }
}
