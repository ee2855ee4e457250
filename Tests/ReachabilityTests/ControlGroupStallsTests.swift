import Testing
@testable import Reachability

/// The watched units' verdicts, pure: one control group's failing connections flag that group
/// and no other, whoever they run as; the host's verdict of the same sockets is the host
/// evaluator's (`StallEvaluatorTests`), told apart here only by the other traffic that flows.
@Suite struct ControlGroupStallsTests {
    typealias Stall = StallEvaluatorTests

    static func grouped(_ sample: TCPSocketSample, _ group: UInt64) -> TCPSocketSample {
        var sample = sample
        sample.controlGroup = group
        return sample
    }

    static func poll(_ groups: inout ControlGroupStalls, at seconds: Double, _ samples: [TCPSocketSample]) -> [UInt64: [LinkStall]] {
        groups.poll(at: .milliseconds(Int64(seconds * 1000)), samples: samples, addresses: Stall.addresses).verdicts
    }

    static func stalled(_ verdicts: [UInt64: [LinkStall]], _ group: UInt64) -> Bool {
        verdicts[group]?.contains(where: \.isStalled) ?? false
    }

    @Test func aGroupsFailingConnectionsFlagThatGroupWhileTheHostsOtherTrafficFlows() {
        var groups = ControlGroupStalls()
        groups.groups = [77, 88]
        var host = Stall.evaluator()
        // 77's two connections (a system account's, uid 100: one user to the host's rule)
        // fail; 88's and the host's own traffic flow.
        let healthy = [Self.grouped(Stall.socket(1, owner: 100), 77), Self.grouped(Stall.socket(2, owner: 100), 77),
                       Self.grouped(Stall.socket(3), 88), Stall.socket(4), Stall.socket(5)]
        let before = Self.poll(&groups, at: 100, healthy)
        _ = Stall.poll(&host, at: 100, healthy)
        #expect(!Self.stalled(before, 77) && before[77]?.first?.verdict == .flowing)
        let failing = [Self.grouped(Stall.socket(1, waiting: .seconds(12), received: .seconds(13), owner: 100), 77),
                       Self.grouped(Stall.socket(2, waiting: .seconds(12), received: .seconds(13), owner: 100), 77),
                       Self.grouped(Stall.socket(3), 88), Stall.socket(4), Stall.socket(5)]
        let after = Self.poll(&groups, at: 113, failing)
        #expect(Self.stalled(after, 77), "\(after)")
        #expect(after[77]?.first?.evidence.socketsFailing == 2 && after[77]?.first?.evidence.owners == 1)
        #expect(!Self.stalled(after, 88) && after[88]?.first?.verdict == .flowing)
        #expect(!Stall.poll(&host, at: 113, failing).link(Stall.wired).isStalled, "one user's failures never flag the host")

        // Root's own unit too: a unit as root is one owner in its group, the host's own
        // traffic beside it keeps the host clear.
        var rootGroups = ControlGroupStalls()
        rootGroups.groups = [77]
        var rootHost = Stall.evaluator()
        let rootHealthy = [Self.grouped(Stall.socket(1), 77), Self.grouped(Stall.socket(2), 77), Stall.socket(4)]
        _ = Self.poll(&rootGroups, at: 100, rootHealthy)
        _ = Stall.poll(&rootHost, at: 100, rootHealthy)
        let rootFailing = [Self.grouped(Stall.socket(1, waiting: .seconds(12), received: .seconds(13)), 77),
                           Self.grouped(Stall.socket(2, waiting: .seconds(12), received: .seconds(13)), 77), Stall.socket(4)]
        #expect(Self.stalled(Self.poll(&rootGroups, at: 113, rootFailing), 77))
        #expect(!Stall.poll(&rootHost, at: 113, rootFailing).link(Stall.wired).isStalled, "the host's other traffic received")
    }

    /// The host's verdict of the same sockets: a watched unit is one owner there, like a user,
    /// so a root service whose connections fail alone flags it (and the host not); two watched
    /// units failing with nothing else received flag the host as two users do.
    @Test func aWatchedUnitIsOneOwnerToTheHostsVerdict() {
        func host(separate: Set<UInt64>, _ failingGroups: [UInt64]) -> Bool {
            var host = Stall.evaluator()
            host.separateGroups = separate
            // Two sockets per group: cookies 2n+1 and 2n+2 (a loop: inferred, 7 s of type checking).
            var pairs: [(cookie: UInt64, group: UInt64)] = []
            for (offset, group) in failingGroups.enumerated() {
                let first = UInt64(2 * offset + 1)
                pairs += [(first, group), (first + 1, group)]
            }
            _ = Stall.poll(&host, at: 100, pairs.map { Self.grouped(Stall.socket($0.cookie), $0.group) })
            let failing = pairs.map { Self.grouped(Stall.socket($0.cookie, waiting: .seconds(12), received: .seconds(13)), $0.group) }
            return Stall.poll(&host, at: 113, failing).link(Stall.wired).isStalled
        }
        #expect(host(separate: [], [77]), "unwatched, root's failing connections are the host's")
        #expect(!host(separate: [77], [77]), "a watched root unit alone never flags the host")
        #expect(host(separate: [77, 88], [77, 88]), "two watched units failing, nothing else received")
    }

    @Test func onlyReceiptsClearAGroupAndAnUnwatchedGroupIsForgotten() {
        var groups = ControlGroupStalls()
        groups.groups = [77]
        _ = Self.poll(&groups, at: 100, [Self.grouped(Stall.socket(1), 77), Self.grouped(Stall.socket(2), 77)])
        let failing = [Self.grouped(Stall.socket(1, waiting: .seconds(12), received: .seconds(13)), 77),
                       Self.grouped(Stall.socket(2, waiting: .seconds(12), received: .seconds(13)), 77)]
        #expect(Self.stalled(Self.poll(&groups, at: 113, failing), 77))
        // One failing connection left (fewer than MinSockets): the verdict holds.
        #expect(Self.stalled(Self.poll(&groups, at: 115, [failing[0]]), 77), "a verdict that holds")
        // Another group's receipts say nothing of this one.
        let others = [Self.grouped(Stall.socket(9), 99), failing[0]]
        #expect(Self.stalled(Self.poll(&groups, at: 117, others), 77))
        // Its own receipt ends it.
        #expect(!Self.stalled(Self.poll(&groups, at: 119, [Self.grouped(Stall.socket(1, received: .milliseconds(100)), 77)]), 77))

        groups.groups = []
        #expect(Self.poll(&groups, at: 121, failing).isEmpty && groups.groups.isEmpty)
        groups.groups = [0]
        #expect(groups.groups.isEmpty, "0 is the kernel's 'no group': never judged")
    }

    @Test func aClosingSocketGoesToTheGroupThatSawIt() {
        var groups = ControlGroupStalls()
        groups.groups = [77]
        let open = Self.grouped(Stall.socket(1, waiting: .seconds(2), received: .seconds(3)), 77)
        _ = Self.poll(&groups, at: 100, [open])
        var closing = open
        closing.state = .closed
        closing.controlGroup = 0  // a destroy event names no group
        #expect(groups.closed(closing, at: .seconds(101)) == .failing)
        #expect(groups.closed(Stall.socket(5), at: .seconds(101)) == nil, "a socket no poll of a group saw")
    }
}
