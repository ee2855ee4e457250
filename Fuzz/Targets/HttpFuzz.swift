// libFuzzer target: what a server, a captive portal or a middlebox answers the connectivity probe,
// as libcurl hands it over (a status, the Location and X-NetworkManager-Status headers, the start
// of a body), judged by `ProbeExpectation`. libcurl reads the bytes of the stream itself since
// the probe's exchange went to it (issue 45); what is left of reachd's own is the judgement.
//
// Oracles besides "no crash": the judgement of a response is a pure function of it, and the
// portal it reports is inert: empty, or an http(s) URI of printable ASCII within
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
    // The first byte picks a chunk size, so the fuzzer explores where the stream is cut.
    let chunk = Int(bytes.first ?? 1) % 64 + 1
    let response = answer(bytes)
    for expectation in [ProbeExpectation(), ProbeExpectation(status: 200, body: "success")] {
        require(expectation.judge(response) == expectation.judge(response), "a judgement is not a function of the response")
        let portal = expectation.judge(response, from: probeURL).portal
        let lower = portal.lowercased()
        require(
            portal.isEmpty || ((lower.hasPrefix("http://") || lower.hasPrefix("https://"))
                && portal.utf8.count <= PortalLocation.maximumLength && portal.utf8.allSatisfy { 0x21...0x7E ~= $0 }),
            "a portal that is not inert: \(portal.debugDescription)")
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

/// A response as libcurl hands it over, made of the bytes: two pick the status (100-599) and
/// the headers present, then up to a NUL the Location, then the body (cut where the probe cuts).
private func answer(_ bytes: [UInt8]) -> HTTPResponse {
    let status = 100 + (Int(bytes.first ?? 0) << 8 | Int(bytes.dropFirst().first ?? 0)) % 500
    let rest = bytes.dropFirst(2)
    let location = rest.prefix { $0 != 0 }
    let body = Array(rest.dropFirst(location.count + 1).prefix(ProbeExpectation.maximumBody))
    var headers: [String: String] = [:]
    if (bytes.first ?? 0) & 1 == 1 { headers["location"] = String(decoding: location, as: UTF8.self) }
    if (bytes.first ?? 0) & 2 == 2 { headers["x-networkmanager-status"] = String(decoding: location, as: UTF8.self) }
    return HTTPResponse(status: status, headers: headers, body: body, isComplete: body.count < ProbeExpectation.maximumBody)
}
