/// The HTTP side of `/metrics` (reachd-metrics.socket), pure: what a request head says and what
/// to answer. reachd feeds it the bytes a scraper sent, bounded by `maximumHead`, and writes
/// back the bytes it returns; one request per connection, then the connection is closed.
package enum MetricsHTTP {
    /// Prometheus sends about 300 bytes (method, path, Accept, User-Agent, scrape timeout);
    /// 8 KiB is room for any proxy's additions and still a bound on what a stranger costs.
    package static let maximumHead = 8 * 1024
    package static let path = "/metrics"

    /// What the bytes received so far amount to.
    package enum Request: Equatable, Sendable {
        /// The blank line that ends the head has not come yet.
        case incomplete
        case head(method: String, path: String)
        /// Not a request line (400), or a head over `maximumHead` (431).
        case refused(status: Int, reason: String)
    }

    package static func parse(_ bytes: [UInt8]) -> Request {
        guard let end = endOfHead(bytes) else {
            return bytes.count > maximumHead ? .refused(status: 431, reason: "request head over \(maximumHead) bytes") : .incomplete
        }
        guard end <= maximumHead else { return .refused(status: 431, reason: "request head over \(maximumHead) bytes") }
        let lineEnd = bytes[..<end].firstIndex(of: UInt8(ascii: "\n")) ?? end
        let line = String(decoding: bytes[..<lineEnd], as: UTF8.self).trimmingSuffix("\r")
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."), !parts[0].isEmpty, parts[1].hasPrefix("/") else {
            return .refused(status: 400, reason: "not an HTTP/1.x request line")
        }
        // A query (`?name[]=...`) selects nothing here: every scrape gets everything.
        let path = parts[1].prefix { $0 != "?" }
        return .head(method: String(parts[0]), path: String(path))
    }

    /// Just past the blank line that ends an HTTP head (CRLF CRLF, or bare LF LF as lenient
    /// peers send); nil while it has not come.
    static func endOfHead(_ bytes: [UInt8]) -> Int? {
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == 0x0A {
                if bytes[index + 1] == 0x0A { return index + 2 }
                if bytes[index + 1] == 0x0D, index + 2 < bytes.count, bytes[index + 2] == 0x0A { return index + 3 }
            }
            index += 1
        }
        return nil
    }

    /// The full answer to `request` (`exposition` is only asked for a scrape).
    package static func response(to request: Request, exposition: () -> String) -> [UInt8] {
        switch request {
        case .incomplete:
            return answer(400, "Bad Request", "the request ended before its head did\n")
        case let .refused(status, reason):
            return answer(status, status == 431 ? "Request Header Fields Too Large" : "Bad Request", reason + "\n")
        case let .head(method, path):
            guard method == "GET" || method == "HEAD" else {
                return answer(405, "Method Not Allowed", "only GET and HEAD\n", extra: "Allow: GET, HEAD\r\n")
            }
            guard path == Self.path else { return answer(404, "Not Found", "reachd serves only \(Self.path)\n") }
            return answer(200, "OK", exposition(), contentType: MetricsExposition.contentType, withBody: method == "GET")
        }
    }

    private static func answer(
        _ status: Int, _ phrase: String, _ body: String, contentType: String = "text/plain; charset=utf-8",
        extra: String = "", withBody: Bool = true
    ) -> [UInt8] {
        let bytes = Array(body.utf8)
        let head = "HTTP/1.1 \(status) \(phrase)\r\nContent-Type: \(contentType)\r\nContent-Length: \(bytes.count)\r\n"
            + extra + "Connection: close\r\n\r\n"
        return Array(head.utf8) + (withBody ? bytes : [])
    }
}

private extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
