import Testing
@testable import Reachability

/// A host check's addresses are routed once, as whoever asked: reachd's CheckHost as its caller,
/// its watches not at all until each user's view routes them (so none is routed twice). Counted
/// in the mirror's route lookups.
@Suite(rootOnly)
struct HostRoutingTests {
    @Test func anAnswerIsRoutedOnceAsTheCallerAsksAndNotAtAllWhenAskedNotTo() async throws {
        let ns = try TestNamespace()
        try ns.ip("link add hr0 type veth peer name hr0p")
        try ns.ip("addr add 192.0.2.2/24 dev hr0")
        try ns.ip("link set hr0p up")
        try ns.ip("link set hr0 up")
        try ns.ip("route add default via 192.0.2.1")
        let path = ns.path
        let counted = try await StallWatchTests.onThread { () -> [(Int, CheckResult?)] in
            let loop = PollLoop(wakeup: try WakeUpPipe())
            var configuration = CoreConfiguration()
            configuration.namespacePath = path
            configuration.sysfsRoot = "/nonexistent-sysfs"
            let core = try ReachabilityCore(configuration: configuration, loop: loop)
            var counted: [(Int, CheckResult?)] = []
            for routing in [HostRouting.asThisProcess, .asUser(65534), .none] {
                let before = core.shared.addressLookups
                let answer = UncheckedSendable(Box())
                // localhost answers at once (RFC 6761), with two addresses: no DNS server needed.
                core.checkHost("localhost", timeout: .seconds(1), owner: .system, routing: routing) { answer.value.result = try? $0.get() }
                counted.append((core.shared.addressLookups - before, answer.value.result))
            }
            return counted
        }
        #expect(counted.map(\.0) == [2, 2, 0], "one lookup per address as the caller, none when not routed")
        #expect(counted[0].1?.isReachable == true)
        // What routing as a user changes (its `ip rule`s) is PerCallerTests' part, through reachd.
        #expect(counted[2].1?.flags == [] && counted[2].1?.addresses.count == 2)
    }

    final class Box { var result: CheckResult? }
}
