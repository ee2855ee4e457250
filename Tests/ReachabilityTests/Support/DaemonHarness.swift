import Foundation
import Synchronization
@testable import Reachability

/// reachd as systemd and its clients see it: a private dbus-daemon, a `NOTIFY_SOCKET` bound by the
/// test, and the real `reachd` binary watching a test namespace. Every process it starts is
/// killed, and its directory removed, when the harness is released (or at `shutdown()`).
final class DaemonHarness: @unchecked Sendable {
    static let busName = "org.reachd.Reachability1"
    static let objectPath = "/org/reachd/Reachability1"
    static let interface = "org.reachd.Reachability1"
    static let watchInterface = "org.reachd.Reachability1.Watch"

    /// The namespace reachd watches; nil for a bus without reachd (reachctl's fallback tests).
    let namespace: TestNamespace?
    /// The harness's own directory: the bus socket, the notify socket, the configuration.
    let directory: String
    /// `DIR/config`, passed as `--config-dir`; write `reachd.conf` here.
    let configDirectory: String
    /// The private bus's address, as dbus-daemon printed it (its guid changes with `restartBus`).
    private(set) var address: String
    let notify: NotifySocket
    private(set) var bus: ChildProcess
    private let busArguments: [String]
    /// The running reachd (nil before `startDaemon`).
    private(set) var daemon: ChildProcess?
    private let resolvConf: String?
    /// reachd runs with `--verbose` (its debug lines on stderr).
    private let verbose: Bool

    /// Starts a private bus (and, unless `start` is false, reachd on it). `config` becomes
    /// `reachd.conf`; `environment` is added to reachd's (e.g. `WATCHDOG_USEC`). `anyUser`: a bus
    /// every Unix user may connect to (as the system bus), not only this process's user.
    init(
        _ namespace: TestNamespace?, config: String? = nil, resolvConf: String? = nil,
        environment: [String: String] = [:], start: Bool = true, anyUser: Bool = false, verbose: Bool = false
    ) throws {
        self.namespace = namespace
        self.resolvConf = resolvConf
        self.verbose = verbose
        var template = Array("/tmp/rdh-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CommandFailed(command: "mkdtemp", status: errno, output: "") }
        directory = String(cString: made)
        configDirectory = directory + "/config"
        try FileManager.default.createDirectory(atPath: configDirectory, withIntermediateDirectories: true)
        if let config { try config.write(toFile: configDirectory + "/reachd.conf", atomically: true, encoding: .utf8) }
        notify = try NotifySocket(path: directory + "/notify")
        var busArguments = ["--nofork", "--nopidfile", "--nosyslog", "--print-address=1"]
        if anyUser {
            chmod(directory, 0o755)
            try Self.anyUserBusConfig(socket: directory + "/bus").write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
            busArguments.append("--config-file=\(directory)/bus.conf")
        } else {
            busArguments += ["--session", "--address=unix:path=\(directory)/bus"]
        }
        self.busArguments = busArguments
        bus = try ChildProcess("/usr/bin/dbus-daemon", busArguments)
        address = try bus.firstLine(timeout: .seconds(10))
        if start { try startDaemon(environment: environment) }
    }

    deinit { shutdown() }

    /// A session-type bus that, like the system bus, lets every Unix user connect and call.
    static func anyUserBusConfig(socket: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    }

    /// Kills reachd and the bus (if still running) and removes the directory.
    func shutdown() {
        daemon?.kill()
        bus.kill()
        notify.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops reachd as `systemctl stop` would: SIGTERM (it reads signals from a signalfd, so the
    /// inherited mask does not matter), SIGKILL if it has not exited within 3 s.
    func stopDaemon() {
        guard let daemon else { return }
        daemon.signal(SIGCONT)
        daemon.signal(SIGTERM)
        if daemon.waitForExit(timeout: .seconds(3)) == nil { daemon.kill() }
    }

    /// The bus's socket path, as an address without the guid: what a client that outlives one
    /// dbus-daemon is given (a new daemon on the same socket has another guid).
    var busPathAddress: String { "unix:path=\(directory)/bus" }

    /// Kills the bus (reachd, losing it, exits) and starts a new one on the same socket.
    func restartBus() throws {
        bus.kill()
        bus = try ChildProcess("/usr/bin/dbus-daemon", busArguments)
        address = try bus.firstLine(timeout: .seconds(10))
    }

    /// Kills reachd (SIGKILL), as a crash would.
    func killDaemon() { daemon?.kill() }

    /// Stops (SIGSTOP) or resumes (SIGCONT) reachd: a reachd that owns its name but never answers.
    func freeze(_ frozen: Bool) { daemon?.signal(frozen ? SIGSTOP : SIGCONT) }

    /// Blocks until reachd answers GetStatus, which it does only after its first netlink sync.
    /// For synchronous callers; async tests use `ready(state:)`.
    func waitUntilServing(timeout: Duration = waitLimit) throws {
        let deadline = ContinuousClock.now + timeout
        func answers() -> Bool {
            guard let client = try? ReachabilityClient(bus: .address(address)) else { return false }
            return (try? client.status()) != nil
        }
        while !answers() {
            guard ContinuousClock.now < deadline, daemon?.isRunning == true else {
                throw TimedOut(what: "reachd to answer on \(address); \(diagnostics)")
            }
            usleep(5000)
        }
    }

    func writeConfig(_ text: String) throws {
        try text.write(toFile: configDirectory + "/reachd.conf", atomically: true, encoding: .utf8)
    }

    /// Starts reachd with `NOTIFY_SOCKET` pointing at `notify` (and nothing of the test process's
    /// own service-manager environment).
    func startDaemon(environment extra: [String: String] = [:]) throws {
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM"] {
            environment.removeValue(forKey: key)
        }
        environment["NOTIFY_SOCKET"] = notify.path
        environment.merge(extra) { $1 }
        guard let namespace else { throw CommandFailed(command: "reachd", status: 0, output: "the harness has no namespace to watch") }
        var arguments = ["--bus-address", address, "--netns", namespace.name, "--config-dir", configDirectory]
        if let resolvConf { arguments += ["--resolv-conf", resolvConf] }
        if verbose { arguments.append("--verbose") }
        daemon = try ChildProcess(productPath("reachd"), arguments, environment: environment)
    }

    /// Waits for the first `READY=1` (started by `init`), then until `State` is `state`.
    func ready(state: String? = "online", timeout: Duration = .seconds(10)) async throws {
        try await notify.wait(for: "READY=1", timeout: timeout) { $0.fields["READY"] == "1" }
        guard let state else { return }
        let client = try connect()
        let deadline = ContinuousClock.now + timeout
        while try Self.property(client, "State") as String != state {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: "State \(state); \(diagnostics)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// What reachd wrote to its stderr (its log) so far.
    var daemonErrorLines: [String] { daemon?.errorLines ?? [] }

    /// reachd's stderr and the notify datagrams, for failure messages.
    var diagnostics: String {
        "reachd stderr: \(daemon?.errorLines ?? []); notify: \(notify.datagrams.map(\.text).filter { $0 != "WATCHDOG=1" })"
    }

    // MARK: independent clients (busctl, dbus-send)

    /// `busctl --address=BUS ARGUMENTS...` to completion.
    func busctl(_ arguments: [String], timeout: Duration = .seconds(20)) throws -> Output {
        try Self.execute("/usr/bin/busctl", ["--address=\(address)"] + arguments, timeout: timeout)
    }

    /// `busctl call` on reachd's object: `METHOD SIGNATURE ARGUMENTS...`, with `--json=short`.
    func busctlCall(_ method: String, _ signature: String = "", _ arguments: String...) throws -> Output {
        var command = ["--json=short", "call", Self.busName, Self.objectPath, Self.interface, method]
        if !signature.isEmpty { command += [signature] + arguments }
        return try busctl(command)
    }

    /// The `data` of a `busctl --json=short` answer (one JSON object per line; the last one).
    static func jsonData(_ output: Output) throws -> [Any] {
        let line = output.stdout.split(separator: "\n").last.map(String.init) ?? ""
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw CommandFailed(command: "busctl json", status: output.status, output: output.stdout + output.stderr)
        }
        if let data = object["data"] as? [Any] { return data }
        if let data = object["data"] { return [data] }
        throw CommandFailed(command: "busctl json", status: output.status, output: output.stdout + output.stderr)
    }

    /// The XML `busctl --xml-interface introspect` prints for `path`.
    func introspectXML(_ path: String = DaemonHarness.objectPath) throws -> String {
        let output = try busctl(["--xml-interface", "introspect", Self.busName, path])
        guard output.status == 0 else { throw CommandFailed(command: "busctl introspect \(path)", status: output.status, output: output.stderr) }
        return output.stdout
    }

    /// `busctl monitor` with `match`, started and listening when this returns.
    func monitor(_ match: String = "type='signal',path_namespace='/org/reachd/Reachability1'") throws -> SignalMonitor {
        try SignalMonitor(address: address, match: match)
    }

    // MARK: our own client (for what a shell client does slowly: error names, thousands of calls)

    func connect(_ description: String = "daemon-harness") throws -> BusConnection {
        try BusConnection(.address(address), description: description)
    }

    static func call(
        _ client: BusConnection, _ member: String, path: String = objectPath, interface: String = DaemonHarness.interface,
        timeout: Duration = .seconds(10), _ build: (BusMessage) throws(BusError) -> Void = { _ in }
    ) throws(BusError) -> OwnedBusMessage {
        try client.call(destination: busName, path: path, interface: interface, member: member, timeout: timeout, build)
    }

    /// The error of a call that must fail (nil when it succeeded).
    static func callError(
        _ client: BusConnection, _ member: String, path: String = objectPath, interface: String = DaemonHarness.interface,
        _ build: (BusMessage) throws(BusError) -> Void = { _ in }
    ) -> BusError? {
        do {
            _ = try call(client, member, path: path, interface: interface, build)
            return nil
        } catch {
            return error
        }
    }

    /// Reads a reply while it is certainly alive: a `BusMessage` borrows the reference its
    /// `OwnedBusMessage` holds, so `call(...).message.read...()` could read a freed message.
    static func read<T>(_ reply: OwnedBusMessage, _ body: (BusMessage) throws -> T) throws -> T {
        try withExtendedLifetime(reply) { try body(reply.message) }
    }

    /// Watch(target): the new watch object's path.
    static func watch(_ client: BusConnection, _ target: String) throws -> String {
        let reply = try call(client, "Watch") { message throws(BusError) in try message.append(target) }
        return try read(reply) { try $0.readObjectPath() }
    }

    static func property(_ client: BusConnection, _ name: String, path: String = objectPath, interface: String = DaemonHarness.interface) throws -> String {
        let reply = try call(client, "Get", path: path, interface: "org.freedesktop.DBus.Properties") { message throws(BusError) in
            try message.append(interface)
            try message.append(name)
        }
        return try read(reply) { message in
            _ = try message.enter("v", "s")
            return try message.readString()
        }
    }

    static func property(_ client: BusConnection, _ name: String, path: String = objectPath, interface: String = DaemonHarness.interface) throws -> UInt32 {
        let reply = try call(client, "Get", path: path, interface: "org.freedesktop.DBus.Properties") { message throws(BusError) in
            try message.append(interface)
            try message.append(name)
        }
        return try read(reply) { message in
            _ = try message.enter("v", "u")
            return try message.readUInt32()
        }
    }

    struct Status: Equatable {
        var flags: UInt32 = 0
        var state = ""
        var primaryInterface = ""
        var availableInterfaces: [String] = []
        var generation: UInt64 = 0
    }

    static func status(_ client: BusConnection) throws -> Status {
        let reply = try call(client, "GetStatus")
        return try read(reply) { message in try status(from: message) }
    }

    private static func status(from message: BusMessage) throws -> Status {
        var status = Status()
        _ = try message.enter("a", "{sv}")
        while try message.enter("e", "sv") {
            switch try message.readString() {
            case "Flags": _ = try message.enter("v", "u"); status.flags = try message.readUInt32()
            case "State": _ = try message.enter("v", "s"); status.state = try message.readString()
            case "PrimaryInterface": _ = try message.enter("v", "s"); status.primaryInterface = try message.readString()
            case "AvailableInterfaces": _ = try message.enter("v", "as"); status.availableInterfaces = try message.readStringArray()
            case "Generation": _ = try message.enter("v", "t"); status.generation = try message.readUInt64()
            default: try message.skip("v"); try message.exit(); continue
            }
            try message.exit()  // v
            try message.exit()  // e
        }
        try message.exit()
        return status
    }

    /// A JSON number as busctl prints u and t (NSNumber, Int or Double after JSONSerialization).
    static func jsonNumber(_ value: Any?) -> UInt64? {
        switch value {
        case let value as UInt64: value
        case let value as Int: value >= 0 ? UInt64(value) : nil
        case let value as NSNumber: value.uint64Value
        case let value as Double: value >= 0 ? UInt64(value) : nil
        default: nil
        }
    }

    // MARK: processes

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs a program to completion (killed after `timeout`), both streams captured.
    static func execute(_ program: String, _ arguments: [String], timeout: Duration = .seconds(20)) throws -> Output {
        let (status, stdout, stderr) = try ChildProcess(program, arguments).finish(timeout: timeout)
        return Output(status: status, stdout: stdout, stderr: stderr)
    }

    /// `NOTIFY_SOCKET`: an AF_UNIX datagram socket bound by the test; every datagram is kept with
    /// the time it arrived.
    final class NotifySocket: Sendable {
        struct Datagram: Sendable {
            let time: ContinuousClock.Instant
            let text: String
            /// `KEY=VALUE` lines (a later key wins).
            var fields: [String: String] {
                var fields: [String: String] = [:]
                for line in text.split(separator: "\n") {
                    guard let equals = line.firstIndex(of: "=") else { continue }
                    fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
                }
                return fields
            }
        }
        private final class State: Sendable {
            let datagrams = Mutex<[Datagram]>([])
            let stop = Atomic<Bool>(false)
        }

        let path: String
        private let state = State()

        init(path: String) throws {
            self.path = path
            let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw CommandFailed(command: "socket(AF_UNIX)", status: errno, output: "") }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
                Glibc.close(fd)
                throw CommandFailed(command: "bind \(path)", status: ENAMETOOLONG, output: "")
            }
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in bytes.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0 else {
                Glibc.close(fd)
                throw CommandFailed(command: "bind \(path)", status: errno, output: "")
            }
            let state = self.state
            let thread = Thread {
                var buffer = [UInt8](repeating: 0, count: 65536)
                while !state.stop.load(ordering: .relaxed) {
                    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&entry, 1, 20) > 0 else { continue }
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    guard count > 0 else { continue }
                    let datagram = Datagram(time: .now, text: String(decoding: buffer[0..<count], as: UTF8.self))
                    state.datagrams.withLock { $0.append(datagram) }
                }
                Glibc.close(fd)
            }
            thread.start()
        }

        deinit { close() }

        func close() { state.stop.store(true, ordering: .relaxed) }

        var datagrams: [Datagram] { state.datagrams.withLock { $0 } }

        /// Waits for a datagram (at index `from` or later) that satisfies `condition`; returns
        /// it and its index.
        @discardableResult
        func wait(
            for what: String, from: Int = 0, timeout: Duration = waitLimit, _ condition: (Datagram) -> Bool
        ) async throws -> (index: Int, datagram: Datagram) {
            let deadline = ContinuousClock.now + timeout
            while true {
                let all = datagrams
                if from < all.count, let index = all[from...].firstIndex(where: condition) { return (index, all[index]) }
                guard ContinuousClock.now < deadline else {
                    throw TimedOut(what: "\(what) on NOTIFY_SOCKET; have \(all.map(\.text).filter { $0 != "WATCHDOG=1" })")
                }
                try await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    /// One signal as `busctl monitor --json=short` printed it.
    struct Signal {
        var path: String
        var interface: String
        var member: String
        var signature: String
        var data: [Any]

        /// `Changed(u flags, s primary_interface, t generation)`.
        var changed: (flags: UInt32, primaryInterface: String, generation: UInt64)? {
            guard member == "Changed", data.count == 3, let flags = DaemonHarness.jsonNumber(data[0]), let primary = data[1] as? String,
                let generation = DaemonHarness.jsonNumber(data[2])
            else { return nil }
            return (UInt32(flags), primary, generation)
        }

        /// PropertiesChanged: the interface and the changed values (variants unwrapped).
        var propertiesChanged: (interface: String, values: [String: Any])? {
            guard member == "PropertiesChanged", data.count >= 2, let interface = data[0] as? String,
                let values = data[1] as? [String: Any]
            else { return nil }
            var unwrapped: [String: Any] = [:]
            for (key, value) in values { unwrapped[key] = (value as? [String: Any])?["data"] ?? value }
            return (interface, unwrapped)
        }
    }

    /// A running `busctl monitor --json=short --match RULE`, its signals parsed as they arrive.
    final class SignalMonitor: @unchecked Sendable {
        let child: ChildProcess

        init(address: String, match: String) throws {
            child = try ChildProcess("/usr/bin/busctl", ["--address=\(address)", "monitor", "--json=short", "--match", match])
            // busctl says so once BecomeMonitor succeeded: from here on nothing is missed.
            try child.waitForErrorLine(containing: "Monitoring bus message stream")
        }

        var signals: [Signal] {
            child.lines.compactMap { line -> Signal? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["type"] as? String == "signal"
                else { return nil }
                let payload = object["payload"] as? [String: Any]
                return Signal(
                    path: object["path"] as? String ?? "", interface: object["interface"] as? String ?? "",
                    member: object["member"] as? String ?? "", signature: payload?["type"] as? String ?? "",
                    data: payload?["data"] as? [Any] ?? [])
            }
        }

        /// The `Changed` signals so far.
        var changes: [(flags: UInt32, primaryInterface: String, generation: UInt64)] { signals.compactMap(\.changed) }

        /// Waits until `condition` holds for the signals so far.
        @discardableResult
        func wait(for what: String, timeout: Duration = waitLimit, _ condition: ([Signal]) -> Bool) async throws -> [Signal] {
            let deadline = ContinuousClock.now + timeout
            while true {
                let signals = self.signals
                if condition(signals) { return signals }
                guard ContinuousClock.now < deadline else {
                    throw TimedOut(what: "\(what); monitor saw \(child.lines), stderr \(child.errorLines)")
                }
                try await Task.sleep(for: .milliseconds(2))
            }
        }

        func stop() { child.kill() }
    }
}

