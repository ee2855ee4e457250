import Testing
@testable import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// The in-process monitor's loop: what sd-event gives reachd, on poll(2).
@Suite struct PollLoopTests {
    @Test func urgentTimersRunBeforeReadyWatchesAndOthersAfter() throws {
        let wakeup = try WakeUpPipe()
        let loop = PollLoop(wakeup: wakeup)
        let ready = try WakeUpPipe()
        ready.signal()
        var order: [String] = []
        let plain = try loop.addTimer(urgent: false) { order.append("timer") }
        let watch = try loop.addWatch(fd: ready.fd, events: .readable) { _ in
            order.append("watch")
            ready.drain()
        }
        let urgent = try loop.addTimer(urgent: true) { order.append("urgent") }
        plain.schedule(at: .now)
        urgent.schedule(at: .now)
        #expect(loop.runOnce { true })
        #expect(order == ["urgent", "watch", "timer"])
        withExtendedLifetime((plain, watch, urgent)) {}
    }

    @Test func cancelledAndReleasedSourcesNeverRun() throws {
        let wakeup = try WakeUpPipe()
        let loop = PollLoop(wakeup: wakeup)
        var fired: [String] = []
        let cancelled = try loop.addTimer(urgent: false) { fired.append("cancelled") }
        cancelled.schedule(at: .now)
        cancelled.cancel()
        try loop.addTimer(urgent: false) { fired.append("released") }.schedule(at: .now)
        let kept = try loop.addTimer(urgent: false) { fired.append("kept") }
        kept.schedule(at: .now + .milliseconds(20))
        #expect(loop.runOnce { true })
        #expect(fired == ["kept"], "waited for the one live timer, not for the others")
    }

    @Test func aWakeUpRunsWokenFirstAndFalseEndsTheTurn() throws {
        let wakeup = try WakeUpPipe()
        let loop = PollLoop(wakeup: wakeup)
        var fired = false
        let timer = try loop.addTimer(urgent: true) { fired = true }
        timer.schedule(at: .now)
        wakeup.signal()
        #expect(!loop.runOnce { false })
        #expect(!fired)
        wakeup.signal()
        #expect(loop.runOnce { true })
        #expect(fired)
    }
}
