// libFuzzer target: the bytes an HTTP server, a captive portal or a middlebox sends back to
// the connectivity probe, read by `HTTPResponseReader` and judged by `ProbeExpectation`.
//
// These bytes come from the network, from whoever answers the probe's address. Oracles besides
// "no crash": the reader gives the same answer whether the bytes arrive at once, one at a time
// or in chunks of any size (a TCP stream can be cut anywhere); a kept body never exceeds
// `maximumBody`; and the judgement of a response is a pure function of it.
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
        }
    }
    return 0
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
