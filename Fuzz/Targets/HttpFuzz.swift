// libFuzzer target: the bytes an HTTP server, a captive portal or a middlebox sends back to
// the connectivity probe, read by `HTTPResponseReader` and judged by `ProbeExpectation`.
//
// These bytes come from the network, from whoever answers the probe's address. Oracles besides
// "no crash": the reader gives the same answer whether the bytes arrive at once, one at a time
// or in chunks of any size (a TCP stream can be cut anywhere); a kept body never exceeds
// `maximumBody`; and the judgement of a response is a pure function of it. Since issue 24 the
// portal a judgement reports is inert: empty, or an http(s) URI of printable ASCII within
// `PortalLocation.maximumLength`, however hostile the Location header.
//
// The same bytes are also a request to reachd's /metrics (issue 13), read by `MetricsHTTP` as
// reachd reads a scraper's: growing by chunks, at most `maximumHead + 1` bytes in all, the first
// answer that is not "incomplete" taken. Oracle: that answer does not depend on the chunks
// either, and the reply to it is a well-formed status line with a Content-Length.
@testable import Reachability

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = read(bytes, chunk: max(bytes.count, 1))
    // The first byte picks a chunk size, so the fuzzer explores where the stream is cut.
    let chunk = Int(bytes.first ?? 1) % 64 + 1
    for other in [read(bytes, chunk: 1), read(bytes, chunk: chunk)] {
        require(other == whole, "the answer depends on how the bytes arrived: \(whole) at once, \(other) in pieces")
    }
    if case .success(let response) = whole {
        require(response.body.count <= HTTPResponse.maximumBody, "kept \(response.body.count) bytes of body")
        for expectation in [ProbeExpectation(), ProbeExpectation(status: 200, body: "success")] {
            require(expectation.judge(response) == expectation.judge(response), "a judgement is not a function of the response")
            let portal = expectation.judge(response, from: probeURL).portal
            let lower = portal.lowercased()
            require(
                portal.isEmpty || ((lower.hasPrefix("http://") || lower.hasPrefix("https://"))
                    && portal.utf8.count <= PortalLocation.maximumLength && portal.utf8.allSatisfy { 0x21...0x7E ~= $0 }),
                "a portal that is not inert: \(portal.debugDescription)")
        }
    }
    let request = metricsRequest(bytes, chunk: max(bytes.count, 1))
    for other in [metricsRequest(bytes, chunk: 1), metricsRequest(bytes, chunk: chunk)] {
        require(other == request, "the /metrics request depends on how the bytes arrived: \(request) at once, \(other) in pieces")
    }
    let reply = String(decoding: MetricsHTTP.response(to: request) { "m 1\n" }, as: UTF8.self)
    require(reply.hasPrefix("HTTP/1.1 ") && reply.contains("\r\nContent-Length: ") && reply.contains("\r\n\r\n"), "a malformed reply: \(reply)")
    return 0
}

/// A probe URL a relative Location resolves against.
private let probeURL = ProbeURL(host: "probe.example", port: 8080, path: "/dir/generate_204?x=1")

/// What reachd's MetricsEndpoint decides: parse after every read, stop at the first answer.
private func metricsRequest(_ bytes: [UInt8], chunk: Int) -> MetricsHTTP.Request {
    let limited = Array(bytes.prefix(MetricsHTTP.maximumHead + 1))
    var received: [UInt8] = []
    var offset = 0
    while offset < limited.count {
        let end = min(limited.count, offset + chunk)
        received += limited[offset..<end]
        offset = end
        let request = MetricsHTTP.parse(received)
        if request != .incomplete { return request }
    }
    return .incomplete
}

/// What HTTPExchange gets: feed as the bytes arrive, `finish` when the peer closes.
private func read(_ bytes: [UInt8], chunk: Int) -> Result<HTTPResponse, HTTPResponseError> {
    var reader = HTTPResponseReader()
    var offset = 0
    do throws(HTTPResponseError) {
        while offset < bytes.count {
            let end = min(bytes.count, offset + chunk)
            if let response = try reader.feed(bytes[offset..<end]) { return .success(response) }
            offset = end
        }
        return .success(try reader.finish())
    } catch {
        return .failure(error)
    }
}
