import Testing
@testable import Reachability

@Suite("Duration text")
struct DurationTextTests {
    @Test(
        "accepted forms parse exactly",
        arguments: [
            ("500ms", Duration.milliseconds(500)),
            ("2s", .seconds(2)),
            ("1m", .seconds(60)),
            ("1.5s", .milliseconds(1500)),
            ("30", .seconds(30)),
            ("0.25", .milliseconds(250)),
            ("0", .zero),
            ("0ms", .zero),
            ("1.5m", .seconds(90)),
            ("0.5ms", .microseconds(500)),
            ("007s", .seconds(7)),
            ("0.000000001s", .nanoseconds(1)),
            ("1.9999999999999999999s", .nanoseconds(1_999_999_999)),
            ("1440m", .seconds(86_400)),
            ("86400", .seconds(86_400)),
            ("86400000ms", .seconds(86_400)),
            // systemd's time spans, as its unit files take them.
            ("1h", .seconds(3600)),
            ("2min", .seconds(120)),
            ("1h 30min", .seconds(5400)),
            ("1h30min", .seconds(5400)),
            ("1min 30", .seconds(90)),
            ("2 s", .seconds(2)),
            (" 2s ", .seconds(2)),
            ("2sec", .seconds(2)),
            ("1.5h", .seconds(5400)),
            ("250us", .microseconds(250)),
            ("250µs", .microseconds(250)),
            ("5msec", .milliseconds(5)),
            ("3 seconds", .seconds(3)),
            ("2 hours\t10 minutes", .seconds(7800)),
            ("1d", .seconds(86_400)),
            ("23h 59min 60s", .seconds(86_400)),
        ])
    func accepted(text: String, expected: Duration) throws {
        #expect(try DurationText.parse(text) == expected)
    }

    @Test(
        "malformed text is rejected",
        arguments: ["2x", "s", "ms", "1.", ".5", "1.5.2s", "1e3", "+2s", "2S", "1 hour30x", "١s", "0x10", "1h -5min", "5 apples", "1h,30min"])
    func malformed(text: String) {
        #expect(throws: DurationParseError(text: text, problem: .malformed)) { try DurationText.parse(text) }
    }

    @Test("empty text is rejected as empty", arguments: ["", " ", "\t"])
    func empty(text: String) {
        #expect(throws: DurationParseError(text: text, problem: .empty)) { try DurationText.parse(text) }
    }

    @Test("negative values are rejected as negative", arguments: ["-1s", "-0", "-500ms"])
    func negative(text: String) {
        #expect(throws: DurationParseError(text: text, problem: .negative)) { try DurationText.parse(text) }
    }

    @Test(
        "values above 24 hours or overflowing are rejected as too large",
        arguments: ["86400.000000001s", "1441m", "86401", "18446744073709551616s", String(repeating: "9", count: 400) + "ms", "24h 1s", "1w", "2d", "1y", "infinity"])
    func tooLarge(text: String) {
        #expect(throws: DurationParseError(text: text, problem: .tooLarge(DurationText.maximum))) { try DurationText.parse(text) }
    }

    @Test("the error message names the text, the problem and the accepted forms")
    func message() throws {
        let error = try #require(throws: DurationParseError.self) { try DurationText.parse("5x") }
        let text = error.description
        #expect(text.contains("'5x'"))
        #expect(text.contains("not a duration"))
        for form in ["500ms", "2s", "2min", "1h30s", "systemd time span", "bare number of seconds"] { #expect(text.contains(form), "\(form)") }

        let negative = try #require(throws: DurationParseError.self) { try DurationText.parse("-3s") }
        #expect(negative.description.contains("'-3s'"))
        #expect(negative.description.contains("negative"))

        let large = try #require(throws: DurationParseError.self) { try DurationText.parse("90000s") }
        #expect(large.description.contains("'90000s'"))
        #expect(large.description.contains("24 hours"))

        let empty = try #require(throws: DurationParseError.self) { try DurationText.parse("") }
        #expect(empty.description.contains("''"))
        #expect(empty.description.contains("empty"))
    }

    @Test(
        "format writes the shortest form",
        arguments: [
            (Duration.zero, "0s"),
            (.milliseconds(500), "500ms"),
            (.seconds(2), "2s"),
            (.seconds(60), "1m"),
            (.seconds(90), "90s"),
            (.milliseconds(1500), "1.5s"),
            (.microseconds(250), "0.25ms"),
            (.nanoseconds(1), "0.000001ms"),
            (.nanoseconds(1_000_000_001), "1.000000001s"),
            (.seconds(86_400), "1440m"),
            (.milliseconds(-1500), "-1.5s"),
        ])
    func format(duration: Duration, expected: String) {
        #expect(DurationText.format(duration) == expected)
    }

    @Test("format and parse round-trip to the nanosecond")
    func roundTrip() throws {
        let samples: [Duration] = [
            .nanoseconds(1), .nanoseconds(999_999), .microseconds(1), .milliseconds(1), .milliseconds(999),
            .milliseconds(1001), .seconds(59), .seconds(61), .seconds(3600), .nanoseconds(86_399_999_999_999),
            .seconds(86_400),
        ]
        for sample in samples {
            #expect(try DurationText.parse(DurationText.format(sample)) == sample, "\(sample)")
        }
    }

    @Test func unitsRoundAsTheirCallersNeed() {
        let value: Duration = .microseconds(1_500_250)
        #expect(value.wholeMicroseconds == 1_500_250 && value.wholeMilliseconds == 1500)
        #expect(value.millisecondsRoundedUp == 1501 && Duration.milliseconds(2).millisecondsRoundedUp == 2)
        #expect(value.secondsRoundedUp == 2 && Duration.seconds(3).secondsRoundedUp == 3)
        #expect(abs(value.inSeconds - 1.50025) < 1e-12)
        #expect(Duration.milliseconds(-3).millisecondsRoundedUp == 0 && Duration.milliseconds(-3).unsignedMicroseconds == 0)
        #expect(Duration.milliseconds(-3).wholeMicroseconds == -3000)
        let soon = ContinuousClock.now + .seconds(2)
        let distance = Int64(soon.monotonicMicroseconds) - Int64(SystemClock.monotonicMicroseconds())
        #expect(abs(distance - 2_000_000) < 100_000, "\(distance)")
    }
}
