import Reachability

#if canImport(Glibc)
import Glibc
#endif

/// One observer of the same carrier flaps, kernel -> that observer.
struct BusFlapPath: Sendable {
    /// "netlink floor", "ip monitor", "reachd Changed".
    var path: String
    var down: Summary
    var up: Summary
    var all: Summary
}

/// A method call's round trip through the private bus: client -> dbus-daemon -> reachd -> back.
struct BusCallMeasurement: Sendable {
    var member: String
    var summary: Summary
}

/// The D-Bus group: reachd as a process on a private bus.
struct BusMeasurement: Sendable {
    var reachd: String
    /// From spawning reachd to its first answer to GetStatus (sync done, name owned).
    var startup: UInt64 = 0
    /// After the first answer and 2 s without any activity.
    var idle = ProcessUsage()
    /// systemd-networkd beside it, read at the same moment (nil where it is not installed).
    var networkdIdle: ProcessUsage?
    /// The same after the flaps and calls, and 2 s idle.
    var afterWork = ProcessUsage()
    var idleWindowSeconds = 5
    /// Times reachd's threads got a CPU in the idle window (schedstat), and context switches;
    /// first right after start, then after the flaps and calls.
    var idleTimeslices: UInt64 = 0
    var idleContextSwitches: UInt64 = 0
    var afterWorkTimeslices: UInt64 = 0
    var afterWorkContextSwitches: UInt64 = 0
    var flaps: [BusFlapPath] = []
    /// Changed signals received per transition, x100.
    var signalsPerTransitionTimes100 = 0
    /// GLib's GNetworkMonitor (its netlink backend) `network-changed` signals per transition,
    /// x100; nil when python3-gi is not installed.
    var glibSignalsPerTransitionTimes100: Int?
    var calls: [BusCallMeasurement] = []
    /// How reachd ended on SIGTERM.
    var exit = ""
}

enum BusBench {
    static let busName = "org.reachd.Reachability1"
    static let objectPath = "/org/reachd/Reachability1"
    static let interface = "org.reachd.Reachability1"

    /// reachd next to this program, unless `--reachd PATH` names it.
    static func reachdPath(_ options: Options) -> String {
        if let path = options.reachdPath { return path }
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return "reachd" }
        let executable = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(executable[..<(executable.lastIndex(of: "/") ?? executable.startIndex)]) + "/reachd"
    }

    /// A private dbus-daemon with reachd on it, watching the client namespace and asking the
    /// nameserver of `resolvConf`; running until the returned value's children are stopped.
    struct Service {
        let bus: ChildProcess
        let daemon: ChildProcess
        let address: String
        let client: BusConnection
        let log: String
        /// From spawning reachd to its first answer to GetStatus (sync done, name owned).
        let startup: UInt64

        func failure(_ what: String) -> BenchError {
            let tail = (readSmallFile(log) ?? "").split(separator: "\n").suffix(5).joined(separator: "\n  ")
            return BenchError("\(what) (reachd \(ChildProcess.describe(daemon.poll()))); its log \(log):\n  \(tail)")
        }

        func stop() {
            _ = daemon.stop(signal: SIGKILL)
            bus.stop()
        }
    }

    static func startService(_ network: ServiceNetwork, _ options: Options, resolvConf: String, tag: String) throws -> Service {
        let reachd = reachdPath(options)
        guard access(reachd, X_OK) == 0 else {
            throw BenchError("reachd not found at \(reachd); build it next to reachbench with "
                + "`swift build -c release --product reachd` (same --scratch-path), or pass --reachd PATH")
        }
        guard let dbusDaemon = findExecutable(["/usr/bin/dbus-daemon", "/bin/dbus-daemon"]) else {
            throw BenchError("dbus-daemon not found (apt-get install dbus-daemon)")
        }
        // A private bus. It prints its address once it listens.
        let socket = network.file("bus-\(tag)")
        let bus = try ChildProcess(
            dbusDaemon, ["--session", "--nofork", "--nopidfile", "--address=unix:path=\(socket)", "--print-address=1"],
            pipeOutput: true, logFile: network.file("dbus-daemon-\(tag).log"))
        var busOutput = LineReader(fd: bus.output!)
        guard let address = busOutput.line(withinMilliseconds: 10_000), address.hasPrefix("unix:") else {
            bus.stop()
            throw BenchError("dbus-daemon did not print its address within 10 s (\(ChildProcess.describe(bus.poll())))")
        }
        // reachd on it, watching the client namespace.
        let log = network.file("reachd-\(tag).log")
        var arguments = [
            "--bus-address", address, "--netns", network.client.name, "--config-dir", try network.subdirectory("config"),
            "--resolv-conf", resolvConf,
        ]
        if let sysfs = network.client.sysfsRoot { arguments += ["--sysfs-root", sysfs] }
        let client = try BusConnection(.address(address), description: "reachbench")
        let spawned = monotonicNanoseconds()
        let daemon = try ChildProcess(reachd, arguments, logFile: log)
        while true {
            if (try? getStatus(client)) != nil { break }
            guard daemon.isRunning, monotonicNanoseconds() - spawned < 10_000_000_000 else {
                let service = Service(bus: bus, daemon: daemon, address: address, client: client, log: log, startup: 0)
                defer { service.stop() }
                throw service.failure("reachd did not answer GetStatus within 10 s")
            }
            sleepMilliseconds(2)
        }
        return Service(bus: bus, daemon: daemon, address: address, client: client, log: log, startup: monotonicNanoseconds() - spawned)
    }

    static func measure(_ network: ServiceNetwork, _ options: Options) throws -> BusMeasurement {
        let service = try startService(network, options, resolvConf: network.answeringResolvConf, tag: "bus")
        defer { service.stop() }
        var result = BusMeasurement(reachd: reachdPath(options))
        let (daemon, client, address) = (service.daemon, service.client, service.address)
        let failure = service.failure
        result.startup = service.startup
        note("reachbench: bus: reachd (pid \(daemon.pid)) answered after \(Format.milliseconds(result.startup)) ms; idle 2 + \(result.idleWindowSeconds) s")

        // Idle: memory after 2 s, then how often it ran in the next 5 s; networkd beside it.
        let networkd = NetworkdBeside.start(namespace: network.client.name, log: network.file("networkd.log"))
        (result.idle, result.idleTimeslices, result.idleContextSwitches) = idleUsage(daemon.pid, window: result.idleWindowSeconds)
        if let networkd {
            if networkd.isRunning {
                result.networkdIdle = ProcessUsage.read(networkd.pid)
                networkd.stop(signal: SIGTERM)
            } else {
                note("reachbench: bus: systemd-networkd \(ChildProcess.describe(networkd.poll())): "
                    + (readSmallFile(network.file("networkd.log")) ?? "").suffix(300))
            }
        }

        note("reachbench: bus: \(options.flaps) flaps: netlink floor, ip monitor and reachd's Changed on the same flaps")
        (result.flaps, result.signalsPerTransitionTimes100, result.glibSignalsPerTransitionTimes100) = try measureFlaps(
            network, address: address, flaps: options.flaps, warmup: options.warmup, glib: options.glib)
        guard daemon.isRunning else { throw failure("reachd ended during the flaps") }
        if !options.reachctlPaths.isEmpty {
            note("reachbench: bus: \(options.flaps) flaps: ip monitor and \(options.reachctlPaths.joined(separator: ", ")) monitor's line")
            result.flaps += try MonitorLineBench.measure(
                network, address: address, reachctls: options.reachctlPaths, flaps: options.flaps, warmup: options.warmup)
        }

        note("reachbench: bus: \(options.busCalls) round trips each: Peer.Ping, CheckAddress, GetStatus")
        let warmup = max(10, options.busCalls / 20)
        let target = ServiceNetwork.answering
        let calls: [(String, () throws -> Void)] = [
            ("Peer.Ping (answered by sd-bus in reachd)", {
                _ = try client.call(
                    destination: busName, path: objectPath, interface: "org.freedesktop.DBus.Peer", member: "Ping",
                    timeout: .seconds(2))
            }),
            ("CheckAddress(\(target))", {
                let reply = try client.call(
                    destination: busName, path: objectPath, interface: interface, member: "CheckAddress", timeout: .seconds(2)
                ) { message throws(BusError) in try message.append(target) }
                let flags = ReachabilityFlags(rawValue: try reply.message.readUInt32())
                guard flags.contains(.reachable) else { throw BenchError("CheckAddress(\(target)) over D-Bus: \(flags)") }
            }),
            ("GetStatus", { try getStatus(client) }),
        ]
        let summaries = try time(options.busCalls, warmup: warmup, calls.map(\.1))
        result.calls = zip(calls, summaries).map { BusCallMeasurement(member: $0.0.0, summary: $0.1) }
        guard daemon.isRunning else { throw failure("reachd ended during the calls") }

        note("reachbench: bus: idle again, 2 + \(result.idleWindowSeconds) s")
        (result.afterWork, result.afterWorkTimeslices, result.afterWorkContextSwitches) = idleUsage(daemon.pid, window: result.idleWindowSeconds)

        result.exit = ChildProcess.describe(daemon.stop(signal: SIGTERM))
        return result
    }

    static func getStatus(_ client: BusConnection) throws {
        _ = try client.call(destination: busName, path: objectPath, interface: interface, member: "GetStatus", timeout: .milliseconds(500))
    }

    /// Memory after 2 s idle, then the CPU slices and context switches in the next `window` seconds.
    static func idleUsage(_ pid: pid_t, window: Int) -> (ProcessUsage, UInt64, UInt64) {
        sleepMilliseconds(2000)
        let before = ProcessUsage.read(pid)
        sleepMilliseconds(window * 1000)
        let after = ProcessUsage.read(pid)
        return (before, after.timeslices &- before.timeslices, after.contextSwitches &- before.contextSwitches)
    }

    /// Times each of `bodies` `samples` times, after `warmup` untimed rounds, taking turns (one
    /// call of each per round), so that drift over the run weighs on all of them alike.
    static func time(_ samples: Int, warmup: Int, _ bodies: [() throws -> Void]) throws -> [Summary] {
        for _ in 0..<warmup {
            for body in bodies { try body() }
        }
        var times = [[UInt64]](repeating: [UInt64](repeating: 0, count: samples), count: bodies.count)
        for index in 0..<samples {
            for (which, body) in bodies.enumerated() {
                let start = monotonicNanoseconds()
                try body()
                times[which][index] = monotonicNanoseconds() - start
            }
        }
        return times.map { Summary($0) }
    }

    /// Received Changed signals: flags and arrival time.
    private final class SignalLog {
        var entries: [(flags: UInt32, time: UInt64)] = []
        var total = 0
    }

    /// GLib's own network monitor in a Python child: one line per `network-changed` signal.
    static let glibMonitorScript = """
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        monitor = Gio.NetworkMonitor.get_default()
        monitor.connect("network-changed", lambda m, available: print("changed", int(available), flush=True))
        print("ready", type(monitor).__name__, flush=True)
        GLib.MainLoop().run()
        """

    /// Flaps the uplink's peer and times, for each transition, four observers from just before
    /// the sendmsg: a bare netlink socket in the client namespace, an `ip -n CLIENT monitor link`
    /// child (its line on our pipe), the Changed signal from reachd at a bus connection of ours,
    /// and GLib's GNetworkMonitor in a Python child (its first `network-changed` line; GLib's
    /// netlink backend says "available" even after carrier loss, so any signal counts). One
    /// thread polls them all and stamps each when it has it in hand.
    static func measureFlaps(
        _ network: ServiceNetwork, address: String, flaps: Int, warmup: Int, glib withGLib: Bool
    ) throws -> ([BusFlapPath], Int, Int?) {
        let subscriber = try BusConnection(.address(address), description: "reachbench-subscriber")
        let signals = SignalLog()
        let match = try subscriber.addMatch(
            "type='signal',sender='\(busName)',interface='\(interface)',member='Changed'"
        ) { message in
            let time = monotonicNanoseconds()
            signals.entries.append(((try? message.readUInt32()) ?? 0, time))
            signals.total += 1
        }
        defer { withExtendedLifetime((match, subscriber)) {} }
        let monitor = try ChildProcess(
            network.client.ipTool, ["-n", network.client.name, "monitor", "link"], pipeOutput: true,
            logFile: network.file("ip-monitor.log"))
        defer { monitor.stop() }
        var lines = LineReader(fd: monitor.output!)
        let floor = try RawNetlink(in: network.client, groups: RawNetlink.groupLink)
        let glib = !withGLib ? nil : try? ChildProcess(
            network.client.ipTool, ["netns", "exec", network.client.name, "/usr/bin/python3", "-c", glibMonitorScript],
            pipeOutput: true, logFile: network.file("glib-monitor.log"))
        defer { glib?.stop() }
        var glibLines = glib.map { LineReader(fd: $0.output!) }
        var glibReady = false
        for _ in 0..<50 where glib != nil && !glibReady {
            sleepMilliseconds(100)
            glibReady = glibLines?.availableLines()?.contains { $0.hasPrefix("ready") } ?? false
        }
        if withGLib, !glibReady { note("reachbench: bus: GLib's network monitor did not start (python3-gi missing?); measuring without it") }
        sleepMilliseconds(300)  // ip monitor subscribes

        // floor, ip monitor, bus, GLib; down then up
        var samples: [[UInt64]] = Array(repeating: [], count: 8)
        var signalCount = 0
        var glibSignalCount = 0
        var glibMissed = 0
        for flap in 0..<(warmup + flaps) {
            for goingUp in [false, true] {
                floor.drain()
                _ = lines.availableLines()
                _ = glibLines?.availableLines()
                while try subscriber.process() {}
                signals.entries.removeAll()
                let before = signals.total

                // GLib is waited for only when it runs; its extra signals for one transition
                // arrive together, so all are counted before the next flap.
                var times: [UInt64?] = [nil, nil, nil, glibReady ? nil : 0]
                let start = monotonicNanoseconds()
                try network.flapper.setAdminState(index: network.peer, up: goingUp)
                while times.contains(where: { $0 == nil }) {
                    // sd-bus may already hold parsed messages: run them before sleeping on its fd.
                    while try subscriber.process() {}
                    if times[2] == nil, let hit = signals.entries.first(where: { Self.matches($0.flags, up: goingUp) }) {
                        times[2] = hit.time - start
                    }
                    guard times.contains(where: { $0 == nil }) else { break }
                    let now = monotonicNanoseconds()
                    // GLib may never notice (its netlink backend follows routes, and a carrier
                    // loss deletes none): once the others are in, it gets 1 s more, then counts
                    // as missed.
                    if !times[0..<3].contains(where: { $0 == nil }), now - start > 1_000_000_000 + times[0..<3].map({ $0! }).max()! {
                        glibMissed += flap >= warmup ? 1 : 0
                        times[3] = UInt64.max
                        break
                    }
                    guard now - start < 3_000_000_000 else {
                        let missing = zip(["netlink floor", "ip monitor", "reachd Changed", "GLib network-changed"], times).filter { $0.1 == nil }.map(\.0)
                        throw BenchError("bus flaps: no \(missing.joined(separator: ", ")) within 3 s of setting up0s \(goingUp ? "up" : "down") (flap \(flap))")
                    }
                    var fds = [
                        pollfd(fd: times[0] == nil ? floor.fd : -1, events: Int16(POLLIN), revents: 0),
                        pollfd(fd: times[1] == nil ? monitor.output! : -1, events: Int16(POLLIN), revents: 0),
                        pollfd(fd: subscriber.fileDescriptor, events: Int16(POLLIN), revents: 0),
                        pollfd(fd: times[3] == nil ? glib!.output! : -1, events: Int16(POLLIN), revents: 0),
                    ]
                    _ = poll(&fds, 4, 100)
                    if fds[0].revents != 0, floor.takeOperState(index: network.uplink, up: goingUp) {
                        times[0] = monotonicNanoseconds() - start
                    }
                    if fds[1].revents != 0 {
                        let printed = lines.availableLines() ?? []
                        if printed.contains(where: { Self.matches(line: $0, up: goingUp) }) {
                            times[1] = monotonicNanoseconds() - start
                        }
                    }
                    if fds[3].revents != 0, let printed = glibLines?.availableLines(), printed.contains(where: { $0.hasPrefix("changed") }) {
                        times[3] = monotonicNanoseconds() - start
                        glibSignalCount += flap >= warmup ? printed.count { $0.hasPrefix("changed") } : 0
                    }
                }
                try network.flapper.readAck()
                if glibReady {
                    // GLib's later signals for this transition (it sends several).
                    sleepMilliseconds(50)
                    if flap >= warmup { glibSignalCount += glibLines?.availableLines()?.count { $0.hasPrefix("changed") } ?? 0 }
                }
                if flap >= warmup {
                    for (path, time) in times.enumerated() where path < 3 || (glibReady && time != UInt64.max) {
                        samples[path * 2 + (goingUp ? 1 : 0)].append(time!)
                    }
                    signalCount += signals.total - before
                }
            }
        }
        if glibMissed > 0 { note("reachbench: bus: GLib sent no network-changed for \(glibMissed) of \(2 * flaps) transitions") }
        let names = ["netlink floor", "ip monitor link", "reachd Changed signal"] + (glibReady ? ["GLib GNetworkMonitor (netlink); missed \(glibMissed)"] : [])
        let paths = names.enumerated().filter { index, _ in !samples[index * 2].isEmpty && !samples[index * 2 + 1].isEmpty }.map { index, name in
            BusFlapPath(
                path: name, down: Summary(samples[index * 2]), up: Summary(samples[index * 2 + 1]),
                all: Summary(samples[index * 2] + samples[index * 2 + 1]))
        }
        return (paths, signalCount * 100 / max(1, 2 * flaps), glibReady ? glibSignalCount * 100 / max(1, 2 * flaps) : nil)
    }

    /// Changed(u flags, ...) with the flags the transition leads to.
    static func matches(_ flags: UInt32, up: Bool) -> Bool {
        let flags = ReachabilityFlags(rawValue: flags)
        return up ? flags.contains(.reachable) : flags.contains(.connectionRequired) && !flags.contains(.reachable)
    }

    /// `ip monitor link`'s line for up0 with the new operational state ("state UP" or another).
    static func matches(line: String, up: Bool) -> Bool {
        let words = line.split(separator: " ")
        guard words.contains(where: { $0.hasPrefix("up0") }), let state = words.firstIndex(of: "state"),
            state + 1 < words.count
        else { return false }
        return (words[state + 1] == "UP") == up
    }
}
