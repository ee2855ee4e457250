#if canImport(Glibc)
import Glibc
#endif

/// A kernel event to a `reachctl monitor` line (issue 43), beside `ip monitor link` on the same
/// flaps: the whole path a user sees, kernel -> reachd -> dbus-daemon -> reachctl -> its stdout,
/// against the kernel -> ip -> stdout of the tool it is compared with. `--reachctl PATH` names
/// the reachctl, so that an older one can be measured on the same reachd; given more than once,
/// every one runs on the same flaps (a before and an after under the same load).
enum MonitorLineBench {
    static func measure(_ network: ServiceNetwork, address: String, reachctls: [String], flaps: Int, warmup: Int) throws -> [BusFlapPath] {
        let ip = try ChildProcess(
            network.client.ipTool, ["-n", network.client.name, "monitor", "link"], pipeOutput: true,
            logFile: network.file("ip-monitor-beside-reachctl.log"))
        defer { ip.stop() }
        let monitors = try reachctls.enumerated().map { index, reachctl in
            try ChildProcess(reachctl, ["monitor", "--bus-address", address], pipeOutput: true, logFile: network.file("reachctl-monitor-\(index).log"))
        }
        defer { for monitor in monitors { monitor.stop() } }
        var observers = [LineReader(fd: ip.output!)] + monitors.map { LineReader(fd: $0.output!) }
        // Each monitor's first line is its snapshot: from then on it follows the signals.
        let deadline = monotonicNanoseconds() + 10_000_000_000
        for (index, monitor) in monitors.enumerated() {
            while observers[index + 1].availableLines()?.isEmpty ?? true {
                guard monotonicNanoseconds() < deadline, monitor.isRunning else { throw BenchError("\(reachctls[index]) monitor printed no first line") }
                sleepMilliseconds(5)
            }
        }
        sleepMilliseconds(300)  // ip monitor subscribes
        // ip, then each reachctl; down then up
        var samples: [[UInt64]] = Array(repeating: [], count: 2 * observers.count)
        for flap in 0..<(warmup + flaps) {
            for goingUp in [false, true] {
                let times = try transition(network, up: goingUp, &observers)
                guard flap >= warmup else { continue }
                for (observer, time) in times.enumerated() { samples[observer * 2 + (goingUp ? 1 : 0)].append(time) }
            }
        }
        let lines = reachctls.count == 1 ? ["reachctl monitor line"] : reachctls.map { "reachctl monitor line (\($0))" }
        return (["ip monitor link (beside reachctl monitor)"] + lines).enumerated().map { index, name in
            BusFlapPath(
                path: name, down: Summary(samples[index * 2]), up: Summary(samples[index * 2 + 1]),
                all: Summary(samples[index * 2] + samples[index * 2 + 1]))
        }
    }

    /// Sets the uplink's peer `up` (or down) and stamps each observer's first line that says so.
    static func transition(_ network: ServiceNetwork, up: Bool, _ observers: inout [LineReader]) throws -> [UInt64] {
        for index in observers.indices { _ = observers[index].availableLines() }
        var times: [UInt64?] = Array(repeating: nil, count: observers.count)
        let start = monotonicNanoseconds()
        try network.flapper.setAdminState(index: network.peer, up: up)
        while times.contains(where: { $0 == nil }) {
            guard monotonicNanoseconds() - start < 3_000_000_000 else {
                throw BenchError("monitor line: no \(times[0] == nil ? "ip monitor" : "reachctl monitor") line within 3 s of up0s \(up ? "up" : "down")")
            }
            var fds = observers.indices.map { pollfd(fd: times[$0] == nil ? observers[$0].fd : -1, events: Int16(POLLIN), revents: 0) }
            _ = poll(&fds, nfds_t(fds.count), 100)
            for index in observers.indices where fds[index].revents != 0 {
                let lines = observers[index].availableLines() ?? []
                let said = index == 0 ? lines.contains { BusBench.matches(line: $0, up: up) } : lines.contains { matches(line: $0, up: up) }
                if said { times[index] = monotonicNanoseconds() - start }
            }
        }
        try network.flapper.readAck()
        return times.map { $0! }
    }

    /// `reachctl monitor`'s host line: `[time] online via up0 ...` once up, any other state once down.
    static func matches(line: String, up: Bool) -> Bool {
        line.contains("] online") == up
    }
}
