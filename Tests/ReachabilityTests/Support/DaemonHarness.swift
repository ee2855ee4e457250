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
    /// More of reachd's options (`--sysfs-root DIR`, `--rfkill-device PATH`).
    private let arguments: [String]
    /// A program reachd is started through, with its arguments (`setpriv ... --`), or nothing.
    private let launcher: [String]

    /// Starts a private bus (and, unless `start` is false, reachd on it). `config` becomes
    /// `reachd.conf`; `environment` is added to reachd's (e.g. `WATCHDOG_USEC`). `anyUser`: a bus
    /// every Unix user may connect to (as the system bus), not only this process's user;
    /// `authTimeout` shortens its time for a connection to set up (dbus-daemon's 30 s).
    init(
        _ namespace: TestNamespace?, config: String? = nil, resolvConf: String? = nil,
        environment: [String: String] = [:], start: Bool = true, anyUser: Bool = false, authTimeout: Duration? = nil,
        verbose: Bool = false, arguments: [String] = [], launcher: [String] = []
    ) throws {
        self.namespace = namespace
        self.arguments = arguments
        self.launcher = launcher
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
            try Self.anyUserBusConfig(socket: directory + "/bus", authTimeout: authTimeout).write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
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
    static func anyUserBusConfig(socket: String, authTimeout: Duration? = nil) -> String {
        let limit = authTimeout.map { "<limit name=\"auth_timeout\">\($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000)</limit>" } ?? ""
        return """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          \(limit)
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
        let command = launcher + [productPath("reachd")] + arguments + self.arguments
        daemon = try ChildProcess(command[0], Array(command.dropFirst()), environment: environment)
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
}
