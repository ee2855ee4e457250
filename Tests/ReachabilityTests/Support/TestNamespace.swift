import Foundation
import Synchronization
import Testing
@testable import Reachability

/// Kernel tests need root (namespaces, veth). Without it they are skipped, and say so.
let isRoot = getuid() == 0
let rootOnly = Testing.ConditionTrait.enabled(
    if: isRoot, "needs root to create network namespaces: run scripts/test as root (CI does)")

private let namespaceCounter = Atomic<Int>(0)

/// A private network namespace for one test: its own links, addresses and routes, so tests run
/// in parallel without seeing each other. Removed when the value is released.
final class TestNamespace: @unchecked Sendable {
    let name: String
    var path: String { "/run/netns/" + name }

    init(_ tag: String = #function) throws {
        let clean = tag.filter { $0.isLetter || $0.isNumber }.prefix(12)
        name = "rt-\(clean)-\(getpid())-\(namespaceCounter.add(1, ordering: .relaxed).newValue)"
        try run("/usr/sbin/ip", ["netns", "add", name])
        try ip("link set lo up")
    }

    deinit {
        _ = try? run("/usr/sbin/ip", ["netns", "del", name])
    }

    /// Runs `ip -n NAME <arguments>` (split on spaces), throwing with ip's own message on failure.
    @discardableResult
    func ip(_ arguments: String) throws -> String {
        try run("/usr/sbin/ip", ["-n", name] + arguments.split(separator: " ").map(String.init))
    }

    /// Waits until `link` has its carrier (LOWER_UP): a veth's carrier follows `link set up` of
    /// both ends asynchronously (the kernel's linkwatch), late on a loaded machine, and a check
    /// made before it says connectionRequired.
    func waitForCarrier(_ link: String, timeout: Duration = .seconds(5)) throws {
        let deadline = ContinuousClock.now + timeout
        while try !ip("link show \(link)").contains("LOWER_UP") {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "\(link)'s carrier") }
            usleep(5_000)
        }
    }

    /// Runs a program inside the namespace (`ip netns exec`).
    @discardableResult
    func exec(_ program: String, _ arguments: [String]) throws -> String {
        try run("/usr/sbin/ip", ["netns", "exec", name, program] + arguments)
    }

    /// A monitor on this namespace, with an empty fake sysfs unless one is given.
    func monitor(
        sysfsRoot: String = "/nonexistent-sysfs", rules: [InterfaceRule] = [], receiveBufferBytes: Int32 = 8 << 20,
        resolvConf: String? = nil
    ) throws -> ReachabilityMonitor {
        try ReachabilityMonitor(
            configuration: configuration(sysfsRoot: sysfsRoot, rules: rules, receiveBufferBytes: receiveBufferBytes, resolvConf: resolvConf))
    }

    /// The settings of `monitor(...)`: for a library front end that makes its own monitor on this
    /// namespace (`PathMonitor`'s in-process paths).
    func configuration(
        sysfsRoot: String = "/nonexistent-sysfs", rules: [InterfaceRule] = [], receiveBufferBytes: Int32 = 8 << 20,
        resolvConf: String? = nil
    ) -> CoreConfiguration {
        var configuration = CoreConfiguration()
        // No nameserver unless a test names one (the host's own would make supportsDNS its),
        // and then no inotify instance: a suite's dozens of monitors at once would use up root's.
        configuration.resolvConfPath = resolvConf ?? "/nonexistent-resolv.conf"
        configuration.followsResolvConf = resolvConf != nil
        configuration.namespacePath = path
        configuration.sysfsRoot = sysfsRoot
        configuration.rules = rules
        configuration.receiveBufferBytes = receiveBufferBytes
        return configuration
    }
}

struct CommandFailed: Error, CustomStringConvertible {
    var command: String
    var status: Int32
    var output: String
    var description: String { "\(command) exited \(status): \(output)" }
}

/// Runs a program to completion; stdout and stderr together, as it wrote them.
@discardableResult
func run(_ program: String, _ arguments: [String], environment: [String: String]? = nil) throws -> String {
    let child = try ChildProcess(program, arguments, environment: environment, errorsToOutput: true)
    let status = child.waitForExit(timeout: .seconds(1_000_000))!
    guard status == 0 else { throw CommandFailed(command: child.command, status: status, output: child.output) }
    return child.output
}

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Collects a monitor's updates so a test can wait for a condition and count changes.
final class UpdateRecorder: Sendable {
    private final class Log: Sendable {
        let changes = Mutex<[ReachabilityChange]>([])
    }
    private let recorded = Log()
    private let task: Task<Void, Never>
    let first: ReachabilitySnapshot

    init(_ monitor: ReachabilityMonitor) async {
        let stream = monitor.updates()
        let (firstStream, firstContinuation) = AsyncStream.makeStream(of: ReachabilitySnapshot.self)
        let recorded = self.recorded
        task = Task {
            for await update in stream {
                switch update {
                case let .snapshot(snapshot):
                    firstContinuation.yield(snapshot)
                    firstContinuation.finish()
                case let .change(change):
                    recorded.changes.withLock { $0.append(change) }
                }
            }
        }
        var iterator = firstStream.makeAsyncIterator()
        first = await iterator.next()!
    }

    deinit { task.cancel() }

    var changes: [ReachabilityChange] { recorded.changes.withLock { $0 } }

    /// Waits until a change satisfies `condition` (checked against every change so far).
    @discardableResult
    func wait(
        for what: String, timeout: Duration = waitLimit, _ condition: (ReachabilityChange) -> Bool
    ) async throws -> ReachabilityChange {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let match = changes.last(where: condition) { return match }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw TimedOut(what: what)
    }
}

/// Polls the monitor's snapshot until `condition` holds.
@discardableResult
func eventually(
    _ monitor: ReachabilityMonitor, _ what: String, timeout: Duration = waitLimit,
    _ condition: (ReachabilitySnapshot) -> Bool
) async throws -> ReachabilitySnapshot {
    var snapshot = monitor.snapshot
    try await eventually(what, timeout: timeout, every: .milliseconds(2)) {
        snapshot = monitor.snapshot
        return condition(snapshot)
    }
    return snapshot
}

extension ReachabilitySnapshot {
    func interface(_ name: String) -> InterfaceStatus? { interfaces.first { $0.name == name } }
}

/// Checks that what a long-running monitor derived converges on what a fresh dump derives: the
/// mirror followed every change the kernel made, including the ones it makes silently. (Converges,
/// because the kernel may still be finishing asynchronous work such as IPv6 link-local set-up.)
func expectMatchesFreshDump(
    _ monitor: ReachabilityMonitor, _ ns: TestNamespace, rules: [InterfaceRule] = [],
    timeout: Duration = waitLimit, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let deadline = ContinuousClock.now + timeout
    var fresh = try ns.monitor(rules: rules).snapshot
    var live = monitor.snapshot
    while live.host != fresh.host || live.interfaces != fresh.interfaces, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
        fresh = try ns.monitor(rules: rules).snapshot
        live = monitor.snapshot
    }
    #expect(live.host == fresh.host, sourceLocation: sourceLocation)
    let differing = Set(live.interfaces).symmetricDifference(fresh.interfaces).map(\.name)
    #expect(differing.isEmpty, "interfaces that differ from a fresh dump: \(differing)", sourceLocation: sourceLocation)
}

/// Holds a tun device open inside a namespace, as a running VPN client does: only then does
/// it have carrier. Closes it when released.
final class TunHolder: Sendable {
    let fd: Int32

    init(name: String, in ns: TestNamespace) throws {
        fd = try NetworkNamespace.run(in: ns.path) { () -> Result<Int32, SystemError> in
            let fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { return .failure(SystemError("open /dev/net/tun")) }
            // struct ifreq: char ifr_name[16]; short ifr_flags; padding to 40 bytes.
            var request = [UInt8](repeating: 0, count: 40)
            for (i, byte) in name.utf8.prefix(15).enumerated() { request[i] = byte }
            let flags: UInt16 = 0x0001 | 0x1000  // IFF_TUN | IFF_NO_PI
            request[16] = UInt8(flags & 0xFF)
            request[17] = UInt8(flags >> 8)
            let tunSetInterface: UInt = 0x4004_54CA  // TUNSETIFF
            let result = request.withUnsafeMutableBytes { ioctl(fd, tunSetInterface, $0.baseAddress!) }
            guard result == 0 else {
                close(fd)
                return .failure(SystemError("TUNSETIFF \(name)"))
            }
            return .success(fd)
        }
    }

    deinit { close(fd) }
}

/// How long a test waits for something that should happen (a kernel event, a line of output)
/// before calling it lost. Generous on purpose: it bounds only failures, and on a loaded 2-core
/// machine the kernel's rtnl lock can hold linkwatch events back for seconds while a hundred
/// parallel tests create and delete namespaces (a bridge's carrier, which goes through linkwatch,
/// was seen to need more than 20 s in full CI runs, while the same test alone takes a second).
/// Latency is measured by reachbench, not here.
let waitLimit: Duration = .seconds(60)
