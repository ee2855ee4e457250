import Testing
@testable import Reachability

extension OverrunTests {
    /// A start while the kernel holds its RTNL lock past a resync's deadline waits for its dump.
    /// A namespace of many veths torn down holds the lock for the whole teardown (10,000 pairs:
    /// 3 s here, past the shipped 2 s deadline), and reachd, reachctl or an in-process
    /// PathMonitor starting then failed with "rtnetlink dump timed out" (seen in fresh-clone CI
    /// runs, the main pass's namespaces going away). Here 1,500 pairs and a 20 ms deadline:
    /// starts follow one another until one took longer than that, and every one completes.
    @Test func aStartWhileTheKernelTearsDownANamespaceWaitsForItsDump() throws {
        let ns = try TestNamespace()
        try ns.ip("link add bk0 type veth peer name bk0p")
        var options = KernelSource.Options()
        options.namespacePath = ns.path
        options.sysfs = SysfsReader(root: "/nonexistent-sysfs")
        options.dumpTimeout = .milliseconds(20)

        var busy: TestNamespace? = try TestNamespace("busy")
        try Self.burst(busy!, pairs: 1500, prefix: "bb")
        busy = nil  // `ip netns del`: the kernel tears the 3,000 links down in its own time

        let clock = ContinuousClock()
        let until = clock.now + .seconds(10)
        var (starts, longest) = (0, Duration.zero)
        while longest <= options.dumpTimeout, clock.now < until {
            let began = clock.now
            let kernel = try HandDrivenKernel(options: options)
            try kernel.synchronize()
            longest = max(longest, clock.now - began)
            starts += 1
            #expect(kernel.state.interface(named: "bk0") != nil, "start \(starts) saw the namespace's link")
        }
        print("busy kernel: \(starts) start(s), the longest \(longest)")
        #expect(longest > options.dumpTimeout, "no start met the teardown in \(starts) tries: nothing was shown")
    }
}
