import Testing
@testable import Reachability

/// Every follower hears the core's updates in the order they happened, and sees exactly the
/// state its update describes, even when one follower records a verdict while it is being told
/// of a change (reachd's probe follower does: a probe that fails at once as the path goes
/// offline records its verdict from inside the update). The verdict waits, unapplied, until the
/// update reached every follower, and comes in the next.
@Suite(rootOnly)
struct CoreOrderTests {
    @Test func aVerdictRecordedDuringAnUpdateReachesEveryFollowerAfterIt() async throws {
        let ns = try TestNamespace()
        try ns.ip("link add co0 type veth peer name co0p")
        try ns.ip("addr add 192.0.2.2/24 dev co0")
        try ns.ip("link set co0p up")
        try ns.ip("link set co0 up")
        let path = ns.path
        let setup = { @Sendable () throws -> Void in try ns.ip("route add default via 192.0.2.1") }
        let (first, second, mismatches, verdictSeen) = try await StallWatchTests.onThread { () -> ([UInt64], [UInt64], [String], Bool) in
            let loop = PollLoop(wakeup: try WakeUpPipe())
            var configuration = CoreConfiguration()
            configuration.namespacePath = path
            configuration.sysfsRoot = "/nonexistent-sysfs"
            let core = try ReachabilityCore(configuration: configuration, loop: loop)
            var heardByFirst: [UInt64] = []
            var heardBySecond: [UInt64] = []
            var mismatches: [String] = []
            var verdictSeen = false
            var recorded = false
            // The first follower records a verdict the moment it hears the host came online.
            core.follow { update in
                guard let change = update.change else { return }
                heardByFirst.append(change.generation)
                if !recorded, change.host.state == .online {
                    recorded = true
                    core.record(connectivity: ConnectivityStatus(verdict: .limited, detail: "probe refused"))
                }
            }
            // The second reads the state while it is told: it must be its update's, not the
            // verdict's the first handed in a moment ago.
            core.follow { update in
                if let change = update.change { heardBySecond.append(change.generation) }
                let (generation, connectivity) = core.shared.withState { ($0.generation, $0.host.connectivity) }
                if generation != update.generation || connectivity != update.host.connectivity {
                    mismatches.append("update \(update.generation) \(update.host.connectivity.verdict), state \(generation) \(connectivity.verdict)")
                }
                if update.host.connectivity.verdict == .limited { verdictSeen = true }
            }
            try setup()
            try StallWatchTests.run(loop, for: .milliseconds(500))
            return (heardByFirst, heardBySecond, mismatches, verdictSeen)
        }
        #expect(mismatches.isEmpty, "a follower saw a state newer than its update: \(mismatches)")
        #expect(verdictSeen, "the verdict handed in during an update came in a later one")
        #expect(second.count >= 2, "the route's change and the verdict's: \(second)")
        #expect(first == first.sorted(), "\(first)")
        #expect(second == second.sorted(), "the later update reached the second follower before the earlier one: \(second)")
        #expect(first == second)
    }
}
