// libFuzzer target: a duration as reachctl's --timeout and reachd.conf's DefaultTimeout= and
// NegativeCacheTime= take it (`DurationText.parse`), and `DurationText.format`, which writes
// durations back into `reachd --check-config` output.
//
// Oracles besides "no crash": an accepted duration lies in 0...24 h, and `format` of it parses
// back to the same value; `format` of any duration in that range, to the nanosecond, does too.
@testable import Reachability

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDuration(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: data, count: size)
    let text = String(decoding: raw, as: UTF8.self)
    do {
        let value = try DurationText.parse(text)
        require(value >= .zero && value <= DurationText.maximum, "\(text.debugDescription) parsed to \(value)")
        roundTrip(value, from: text.debugDescription)
    } catch {
        require(containsBytes(error.description, text), "the message does not name the text")
    }
    // The configuration's own bounds and messages.
    _ = try? ValueProblem.duration(text, in: Configuration.defaultTimeoutRange)
    _ = try? ValueProblem.duration(text, in: Configuration.negativeCacheTimeRange)

    // The same bytes as a duration's components, for `format` alone.
    if size >= 16 {
        let seconds = raw.loadUnaligned(fromByteOffset: 0, as: Int64.self)
        let attoseconds = raw.loadUnaligned(fromByteOffset: 8, as: Int64.self)
        let duration = Duration(secondsComponent: seconds, attosecondsComponent: attoseconds)
        let text = DurationText.format(duration)
        // `format` truncates to the nanosecond; within parse's range it must read back as that.
        let truncated = Duration(attoseconds: duration.attoseconds / 1_000_000_000 * 1_000_000_000)
        if truncated >= .zero, truncated <= DurationText.maximum {
            let back = try? DurationText.parse(text)
            require(back == truncated, "format(\(duration)) is \(text.debugDescription), which parses to \(String(describing: back))")
        }
    }
    return 0
}

private func roundTrip(_ value: Duration, from origin: String) {
    let text = DurationText.format(value)
    let back = try? DurationText.parse(text)
    require(back == value, "\(origin) parsed to \(value), formatted as \(text.debugDescription), which parses to \(String(describing: back))")
}
