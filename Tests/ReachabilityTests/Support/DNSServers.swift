import Foundation
import Testing
@testable import Reachability

/// Real DNS servers for resolver tests, inside a network namespace of the test's own: dnsmasq
/// answering from its command line, black holes that swallow queries, and a resolv.conf naming
/// them. Every test gets the whole 127.0.0.0/8 of its namespace, so addresses never collide
/// between tests running in parallel. Everything is stopped and removed on release.
final class DNSServers: @unchecked Sendable {
    let ns: TestNamespace
    /// A private directory for resolv.conf, pid and log files.
    let directory: String
    var resolvConfPath: String { directory + "/resolv.conf" }
    private var pidFiles: [String] = []
    private var blackHoles: [Int32] = []

    init(_ tag: String = #function) throws {
        ns = try TestNamespace(tag)
        var template = Array((FileManager.default.temporaryDirectory.path + "/reachd-dns-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp") }
        directory = String(cString: made)
    }

    deinit {
        for pidFile in pidFiles {
            guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
            else { continue }
            // SIGKILL, not SIGTERM: nothing a test starts may outlive it (when dnsmasq was
            // spawned with the test runner's signal mask, SIGTERM left every dnsmasq running).
            kill(pid, SIGKILL)
        }
        for fd in blackHoles { close(fd) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The standard test zone: `up.test` has A 192.0.2.10 and AAAA 2001:db8::10 with TTL 300,
    /// `v4only.test` only A 192.0.2.11, `txt.test` only a TXT record (no addresses: NODATA), and
    /// every other name under `.test` is NXDOMAIN. Names outside `.test` are REFUSED (no upstream).
    static let testZone = [
        "--local=/test/",
        "--address=/up.test/192.0.2.10", "--address=/up.test/2001:db8::10",
        "--address=/v4only.test/192.0.2.11",
        "--txt-record=txt.test,no addresses here",
        "--local-ttl=300",
    ]

    /// Starts dnsmasq on `address`:53 with `records` (dnsmasq options); returns its query log's path.
    /// dnsmasq's parent exits once the daemon listens, so it answers as soon as this returns.
    @discardableResult
    func dnsmasq(on address: String, _ records: [String] = testZone) throws -> String {
        let tag = address.replacingOccurrences(of: ".", with: "-")
        let pidFile = "\(directory)/dnsmasq-\(tag).pid"
        let log = "\(directory)/dnsmasq-\(tag).log"
        pidFiles.append(pidFile)
        try ns.exec(
            "/usr/sbin/dnsmasq",
            [
                "--conf-file=/dev/null", "--listen-address=\(address)", "--bind-interfaces", "--no-resolv",
                "--no-hosts", "--pid-file=\(pidFile)", "--user=root", "--group=root",
                "--log-queries", "--log-facility=\(log)",
            ] + records)
        return log
    }

    /// The queries dnsmasq logged so far (lines such as `query[A] up.test from 127.0.0.1`).
    func queries(inLog log: String) -> [String] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains(": query[") }.map {
            String($0[$0.range(of: "query[")!.lowerBound...])
        }
    }

    /// A UDP socket bound to `address`:53 that never reads: queries vanish without an answer or
    /// an ICMP error, the case that hangs resolvers (a closed port would fail at once instead).
    func blackHole(on address: String) throws {
        let fd = try NetworkNamespace.run(in: ns.path) { () -> Result<Int32, SystemError> in
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return .failure(SystemError("socket")) }
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_port = in_port_t(53).bigEndian
            inet_pton(AF_INET, address, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                let error = SystemError("bind \(address):53")
                close(fd)
                return .failure(error)
            }
            return .success(fd)
        }
        blackHoles.append(fd)
    }

    /// Writes the resolv.conf the resolver is pointed at (`Options.resolvConfPath`).
    func writeResolvConf(nameservers: [String], extra: [String] = []) throws {
        let text = (nameservers.map { "nameserver " + $0 } + extra).joined(separator: "\n") + "\n"
        // Written aside and renamed, as resolvconf and NetworkManager do: never half a file.
        let temporary = resolvConfPath + ".new"
        try text.write(toFile: temporary, atomically: false, encoding: .utf8)
        guard rename(temporary, resolvConfPath) == 0 else { throw SystemError("rename \(temporary)") }
    }

    /// Runs `body` on a fresh thread inside the namespace, so the sockets c-ares opens live there,
    /// and awaits it without holding one of Swift's cooperative threads.
    func onLoopThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let path = ns.path
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            do {
                try DedicatedThread.start {
                    let outcome: Result<T, any Error>
                    do {
                        outcome = try NetworkNamespace.run(in: path) { .success(Result { try body() }) }
                    } catch {
                        outcome = .failure(error)
                    }
                    continuation.resume(returning: outcome)
                }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try result.get()
    }
}

/// Plays the event loop for a resolver, as the monitor's poll thread or sd-event would: poll(2)
/// over `descriptors` until `nextDeadline`, then `process` what is ready and `processTimeouts`
/// when the deadline has come. Stops when `done` holds; throws when `limit` passes first.
func runLoop(
    _ resolver: HostResolver, limit: Duration = .seconds(10), until done: () -> Bool
) throws {
    let giveUp = ContinuousClock.now + limit
    while !done() {
        guard ContinuousClock.now < giveUp else { throw TimedOut(what: "the resolver to finish") }
        try loopIteration(resolver, wakeNoLaterThan: giveUp)
    }
}

/// Plays the loop for `duration`, whatever happens: gives stray completions a chance to show.
func runLoop(_ resolver: HostResolver, for duration: Duration) throws {
    let end = ContinuousClock.now + duration
    while ContinuousClock.now < end { try loopIteration(resolver, wakeNoLaterThan: end) }
}

/// One turn of the loop: wait for readiness or the next deadline (or `latest`), then dispatch.
private func loopIteration(_ resolver: HostResolver, wakeNoLaterThan latest: ContinuousClock.Instant) throws {
    let now = ContinuousClock.now
    let wake = min(resolver.nextDeadline ?? latest, latest)
    var descriptors = resolver.descriptors.map { descriptor in
        pollfd(
            fd: descriptor.fd,
            events: Int16((descriptor.readable ? POLLIN : 0) | (descriptor.writable ? POLLOUT : 0)),
            revents: 0)
    }
    let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds(from: now, to: wake))
    guard ready >= 0 || errno == EINTR else { throw SystemError("poll") }
    for descriptor in descriptors where descriptor.revents != 0 {
        let revents = Int32(descriptor.revents)
        resolver.process(
            fd: descriptor.fd, readable: revents & (POLLIN | POLLERR | POLLHUP) != 0,
            writable: revents & POLLOUT != 0)
    }
    if let deadline = resolver.nextDeadline, deadline <= .now { resolver.processTimeouts() }
}

/// A poll(2) timeout that never wakes before `wake`: rounded up to the next millisecond.
private func milliseconds(from now: ContinuousClock.Instant, to wake: ContinuousClock.Instant) -> Int32 {
    guard now < wake else { return 0 }
    let (seconds, attoseconds) = now.duration(to: wake).components
    let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int32(clamping: milliseconds)
}
