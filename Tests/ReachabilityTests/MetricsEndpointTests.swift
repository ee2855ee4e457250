import Foundation
import Testing
@testable import Reachability

/// issue 13: /metrics through socket activation. The test plays systemd (a listening socket
/// passed as fd 3 with LISTEN_FDNAMES=metrics, as reachd-metrics.socket's
/// FileDescriptorName=metrics does), then scrapes it with a raw client, and with a real
/// Prometheus server beside node_exporter reading the textfile.
@Suite(rootOnly, .serialized)
struct MetricsEndpointTests {
    /// A TCP socket listening on 127.0.0.1 (an ephemeral port): what PID 1 makes of
    /// `ListenStream=127.0.0.1:9849`.
    static func listeningSocket() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0, "socket: errno \(errno)")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound && listen(fd, 64) == 0, "bind/listen: errno \(errno)")
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// A port nobody listens on now, for a server the test starts (Prometheus, node_exporter).
    static func freePort() throws -> UInt16 {
        let (fd, port) = try listeningSocket()
        close(fd)
        return port
    }

    /// A connected TCP socket to 127.0.0.1:`port`, reads bounded by `timeout`.
    static func connect(_ port: UInt16, timeout: Int = 10) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            let code = errno
            close(fd)
            throw SystemError("connect to 127.0.0.1:\(port)", errno: code)
        }
        return fd
    }

    /// Everything the server sends until it closes (nil when the read timed out first).
    static func readAll(_ fd: Int32) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { lastReadError = errno; return nil }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
        }
    }

    /// Sends `request` whole and returns the status line, the head and the body.
    static func exchange(_ port: UInt16, _ request: String) throws -> (status: String, head: String, body: String) {
        let fd = try connect(port)
        defer { close(fd) }
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw SystemError("send", errno: errno) }
            sent += count
        }
        let answer = String(decoding: try #require(readAll(fd), "no answer: errno \(lastReadError)"), as: UTF8.self)
        let parts = answer.components(separatedBy: "\r\n\r\n")
        let head = parts[0]
        return (head.components(separatedBy: "\r\n")[0], head, parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    static func get(_ port: UInt16, _ target: String, method: String = "GET") throws -> (status: String, head: String, body: String) {
        try exchange(port, "\(method) \(target) HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n")
    }

    /// reachd with the socket of reachd-metrics.socket; the caller owns scenario and harness.
    static func activated(_ scenario: DaemonBusTests.Scenario, _ harness: DaemonHarness) async throws -> (SocketActivationTests.ActivatedDaemon, UInt16) {
        let (fd, port) = try listeningSocket()
        let daemon = try SocketActivationTests.ActivatedDaemon(harness, scenario.ns, sockets: [fd], names: [MetricsEndpointTestsNames.metrics])
        close(fd)
        try await harness.ready()
        return (daemon, port)
    }

    @Test func scrapesAreAnsweredOtherRequestsRefusedAndConnectionsBounded() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let (daemon, port) = try await Self.activated(scenario, harness)
        defer { daemon.stop() }
        #expect(daemon.text.contains("metrics: serving /metrics on 1 socket(s) from reachd-metrics.socket"), "\(daemon.text)")

        let scrape = try Self.get(port, "/metrics")
        #expect(scrape.status == "HTTP/1.1 200 OK", "\(scrape.head)")
        #expect(scrape.head.contains("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), "\(scrape.head)")
        #expect(scrape.head.contains("\r\nContent-Length: \(scrape.body.utf8.count)\r\n"), "\(scrape.head)")
        #expect(MetricsDaemonTests.value(scrape.body, #"reachd_host_state{state="online"}"#) == 1, "\(scrape.body)")
        let check = try MetricsExpositionTests.promtoolCheckMetrics(scrape.body)
        #expect(check.status == 0, "\(check)")

        #expect(try Self.get(port, "/metrics?name[]=x").status == "HTTP/1.1 200 OK")
        let head = try Self.get(port, "/metrics", method: "HEAD")
        #expect(head.status == "HTTP/1.1 200 OK" && head.body.isEmpty, "\(head)")
        #expect(try Self.get(port, "/").status == "HTTP/1.1 404 Not Found")
        let post = try Self.get(port, "/metrics", method: "POST")
        #expect(post.status == "HTTP/1.1 405 Method Not Allowed" && post.head.contains("\r\nAllow: GET, HEAD\r\n"), "\(post.head)")
        let huge = try Self.exchange(port, "GET /metrics HTTP/1.1\r\nX-Filler: \(String(repeating: "a", count: 9000))\r\n\r\n")
        #expect(huge.status == "HTTP/1.1 431 Request Header Fields Too Large", "\(huge.head)")
        #expect(try Self.exchange(port, "HELLO\r\n\r\n").status == "HTTP/1.1 400 Bad Request")

        // Four scrapers that never send a request hold every slot: a fifth is closed unanswered...
        let idle = try (0..<MetricsEndpointTestsNames.maximumConnections).map { _ in try Self.connect(port) }
        try await Task.sleep(for: .milliseconds(200))
        let fifth = try Self.connect(port)
        let started = ContinuousClock.now
        #expect(Self.readAll(fifth) == [], "the fifth connection was not closed at once")
        close(fifth)
        #expect(ContinuousClock.now - started < .seconds(2))
        // ... and the idle ones are closed at the 5 s deadline, unanswered.
        for fd in idle {
            #expect(Self.readAll(fd) == [], "an idle connection outlived the deadline")
            close(fd)
        }
        #expect(ContinuousClock.now - started < .seconds(8))
        let after = try Self.get(port, "/metrics")
        #expect(try #require(MetricsDaemonTests.value(after.body, "reachd_metrics_scrapes_refused_total")) >= 1, "\(after.body)")
        // The loop never waited on any of it: the bus answered throughout.
        #expect(try ReachabilityClient(bus: .address(harness.address)).status().host.state == .online)
    }

    /// A socket named metrics that is not listening (a drop-in gone wrong) is closed by name,
    /// and reachd goes on.
    @Test func aMetricsDescriptorThatIsNotAListeningSocketIsRefused() async throws {
        let scenario = try DaemonBusTests.Scenario()
        let harness = try DaemonHarness(scenario.ns, start: false)
        defer { harness.shutdown() }
        let datagram = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let daemon = try SocketActivationTests.ActivatedDaemon(harness, scenario.ns, sockets: [datagram], names: ["metrics"])
        close(datagram)
        defer { daemon.stop() }
        try await harness.ready()
        #expect(daemon.text.contains("metrics: systemd passed file descriptor 3 named metrics, not a listening stream socket: closing it"), "\(daemon.text)")
    }
}

/// Values the tests share with reachd's MetricsEndpoint (reachd is an executable: not importable).
nonisolated(unsafe) var lastReadError: Int32 = 0

enum MetricsEndpointTestsNames {
    static let metrics = "metrics"
    static let maximumConnections = 4
}
