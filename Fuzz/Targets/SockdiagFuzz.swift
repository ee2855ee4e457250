// libFuzzer target: one NETLINK_SOCK_DIAG datagram, as TCPSocketDumper hands it to the decoder,
// and the sockets it yields on into the pure StallEvaluator.
//
// The bytes come from the kernel, but the decoder must turn any bytes into sockets or typed
// errors, never a trap. Oracles besides "no crash": decoding is a pure function; the collecting
// and the streaming entry points agree; and the evaluator, given the decoded sockets at two polls
// (the second with counters moved by the input's own bytes) and as closing sockets, keeps its
// promises: verdicts only for links that had evidence, `stalled` exactly when a cause is named,
// no more owners than failing sockets, and a next poll within the configured bounds.
@testable import Reachability

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSockdiag(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let datagram = UnsafeRawBufferPointer(start: data, count: size)
    let batch = SocketDiagDecoder.decode(datagram)
    let again = SocketDiagDecoder.decode(datagram)
    require(batch.messages == again.messages && batch.errors == again.errors, "decoding the same bytes twice gave different results")
    var streamed: [SocketDiagDecoded] = []
    var streamedErrors: [SocketDiagDecodingError] = []
    SocketDiagDecoder.decode(datagram) { header, result in
        switch result {
        case .success(let message): streamed.append(SocketDiagDecoded(header: header, message: message))
        case .failure(let error): streamedErrors.append(error)
        }
    }
    require(streamed == batch.messages && streamedErrors == batch.errors, "the streaming decoder disagrees with the batch")
    for error in batch.errors { require(!error.description.isEmpty, "an error without a description") }
    require((batch.messages.count + batch.errors.count) * 16 <= size + 16, "more messages than the bytes can hold")

    let samples = batch.messages.compactMap { decoded -> TCPSocketSample? in
        if case .socket(let sample) = decoded.message { return sample }
        return nil
    }
    // The first sources seen are the host's addresses, on links 1...4.
    var addresses: [Address] = []
    for sample in samples.prefix(4) {
        addresses.append(Address(interfaceIndex: Int32(addresses.count + 1), prefix: IPPrefix(sample.source, length: 0)))
    }
    var settings = StallSettings()
    let knob = size > 0 ? Int(data[0]) : 0
    settings.minimumSockets = knob % 4
    settings.window = .seconds(knob % 30)
    settings.dnsTimeouts = knob % 7
    settings.maximumPollInterval = .seconds(knob)
    var evaluator = StallEvaluator(settings: settings)
    let moved = samples.enumerated().map { index, sample -> TCPSocketSample in
        var sample = sample
        let step = UInt32(size > index ? data[index] : 0)
        if var counters = sample.counters {
            counters.segmentsOut &+= step
            counters.segmentsIn &+= step & 1 == 0 ? 0 : 1
            counters.totalRetransmits &+= step / 2
            counters.consecutiveTimeouts &+= UInt8(truncatingIfNeeded: step % 3)
            sample.counters = counters
        }
        return sample
    }
    let dns: [Int32: Int] = [1: knob % 9, 5: knob % 11]
    for (poll, current) in [samples, moved, moved, []].enumerated() {
        if poll == 3 {
            for sample in moved {
                var closing = sample
                closing.state = .closed
                closing.owner = nil
                _ = evaluator.closed(closing, at: .seconds(50))
            }
        }
        let report = evaluator.poll(at: .seconds(20 * poll), samples: current, addresses: addresses, dnsTimeouts: dns)
        require(report.links.map(\.interfaceIndex) == report.links.map(\.interfaceIndex).sorted(), "links out of order")
        for link in report.links {
            require(link.isStalled == !link.causes.isEmpty, "a verdict \(link.verdict) with causes \(link.causes)")
            require(link.evidence.owners <= link.evidence.socketsFailing, "more owners than failing sockets: \(link.evidence)")
            require(link.evidence.waiting >= .zero, "a negative wait: \(link.evidence)")
            require(
                link.evidence.socketsJudged > 0 || link.evidence.socketsFailing > 0 || link.evidence.dnsTimeouts > 0,
                "a verdict without evidence: \(link)")
        }
        if let next = report.nextPoll {
            let ceiling = max(settings.maximumPollInterval, settings.pollInterval)
            require(next >= min(settings.suspectInterval, settings.pollInterval) && next <= ceiling, "next poll \(next)")
        }
    }
    return 0
}
