import Testing
@testable import Reachability

/// The core's stall watch on a real loop and a real namespace: it polls only while the host is
/// online (a baseline poll a second after it comes online), and forgets everything when it is not.
@Suite(rootOnly)
struct StallWatchTests {
    /// Runs `body` on a thread of its own (the loop blocks in poll(2), never on Swift's pool).
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            do {
                try DedicatedThread.start { continuation.resume(returning: Result { try body() }) }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try result.get()
    }

    /// Turns the loop for `duration` (a timer of its own bounds every wait).
    static func run(_ loop: PollLoop, for duration: Duration) throws {
        let end = ContinuousClock.now + duration
        let tick = try loop.addTimer(urgent: false) {}
        while ContinuousClock.now < end {
            tick.schedule(at: min(end, .now + .milliseconds(20)))
            _ = loop.runOnce { true }
        }
    }

    @Test func pollsOnlyWhileOnline() async throws {
        let ns = try TestNamespace()
        try ns.ip("link add sw0 type veth peer name sw0p")
        try ns.ip("addr add 192.0.2.2/24 dev sw0")
        try ns.ip("link set sw0p up")
        try ns.ip("link set sw0 up")
        let path = ns.path
        let (local, online, nextPoll, offline) = try await Self.onThread { () -> (Bool, Bool, Duration?, Bool) in
            let loop = PollLoop(wakeup: try WakeUpPipe())
            var configuration = CoreConfiguration()
            configuration.namespacePath = path
            configuration.sysfsRoot = "/nonexistent-sysfs"
            var settings = StallSettings()
            settings.pollInterval = .seconds(1)
            settings.maximumPollInterval = .seconds(8)
            configuration.stall = settings
            let core = try ReachabilityCore(configuration: configuration, loop: loop)
            // Local only (no default route): nothing is polled, however long.
            try Self.run(loop, for: .milliseconds(1500))
            let local = core.host.state == .local && core.stall.lastReport == nil
            // A default route: online, and a first poll once the burst has passed (not at
            // once: it would delay the events that follow); no TCP, so no next poll is planned.
            try ns.ip("route add default via 192.0.2.1")
            try Self.run(loop, for: .milliseconds(500))
            let notYet = core.host.state == .online && core.stall.lastReport == nil
            try Self.run(loop, for: .milliseconds(1000))
            let online = notYet && core.host.state == .online && core.stall.lastReport != nil
            let nextPoll = core.stall.lastReport?.nextPoll
            // The route gone: not online, the watch forgets its report and stops.
            try ns.ip("route del default")
            try Self.run(loop, for: .milliseconds(500))
            let offline = core.host.state != .online && core.stall.lastReport == nil && !core.host.stalled
            return (local, online, nextPoll, offline)
        }
        #expect(local, "a local host is not polled")
        #expect(online, "the baseline poll runs a second after the host is online, not before")
        #expect(online && nextPoll == nil, "nothing to judge: no timer until traffic shows")
        #expect(offline)
    }

    /// A reload that turns detection off forgets the verdicts and stops polling; on again, it
    /// starts with a baseline poll a second later.
    @Test func reconfiguringOffStopsAndOnStartsAgain() async throws {
        let ns = try TestNamespace()
        try ns.ip("link add so0 type veth peer name so0p")
        try ns.ip("addr add 192.0.2.2/24 dev so0")
        try ns.ip("link set so0p up")
        try ns.ip("link set so0 up")
        try ns.ip("route add default via 192.0.2.1")
        let path = ns.path
        let (on, off, again) = try await Self.onThread { () -> (Bool, Bool, Bool) in
            let loop = PollLoop(wakeup: try WakeUpPipe())
            var configuration = CoreConfiguration()
            configuration.namespacePath = path
            configuration.sysfsRoot = "/nonexistent-sysfs"
            let core = try ReachabilityCore(configuration: configuration, loop: loop)
            try Self.run(loop, for: .milliseconds(1500))
            let on = core.stall.lastReport != nil
            configuration.stall = nil
            core.reconfigure(configuration)
            try Self.run(loop, for: .milliseconds(500))
            let off = core.stall.lastReport == nil && !core.host.stalled
            configuration.stall = StallSettings()
            core.reconfigure(configuration)
            try Self.run(loop, for: .milliseconds(1500))
            return (on, off, core.stall.lastReport != nil)
        }
        #expect(on && off && again, "on \(on), off \(off), on again \(again)")
    }
}
