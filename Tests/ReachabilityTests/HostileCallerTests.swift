import Foundation
import Synchronization
import Testing
@testable import Reachability

/// issue 35: one unprivileged call must not hold reachd's loop. User nobody sends WatchPath with
/// the largest message the bus passes (32 MiB: ProhibitedKinds of 2.8 million strings, or one
/// kind name of 32 MiB), written as raw D-Bus bytes so no client library shapes it. It is
/// refused by name at the 33rd entry (or the 33rd byte), and meanwhile root's CheckAddress calls,
/// made back to back from another connection, keep being answered.
@Suite(rootOnly, .serialized, .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/setpriv"), "needs setpriv"))
struct HostileCallerTests {
    /// `ADDRESS MODE`: connects, authenticates (EXTERNAL), says Hello, then sends one WatchPath
    /// whose message is just under 32 MiB: MODE `kinds` fills ProhibitedKinds with "wifi"s,
    /// `name` makes RequiredKind one long string. Prints "sent MS" when the bytes are written
    /// and "answer MS ERROR-NAME MESSAGE" for the reply (milliseconds from the first byte).
    static let client = #"""
        import os, re, socket, struct, sys, time
        address, mode = sys.argv[1], sys.argv[2]
        limit = 32 * 1024 * 1024
        negotiate_fds = False
        """# + "\n" + RawDBusClient.preamble + "\n" + #"""
        # a{sv} with one entry: the array's length, padding to 8, the key, the variant's
        # signature, then its value aligned to 4 (both "as" and "s" start with a u32 length).
        room = limit - 400
        if mode == "property":
            # Properties.Get, whose two names sd-bus itself would read: a 32 MiB interface name.
            name = b"k" * (room - 48)
            body = struct.pack("<I", len(name)) + name + b"\0"
            body = string(body, "State")
            call = message(2, "org.reachd.Reachability1", "/org/reachd/Reachability1", "org.freedesktop.DBus.Properties", "Get", "ss", body)
        else:
            if mode == "kinds":
                key, variant = "ProhibitedKinds", "as"
                count = (room - 48) // 12
                array = ((struct.pack("<I", 4) + b"wifi\0\0\0\0") * count)[:-3]
                value = struct.pack("<I", len(array)) + array
            else:  # name, flood
                key, variant = "RequiredKind", "s"
                name = b"k" * (room - 48)
                value = struct.pack("<I", len(name)) + name + b"\0"
            entry = pad(signature(string(b"\0" * 8, key), variant), 4) + value
            body = struct.pack("<I", len(entry) - 8) + entry[4:]
            call = message(2, "org.reachd.Reachability1", "/org/reachd/Reachability1", "org.reachd.Reachability1", "WatchPath", "a{sv}", body)
        assert len(call) <= limit, len(call)
        # MODE flood: 16 of them back to back, each answer awaited only after all were sent.
        copies = 16 if mode == "flood" else 1
        call = bytearray(call)
        start = time.monotonic()
        for serial in range(2, 2 + copies):
            struct.pack_into("<I", call, 8, serial)
            sock.sendall(call)
        print("sent %.1f %d" % ((time.monotonic() - start) * 1000, len(call) * copies), flush=True)
        answers, names = [], {}
        while len(answers) < copies:
            kind, data = receive()
            if kind in (2, 3):
                name = re.search(rb"org\.[A-Za-z0-9.]+Error\.[A-Za-z]+", data)
                text = re.search(rb"(ProhibitedKinds|RequiredKind|interface)[^\0]*", data)
                key = name.group(0).decode() if name else "-"
                names[key] = names.get(key, 0) + 1
                answers.append("%s %s" % (key, text.group(0)[:300].decode(errors="replace") if text else "-"))
        first = next((a for a in answers if a.startswith("org.freedesktop.DBus.Error.InvalidArgs")), answers[0])
        print("answer %.1f %s; all: %s" % ((time.monotonic() - start) * 1000, first, names), flush=True)
        """#

    /// A probe run back to back on its own thread until stopped: when each run started (since
    /// `origin`) and how long it took.
    final class Prober: @unchecked Sendable {  // the samples behind a lock, the flag atomic
        private let samples = Mutex<[(start: Duration, took: Duration)]>([])
        private let stopped = Atomic<Bool>(false)
        private let finished = Atomic<Bool>(false)
        let origin: ContinuousClock.Instant

        /// `setUp` runs once on the thread; its value is what each `probe` uses.
        init<Context>(origin: ContinuousClock.Instant, setUp: @escaping @Sendable () -> Context?, probe: @escaping @Sendable (Context) -> Void) {
            self.origin = origin
            let box = UncheckedSendable((setUp, probe))
            Thread { [self] in
                defer { finished.store(true, ordering: .releasing) }
                guard let context = box.value.0() else { return }
                while !stopped.load(ordering: .acquiring) {
                    let start = ContinuousClock.now
                    box.value.1(context)
                    let took = ContinuousClock.now - start
                    samples.withLock { $0.append((start - origin, took)) }
                }
            }.start()
        }

        func stop() -> [(start: Duration, took: Duration)] {
            stopped.store(true, ordering: .releasing)
            while !finished.load(ordering: .acquiring) { usleep(1000) }
            return samples.withLock { $0 }
        }
    }

    /// What one prober saw while nobody's call was sent and refused.
    struct Overlap: CustomStringConvertible {
        let count: Int
        let worst: Duration
        let before: Duration
        /// How long each run during it took.
        let durations: [Duration]

        init(_ samples: [(start: Duration, took: Duration)], from began: Duration, to ended: Duration) {
            let during = samples.filter { $0.start + $0.took >= began && $0.start <= ended }
            count = during.count
            durations = during.map(\.took)
            worst = durations.max() ?? .zero
            before = samples.filter { $0.start < began }.map(\.took).max() ?? .zero
        }

        var description: String { "\(count) during it, slowest \(worst), before it \(before) at most" }
    }

    /// Sends nobody's `mode` call while two probers run: root's CheckAddress through the bus
    /// (what a caller feels, dbus-daemon's own work on the 32 MiB included) and a scrape of
    /// reachd's /metrics, which reachd's loop answers directly (the loop alone: how long the call
    /// held it). `interface`/`member`: the call, WatchPath on reachd's object by default.
    /// `peakGrowth`: a bound on how far reachd's peak resident memory may rise over what it was.
    /// `loopBound`: the longest reachd's loop may be held (the issue's 50 ms for one call).
    static func attack(
        _ mode: String, expecting fragment: String, peakGrowth: Int? = nil, loopBound: Duration = .milliseconds(50)
    ) async throws {
        let scenario = try DaemonBusTests.Scenario("hostile" + mode)
        let harness = try DaemonHarness(scenario.ns, start: false, anyUser: true)
        defer { withExtendedLifetime(scenario) { harness.shutdown() } }
        let (daemon, port) = try await MetricsEndpointTests.activated(scenario, harness)
        defer { daemon.stop() }
        let origin = ContinuousClock.now
        let address = harness.address
        let root = Prober(origin: origin, setUp: { try? BusConnection(.address(address), description: "prober") }) { bus in
            _ = try? DaemonHarness.call(bus, "CheckAddress") { message throws(BusError) in try message.append("127.0.0.1") }
        }
        let loop = Prober(origin: origin, setUp: { true }) { _ in _ = try? MetricsEndpointTests.get(port, "/metrics") }
        try await Task.sleep(for: .milliseconds(300))
        let resident = Self.memory(daemon.pid, "VmRSS")
        // Writing 5 resets the peak (VmHWM) to what is resident now.
        try "5".write(toFile: "/proc/\(daemon.pid)/clear_refs", atomically: false, encoding: .utf8)
        let began = ContinuousClock.now - origin
        let nobody = try ChildProcess("/usr/bin/setpriv", [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", client, harness.address, mode,
        ])
        let deadline = ContinuousClock.now + .seconds(60)
        while !nobody.lines.contains(where: { $0.hasPrefix("answer ") }) {
            guard ContinuousClock.now < deadline, nobody.isRunning || nobody.lines.contains(where: { $0.hasPrefix("answer ") }) else {
                _ = (root.stop(), loop.stop())
                throw TimedOut(what: "nobody's answer: \(nobody.lines) \(nobody.errorLines) \(daemon.text)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let ended = ContinuousClock.now - origin
        try await Task.sleep(for: .milliseconds(200))
        let calls = Overlap(root.stop(), from: began, to: ended)
        let scrapes = Overlap(loop.stop(), from: began, to: ended)
        let answer = try #require(nobody.lines.first { $0.hasPrefix("answer ") })
        #expect(answer.contains("org.freedesktop.DBus.Error.InvalidArgs") && answer.contains(fragment), "\(answer)")
        print("hostile \(mode): \(nobody.lines.joined(separator: "; ")); root's CheckAddress: \(calls); reachd's loop (/metrics): \(scrapes)")
        #expect(calls.count >= 3, "root's calls kept being answered: \(calls)")
        #expect(scrapes.count >= 3, "reachd's loop kept answering: \(scrapes)")
        // Through the bus, dbus-daemon's own reading of the 32 MiB counts too (BENCHMARKS.md has
        // its share); reachd's loop alone must stay within the issue's 50 ms.
        #expect(calls.worst < .seconds(1), "root waited \(calls.worst) while nobody's call was read")
        #expect(scrapes.worst < loopBound, "reachd's loop was held \(scrapes.worst) while nobody's call was read")
        if let peakGrowth {
            let grown = Self.memory(daemon.pid, "VmHWM") - resident
            print("hostile \(mode): reachd's peak resident memory rose \(grown >> 20) MiB")
            #expect(grown < peakGrowth, "reachd's peak resident memory rose \(grown) bytes")
        }
        #expect(kill(daemon.pid, 0) == 0, "reachd still runs")
        #expect(try DaemonBusTests.status(try harness.connect()) == DaemonBusTests.online)
    }

    /// A field of /proc/PID/status, in bytes.
    static func memory(_ pid: pid_t, _ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) << 10
    }

    /// Sixteen 32 MiB calls sent back to back, more than the two readers take at once: each is
    /// freed once refused, and the broker passes them one at a time, slower than a reader reads
    /// one, so reachd never holds more than a few of them.
    @Test func aFloodOf32MiBCallsWaitsInTheBrokerNotInReachd() async throws {
        // For 2.5 s both readers, dbus-daemon and the sender keep the two cores busy beside the
        // loop: its slowest scrape was 13-47 ms; one call's 50 ms is for one call.
        try await Self.attack(
            "flood", expecting: "RequiredKind is 33553984 bytes, at most 32: 'kkkk", peakGrowth: 128 << 20, loopBound: .milliseconds(100))
    }

    @Test func aWatchPathOf32MiBOfKindsIsRefusedAtThe33rdWhileTheLoopIsFree() async throws {
        try await Self.attack("kinds", expecting: "ProhibitedKinds has more than 32 entries")
    }

    @Test func aPropertiesGetWithA32MiBInterfaceNameIsRefusedWhileTheLoopIsFree() async throws {
        try await Self.attack("property", expecting: "interface is 33553984 bytes, at most 255: 'kkkk")
    }

    @Test func aWatchPathWithA32MiBKindNameIsRefusedWhileTheLoopIsFree() async throws {
        try await Self.attack("name", expecting: "RequiredKind is 33553984 bytes, at most 32: 'kkkk")
    }
}
