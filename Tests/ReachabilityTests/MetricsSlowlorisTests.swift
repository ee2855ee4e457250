import Foundation
import Testing
@testable import Reachability

/// issue 24: connections that have not sent a request never hold /metrics against a scraper
/// that has, and a head past its limit is not read to its end.
extension MetricsEndpointTests {
    /// Is `fd`'s peer gone (it closed, or reset)? Never waits.
    static func closedByPeer(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    @Test func aScraperIsAnsweredWithinASecondWhileIdleAndSlowConnectionsReconnect() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let (daemon, port) = try await Self.activated(scenario, harness)
        defer { daemon.stop() }

        // Attackers keep every slot taken: half send nothing, half one byte of a head now and
        // then, and each one reachd closes is replaced at once.
        var attackers: [Int32] = []
        defer { attackers.forEach { close($0) } }
        var worst: Duration = .zero
        for round in 0..<20 {
            attackers.removeAll { fd in
                guard Self.closedByPeer(fd) else { return false }
                close(fd)
                return true
            }
            while attackers.count < MetricsEndpointTestsNames.maximumConnections + 2 {
                attackers.append(try Self.connect(port, timeout: 1))
            }
            for (index, fd) in attackers.enumerated() where index % 2 == 1 {
                _ = send(fd, "G", 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            try await Task.sleep(for: .milliseconds(50))
            let started = ContinuousClock.now
            let scrape = try Self.get(port, "/metrics")
            let took = ContinuousClock.now - started
            worst = max(worst, took)
            #expect(scrape.status == "HTTP/1.1 200 OK", "round \(round): \(scrape.head)")
            #expect(took < .seconds(1), "round \(round): the scrape took \(took)")
        }
        print("metrics timing: 20 scrapes against 6 idle or slow connections, slowest \(worst)")
        let after = try Self.get(port, "/metrics")
        #expect(try #require(MetricsDaemonTests.value(after.body, #"reachd_metrics_connections_cut_off_total{reason="evicted"}"#)) >= 1, "idle ones made room")
        #expect(MetricsDaemonTests.value(after.body, "reachd_metrics_scrapes_refused_total") == 0, "no scraper was turned away")
    }

    @Test func aHeadPastTheLimitIsCutOffNotReadToItsEnd() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let (daemon, port) = try await Self.activated(scenario, harness)
        defer { daemon.stop() }

        let fd = try Self.connect(port, timeout: 2)
        defer { close(fd) }
        var sndtimeo = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sndtimeo, socklen_t(MemoryLayout<timeval>.size))
        let chunk = Array("GET /metrics HTTP/1.1\r\n".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 65536)
        var sent = 0
        let started = ContinuousClock.now
        var failure: Int32 = 0
        while sent < 8 << 20 {
            let count = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else {
                failure = errno
                break
            }
            sent += count
        }
        #expect(failure == ECONNRESET || failure == EPIPE, "reachd cut the sender off (errno \(failure)) after \(sent) bytes")
        #expect(sent < 8 << 20)
        #expect(ContinuousClock.now - started < .seconds(3))
        print("metrics: an 8 MB head was cut off after \(sent) bytes sent, \(ContinuousClock.now - started)")
        let after = try Self.get(port, "/metrics")
        #expect(after.status == "HTTP/1.1 200 OK")
        #expect(MetricsDaemonTests.value(after.body, #"reachd_metrics_connections_cut_off_total{reason="drain_limit"}"#) == 1, "\(after.body)")
    }

    /// Each way reachd ends a connection early is counted once per connection, by its reason:
    /// a newcomer refused while every slot answers, answers not taken within the deadline, an
    /// idle connection evicted for a newcomer, heads not sent within the head deadline.
    @Test func everyConnectionCutOffIsCountedByItsReason() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let (daemon, port) = try await Self.activated(scenario, harness)
        defer { daemon.stop() }
        var open: [Int32] = []
        defer { open.forEach { close($0) } }
        func value(_ text: String, _ reason: String) -> Double? {
            MetricsDaemonTests.value(text, "reachd_metrics_connections_cut_off_total{reason=\"\(reason)\"}")
        }

        // Four scrapers send their request and then neither read nor close: every slot answers.
        let request = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        for _ in 0..<MetricsEndpointTestsNames.maximumConnections {
            let fd = try Self.connect(port)
            open.append(fd)
            #expect(request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == request.count)
        }
        try await Task.sleep(for: .milliseconds(300))
        let newcomer = try Self.connect(port)
        open.append(newcomer)
        try await eventually("the newcomer is refused", timeout: .seconds(2), every: .milliseconds(20)) { Self.closedByPeer(newcomer) }
        // The four lingering closes end at the deadline (5 s after each was accepted).
        try await Task.sleep(for: MetricsEndpointTestsNames.deadline + .milliseconds(500))

        // Five connections that send nothing: the fifth evicts the oldest, the others run out
        // their head deadline.
        for _ in 0...MetricsEndpointTestsNames.maximumConnections { open.append(try Self.connect(port)) }
        try await Task.sleep(for: .milliseconds(2600))
        let text = try Self.get(port, "/metrics").body
        #expect(MetricsDaemonTests.value(text, "reachd_metrics_scrapes_refused_total") == 1, "\(text)")
        #expect(value(text, "deadline") == 4)
        #expect(value(text, "evicted") == 1)
        #expect(value(text, "head_deadline") == 4)
        #expect(value(text, "drain_limit") == 0)
    }
}
