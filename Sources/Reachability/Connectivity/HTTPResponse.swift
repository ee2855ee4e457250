/// The head and body of an HTTP/1.x response, read incrementally from untrusted bytes (whatever
/// a portal or a broken middlebox sends). Bounded: the head may be at most `maximumHead` bytes
/// and only the first `maximumBody` bytes of the body are kept; that is all a verdict needs.
package struct HTTPResponse: Sendable, Hashable {
    package var status: Int
    /// Header names lowercased, values trimmed; a repeated header keeps its first value.
    package var headers: [String: String]
    package var body: [UInt8]
    /// Whether the whole body arrived (Content-Length reached, or the server closed).
    package var isComplete: Bool

    package static let maximumHead = 16 * 1024
    package static let maximumBody = 4 * 1024

    package init(status: Int, headers: [String: String] = [:], body: [UInt8] = [], isComplete: Bool = true) {
        self.status = status
        self.headers = headers
        self.body = body
        self.isComplete = isComplete
    }
}

/// Why bytes are not an HTTP response.
package struct HTTPResponseError: Error, Hashable, Sendable, CustomStringConvertible {
    package var description: String
}

/// Accumulates a response as it arrives. `feed` returns the response once it can be judged:
/// the head is in and the body is complete, or `maximumBody` bytes of it are; `finish` at end of
/// stream returns what came. A malformed or oversized head is an error, never a crash.
package struct HTTPResponseReader: Sendable {
    private var buffer: [UInt8] = []
    private var head: (status: Int, headers: [String: String], bodyStart: Int)?

    package init() {}

    package mutating func feed(_ bytes: some Collection<UInt8>) throws(HTTPResponseError) -> HTTPResponse? {
        buffer.append(contentsOf: bytes.prefix(HTTPResponse.maximumHead + HTTPResponse.maximumBody + 1 - buffer.count))
        if head == nil {
            // The head with its blank line is at most maximumHead bytes, however the bytes were
            // cut: one chunk holding a longer head is refused as a byte-by-byte stream is.
            let tooLong = HTTPResponseError(description: "the response head is longer than \(HTTPResponse.maximumHead) bytes")
            guard let end = Self.endOfHead(buffer) else {
                if buffer.count >= HTTPResponse.maximumHead { throw tooLong }
                return nil
            }
            guard end.bodyStart <= HTTPResponse.maximumHead else { throw tooLong }
            head = try Self.parseHead(buffer[..<end.headEnd], bodyStart: end.bodyStart)
        }
        return response(atEnd: false)
    }

    /// The peer closed the connection: what arrived is all there is.
    package mutating func finish() throws(HTTPResponseError) -> HTTPResponse {
        guard head != nil else {
            throw HTTPResponseError(description: buffer.isEmpty ? "the server closed the connection without answering" : "the connection closed in the middle of the response head")
        }
        return response(atEnd: true)!
    }

    private func response(atEnd: Bool) -> HTTPResponse? {
        guard let head else { return nil }
        let received = buffer.count - head.bodyStart
        // Digits only (parseHead checked): nil from Int means too large for it, so all that comes.
        let length = head.headers["content-length"].map { Int($0) ?? .max }
        // 204 and 304 have no body by definition (RFC 9110 6.4.1).
        let expected = head.status == 204 || head.status == 304 ? 0 : length
        let kept = Array(buffer[head.bodyStart...].prefix(HTTPResponse.maximumBody))
        if let expected, received >= min(expected, HTTPResponse.maximumBody) {
            return HTTPResponse(status: head.status, headers: head.headers, body: Array(kept.prefix(expected)), isComplete: received >= expected)
        }
        if received >= HTTPResponse.maximumBody { return HTTPResponse(status: head.status, headers: head.headers, body: kept, isComplete: false) }
        if atEnd { return HTTPResponse(status: head.status, headers: head.headers, body: kept, isComplete: expected == nil) }
        return nil
    }

    /// Where an HTTP head ends: the index of the newline before the blank line, and just past
    /// that blank line (CRLF CRLF, or bare LF LF as lenient peers send); nil while it has not
    /// come. Requests (`MetricsHTTP`) end the same way.
    package static func endOfHead(_ bytes: [UInt8]) -> (headEnd: Int, bodyStart: Int)? {
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == 0x0A {
                if bytes[index + 1] == 0x0A { return (index, index + 2) }
                if bytes[index + 1] == 0x0D, index + 2 < bytes.count, bytes[index + 2] == 0x0A { return (index, index + 3) }
            }
            index += 1
        }
        return nil
    }

    private static func parseHead(_ bytes: ArraySlice<UInt8>, bodyStart: Int) throws(HTTPResponseError) -> (status: Int, headers: [String: String], bodyStart: Int) {
        let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self)
        }
        guard let statusLine = lines.first else { throw HTTPResponseError(description: "an empty response head") }
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]), (100...599).contains(status) else {
            throw HTTPResponseError(description: "not an HTTP/1.x status line: '\(statusLine.prefix(80))'")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingASCIISpaces()
            // RFC 9112 6.3: Content-Length headers that disagree leave the body's end unknowable
            // (the classic smuggling shape); the answer is invalid, never "full".
            if name == "content-length", let first = headers[name], first != value {
                throw HTTPResponseError(description: "conflicting Content-Length headers ('\(first.prefix(20))' and '\(value.prefix(20))')")
            }
            if headers[name] == nil { headers[name] = value }
        }
        // RFC 9110 8.6: Content-Length is 1*DIGIT. Anything else (`-2`, `+5`, `5, 5`) makes the
        // framing unknowable (RFC 9112 6.3), and a negative length would cut the body before it
        // starts: the response is malformed.
        if let length = headers["content-length"],
            length.isEmpty || !length.utf8.allSatisfy({ UInt8(ascii: "0") <= $0 && $0 <= UInt8(ascii: "9") }) {
            throw HTTPResponseError(description: "invalid Content-Length '\(length.prefix(40))': not a number of bytes")
        }
        return (status, headers, bodyStart)
    }
}

extension StringProtocol {
    func trimmingASCIISpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
