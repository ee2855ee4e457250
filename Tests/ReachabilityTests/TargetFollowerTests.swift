import Testing
@testable import Reachability

/// The follower's own rules, on virtual time: checks are answered by the test, the timer is a
/// value the test fires.
@Suite struct TargetFollowerTests {
    /// A driver whose host checks wait for `answer(_:_:)` and whose clock moves only when told.
    final class Driver: TargetFollowerDriver {
        var now = ContinuousClock.now
        var started: [String] = []
        var pending: [(id: UInt64, name: String, done: (CheckResult?) -> Void)] = []
        var cancelled: [UInt64] = []
        var timer: ContinuousClock.Instant?
        var answers: [CheckResult] = []
        var addressFlags: ReachabilityFlags = [.reachable]
        private var nextID: UInt64 = 0

        func check(address: String) -> CheckResult { CheckResult(target: address, flags: addressFlags) }

        func startHostCheck(_ name: String, timeout: Duration, done: @escaping (CheckResult?) -> Void) -> UInt64 {
            nextID += 1
            started.append(name)
            pending.append((nextID, name, done))
            return nextID
        }

        func cancelHostCheck(_ id: UInt64) {
            cancelled.append(id)
            if let index = pending.firstIndex(where: { $0.id == id }) { pending.remove(at: index).done(nil) }
        }

        func scheduleTimer(at instant: ContinuousClock.Instant?) { timer = instant }

        func answered(_ target: String, _ result: CheckResult, previous: CheckResult) { answers.append(result) }

        /// Ends the oldest pending check of `name` with `reason` (nil: reachable).
        func answer(_ name: String, _ reason: Reason?) {
            let index = pending.firstIndex { $0.name == name }!
            let check = pending.remove(at: index)
            check.done(CheckResult(target: name, flags: reason == nil ? [.reachable] : [], reason: reason))
        }

        /// Moves the clock to the armed timer and fires it.
        func fire(_ follower: TargetFollower) -> Duration {
            let waited = now.duration(to: timer!)
            now = timer!
            timer = nil  // one-shot
            follower.timerFired()
            return waited
        }
    }

    static func settings(lookups: Int = 128, jitter: Double = 1) -> TargetFollower.Settings {
        var settings = TargetFollower.Settings(lookups: lookups, hostTimeout: .seconds(5))
        settings.random = { _ in jitter }
        return settings
    }

    @Test func manyFollowersOfANameShareOneLookupAndLaterOnesGetTheKnownAnswer() {
        let driver = Driver()
        let follower = TargetFollower(settings: Self.settings(), driver: driver)
        #expect(follower.follow("a.test") == nil)
        #expect(follower.follow("a.test") == nil, "no answer yet")
        #expect(driver.started == ["a.test"])
        driver.answer("a.test", nil)
        #expect(driver.answers.map(\.isReachable) == [true])
        #expect(follower.follow("a.test")?.isReachable == true)
        #expect(driver.started == ["a.test"])
        #expect(follower.count == 1)
        #expect(follower.follow("192.0.2.1")?.isReachable == true, "an address answers at once")
        #expect(driver.answers.count == 1, "...returned, not announced")
    }

    @Test func failedLookupsBackOffDoublingUpToTheLastRetryAndSuccessStartsAfresh() {
        let driver = Driver()
        let follower = TargetFollower(settings: Self.settings(), driver: driver)
        follower.follow("dead.test")
        var waits: [Duration] = []
        for _ in 0..<11 {
            driver.answer("dead.test", .dnsTimeout)
            waits.append(driver.fire(follower))
        }
        #expect(waits == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map { .seconds($0) })
        #expect(driver.started.count == 12)
        driver.answer("dead.test", nil)
        #expect(driver.timer == nil, "an answer stops the retries")
        // The next failure starts from the first delay again.
        follower.routingChanged()
        driver.answer("dead.test", .dnsFailure)
        #expect(driver.fire(follower) == .seconds(1))
    }

    @Test func jitterShiftsEachDelayByUpToAFifthEitherWay() {
        for (jitter, expected) in [(0.8, Duration.milliseconds(800)), (1.2, .milliseconds(1200))] {
            let driver = Driver()
            let follower = TargetFollower(settings: Self.settings(jitter: jitter), driver: driver)
            follower.follow("dead.test")
            driver.answer("dead.test", .dnsTimeout)
            #expect(driver.fire(follower) == expected)
        }
        #expect(TargetFollower.Settings(lookups: 2, hostTimeout: .seconds(1)).jittered(.seconds(10)) >= .seconds(8))
        #expect(TargetFollower.Settings(lookups: 2, hostTimeout: .seconds(1)).jittered(.seconds(10)) <= .seconds(12))
    }

    @Test func atMostHalfTheLookupsRunAndTheRestWaitInLineOldestFirst() {
        let driver = Driver()
        let follower = TargetFollower(settings: Self.settings(lookups: 4), driver: driver)
        for name in ["a", "b", "c", "d", "e"] { follower.follow("\(name).test") }
        #expect(driver.started == ["a.test", "b.test"])
        #expect(follower.checksInFlight == 2)
        driver.answer("b.test", nil)
        #expect(driver.started == ["a.test", "b.test", "c.test"])
        follower.unfollow("d.test")
        driver.answer("a.test", nil)
        #expect(driver.started == ["a.test", "b.test", "c.test", "e.test"], "an unfollowed name is skipped")
    }

    @Test func namesWaitingLongerThanADeadlineAreAnsweredTimeoutWhenDNSTimesOut() {
        let driver = Driver()
        let follower = TargetFollower(settings: Self.settings(lookups: 2), driver: driver)
        follower.follow("a.test")
        follower.follow("b.test")
        driver.now += .seconds(6)
        driver.answer("a.test", .dnsTimeout)
        #expect(driver.answers.map(\.target) == ["a.test", "b.test"])
        #expect(driver.answers.last?.reason == .dnsTimeout)
        #expect(driver.started == ["a.test", "b.test"], "b.test is still asked in turn")
    }

    /// 2,000 names in line behind a dead server are all overdue when the first lookup times out:
    /// answered a batch per turn of the loop, the rest on the timer armed for now, so no one turn
    /// sends 2,000 signals.
    @Test func manyOverdueNamesAreAnsweredABatchPerTurn() {
        let driver = Driver()
        let follower = TargetFollower(settings: Self.settings(lookups: 4), driver: driver)
        for index in 0..<2_000 { follower.follow("w\(index).test") }
        #expect(driver.started == ["w0.test", "w1.test"])
        driver.now += .seconds(6)
        driver.answer("w0.test", .dnsTimeout)
        var perTurn = [driver.answers.count]
        while let timer = driver.timer, timer <= driver.now {
            let before = driver.answers.count
            _ = driver.fire(follower)
            perTurn.append(driver.answers.count - before)
        }
        #expect(perTurn.max()! <= TargetFollower.batch + 1, "\(perTurn)")
        // w0 answered by its own lookup; w1 is in flight; every other name in line answered.
        #expect(Set(driver.answers.map(\.target)).count == 1_999)
        #expect(driver.answers.dropFirst().allSatisfy { $0.reason == .dnsTimeout })
        #expect(driver.timer.map { $0 > driver.now } ?? true, "nothing left for now: the timer is for the retry")
    }

    /// A routing change with thousands of targets looks at a batch per turn.
    @Test func aRoutingChangeWithManyTargetsLooksAtABatchPerTurn() {
        let driver = Driver()
        let follower = TargetFollower(settings: Self.settings(), driver: driver)
        for index in 0..<2_000 { follower.follow("10.\(index / 250).\(index % 250).1") }
        driver.addressFlags = []
        follower.routingChanged()
        #expect(driver.answers.count == TargetFollower.batch)
        #expect(driver.timer == driver.now)
        var turns = 1
        while driver.timer == driver.now {
            _ = driver.fire(follower)
            turns += 1
        }
        #expect(Set(driver.answers.map(\.target)).count == follower.count)
        #expect(turns == (follower.count + TargetFollower.batch - 1) / TargetFollower.batch)
    }

    @Test func aRoutingChangeAsksEveryTargetAgainAndOnceMoreAfterACheckInFlight() {
        let driver = Driver()
        let follower = TargetFollower(settings: Self.settings(), driver: driver)
        #expect(follower.follow("192.0.2.1")?.isReachable == true)
        follower.follow("a.test")
        follower.follow("b.test")
        driver.answer("b.test", .dnsTimeout)
        #expect(driver.timer != nil)
        driver.addressFlags = []
        follower.routingChanged()
        #expect(driver.answers.filter { $0.target == "192.0.2.1" }.map(\.isReachable) == [false])
        #expect(driver.started == ["a.test", "b.test", "b.test"], "b.test at once, its retry cancelled")
        #expect(driver.timer == nil)
        driver.answer("b.test", nil)
        follower.routingChanged()
        follower.routingChanged()
        driver.answer("a.test", nil)
        #expect(driver.started == ["a.test", "b.test", "b.test", "b.test", "a.test"], "a.test once more, not once per change")
        driver.answer("a.test", nil)
        driver.answer("b.test", nil)
        #expect(driver.started.count == 6, "b.test once more: the second change came while it was asked")
        driver.answer("b.test", nil)
        #expect(driver.pending.isEmpty)
    }

    @Test func theLastUnfollowCancelsTheCheckAndTheRetry() {
        let driver = Driver()
        let follower = TargetFollower(settings: Self.settings(), driver: driver)
        follower.follow("a.test")
        follower.follow("a.test")
        follower.unfollow("a.test")
        #expect(driver.cancelled.isEmpty)
        follower.unfollow("a.test")
        #expect(driver.cancelled == [1])
        #expect(follower.count == 0 && follower.checksInFlight == 0)
        #expect(driver.answers.isEmpty)
        follower.follow("b.test")
        driver.answer("b.test", .dnsTimeout)
        #expect(driver.timer != nil)
        follower.unfollow("b.test")
        #expect(driver.timer == nil)
    }
}
