import Testing
@testable import Reachability
@testable import ReachabilityEngine

/// The core's gateway rechecks in virtual time: a loop whose one timer the test fires by hand,
/// and a send that records instead of sending (the real one is `GatewayClaimDaemonTests`'). The
/// first ask comes at once, then 1 s, 2 s, 4 s ... up to a minute after each failure; an ask
/// whose answer never comes is made again; a gateway that answers is dropped; a refused send is
/// said once.
@Suite struct GatewayRechecksTests {
    /// A loop with timers only, armed and fired by the test.
    final class HandLoop: EventLoopProtocol {
        final class Timer: LoopSource, DeferredSource {
            var due: ContinuousClock.Instant?
            func cancel() { due = nil }
            func setEvents(_ events: IOEvents) {}
            func schedule(at instant: ContinuousClock.Instant) { due = instant }
            func disable() { due = nil }
            func trigger() {}
        }
        var timers: [Timer] = []
        func addWatch(fd: Int32, events: IOEvents, _ handler: @escaping (IOEvents) -> Void) throws(SystemError) -> any LoopSource { Timer() }
        func addTimer(urgent: Bool, _ handler: @escaping () -> Void) throws(SystemError) -> any LoopSource {
            timers.append(Timer())
            return timers.last!
        }
        func addDeferred(_ handler: @escaping () -> Void) throws(SystemError) -> any DeferredSource { Timer() }
    }

    static let gateway = IPAddress("192.0.2.1")!

    static func failed(_ failures: Int, _ address: IPAddress = gateway) -> [GatewayToResolve] {
        [GatewayToResolve(interfaceIndex: 2, address: address, failures: failures)]
    }

    @Test func asksAtOnce_thenBacksOff_upToAMinute_andStopsWhenItAnswers() throws {
        let loop = HandLoop()
        var sent: [(IPAddress, Int32)] = []
        let rechecks = try GatewayRechecks(loop: loop, warn: { _ in }) { address, index in
            sent.append((address, index))
            return nil
        }
        let timer = try #require(loop.timers.first)
        let start = ContinuousClock.now
        #expect(timer.due == nil, "nothing failed: no timer")

        rechecks.follow(Self.failed(1), now: start)
        #expect(timer.due == start, "the first ask at once")
        rechecks.askDue(now: start)
        #expect(sent.count == 1 && sent[0].0 == Self.gateway && sent[0].1 == 2)
        // Its answer never came (a lost datagram): asked again after the back-off and the allowance.
        #expect(timer.due == start + .seconds(1) + GatewayRechecks.resolutionAllowance)
        // The same failure told again (a dump) changes no plan.
        rechecks.follow(Self.failed(1), now: start + .seconds(2))
        #expect(timer.due == start + .seconds(1) + GatewayRechecks.resolutionAllowance)

        // Each further failure: 1 s, 2 s, 4 s, ... after it.
        for (failures, wait) in [(2, 1), (3, 2), (4, 4), (5, 8), (8, 60), (40, 60)] {
            let at = start + .seconds(failures * 10)
            rechecks.follow(Self.failed(failures), now: at)
            #expect(timer.due == at + .seconds(wait), "after \(failures) failures")
            rechecks.askDue(now: at + .seconds(wait))
        }
        #expect(sent.count == 7 && rechecks.asked == 7)

        // It answers: nothing more is asked.
        rechecks.follow([], now: start + .seconds(500))
        #expect(timer.due == nil)
        rechecks.askDue(now: start + .seconds(1_000))
        #expect(sent.count == 7)
    }

    @Test func manyGateways_shareOneTimer_atTheEarliestPlan() throws {
        let loop = HandLoop()
        var sent = 0
        let rechecks = try GatewayRechecks(loop: loop, warn: { _ in }) { _, _ in
            sent += 1
            return nil
        }
        let start = ContinuousClock.now
        let gateways = (1...64).map { GatewayToResolve(interfaceIndex: 2, address: IPAddress("10.0.0.\($0)")!, failures: $0 % 3 + 2) }
        rechecks.follow(gateways, now: start)
        #expect(loop.timers.count == 1 && loop.timers[0].due == start + .seconds(1))
        rechecks.askDue(now: start + .seconds(1))
        #expect(sent == gateways.filter { $0.failures == 2 }.count, "only those due")
        rechecks.askDue(now: start + .seconds(4))
        #expect(sent == 64)
    }

    @Test func aRefusedSend_isSaidOnce_untilOneIsTakenAgain() throws {
        let loop = HandLoop()
        var warnings: [String] = []
        var refuse = true
        let rechecks = try GatewayRechecks(loop: loop, warn: { warnings.append($0) }) { _, _ in
            refuse ? SystemError("sendto", errno: 101) : nil
        }
        let start = ContinuousClock.now
        for failures in 1...5 {
            rechecks.follow(Self.failed(failures), now: start + .seconds(failures * 100))
            rechecks.askDue(now: start + .seconds(failures * 100 + 60))
        }
        #expect(warnings.count == 1 && warnings[0].contains("192.0.2.1"), "\(warnings)")
        refuse = false
        rechecks.follow(Self.failed(6), now: start + .seconds(700))
        rechecks.askDue(now: start + .seconds(760))
        refuse = true
        rechecks.follow(Self.failed(7), now: start + .seconds(800))
        rechecks.askDue(now: start + .seconds(860))
        #expect(warnings.count == 2)
    }
}
