import Foundation
import Testing
@testable import Reachability

/// Whether a Qt 6 network program can be built here (scripts/deps installs what it needs).
func qtDevelopmentInstalled() -> Bool {
    FileManager.default.isExecutableFile(atPath: "/usr/bin/g++")
        && (try? DaemonHarness.execute("/usr/bin/pkg-config", ["--exists", "Qt6Network"]).status) == 0
}

/// Qt 6's own QNetworkInformation (backend `networkmanager`, from libqt6network6), built here from
/// a few lines of C++ and pointed at reachd's NetworkManager surface on a private "system bus",
/// as the GLib test does for GNetworkMonitor: reachability, transport medium, metered, a captive
/// portal, and a restart of reachd while the links change (Qt reads GetAll once when it loads and
/// then only follows PropertiesChanged, so it is right only because reachd announces its values).
@Suite(rootOnly, .enabled(if: qtDevelopmentInstalled(), "needs qt6-base-dev, g++ and pkg-config (scripts/deps)"))
struct QtNetworkInformationTests {
    typealias NM = NetworkManagerCompatibilityTests

    /// QNetworkInformation's values as numbers: reachability 0 unknown, 1 disconnected, 2 local,
    /// 3 site, 4 online; medium 0 unknown, 1 ethernet, 2 cellular, 3 Wi-Fi.
    static let source = """
        #include <QCoreApplication>
        #include <QNetworkInformation>
        #include <cstdio>

        // One JSON line at start and one per signal: the signal, and the four values after it.
        static void report(const char *signal)
        {
            QNetworkInformation *info = QNetworkInformation::instance();
            std::printf("{\\"signal\\":\\"%s\\",\\"backend\\":\\"%s\\",\\"reachability\\":%d,\\"medium\\":%d,\\"metered\\":%s,\\"portal\\":%s}\\n",
                        signal, qPrintable(info->backendName()), int(info->reachability()), int(info->transportMedium()),
                        info->isMetered() ? "true" : "false", info->isBehindCaptivePortal() ? "true" : "false");
            std::fflush(stdout);
        }

        int main(int argc, char **argv)
        {
            QCoreApplication app(argc, argv);
            if (!QNetworkInformation::loadBackendByName(u"networkmanager")) {
                std::fprintf(stderr, "the networkmanager backend did not load\\n");
                return 2;
            }
            QNetworkInformation *info = QNetworkInformation::instance();
            QObject::connect(info, &QNetworkInformation::reachabilityChanged, [] { report("reachability"); });
            QObject::connect(info, &QNetworkInformation::transportMediumChanged, [] { report("medium"); });
            QObject::connect(info, &QNetworkInformation::isMeteredChanged, [] { report("metered"); });
            QObject::connect(info, &QNetworkInformation::isBehindCaptivePortalChanged, [] { report("portal"); });
            report("start");
            return app.exec();
        }
        """

    /// The client, built once per test run (g++ takes a couple of seconds).
    static let program: Result<String, CommandFailed> = {
        do {
            let directory = try makeScratchDirectory("reachd-qt")
            try source.write(toFile: directory + "/client.cpp", atomically: true, encoding: .utf8)
            let flags = try DaemonHarness.execute("/usr/bin/pkg-config", ["--cflags", "--libs", "Qt6Network"])
            let arguments = ["-std=c++17", "-fPIC", directory + "/client.cpp", "-o", directory + "/client"]
                + flags.stdout.split(whereSeparator: \.isWhitespace).map(String.init)
            let built = try DaemonHarness.execute("/usr/bin/g++", arguments, timeout: .seconds(120))
            guard built.status == 0 else { return .failure(CommandFailed(command: "g++", status: built.status, output: built.stderr)) }
            return .success(directory + "/client")
        } catch {
            return .failure(CommandFailed(command: "build the Qt client", status: -1, output: "\(error)"))
        }
    }()

    /// One running Qt client on `bus`.
    final class QtClient: @unchecked Sendable {
        let child: ChildProcess

        init(bus: String) throws {
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
            child = try ChildProcess(try QtNetworkInformationTests.program.get(), [], environment: environment)
        }

        var events: [[String: Any]] {
            child.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        /// Waits until the latest report has these values (nil: any); returns it.
        @discardableResult
        func wait(
            _ what: String, reachability: Int? = nil, medium: Int? = nil, metered: Bool? = nil, portal: Bool? = nil
        ) async throws -> [String: Any] {
            let deadline = ContinuousClock.now + waitLimit
            while true {
                if let last = events.last, reachability.map({ last["reachability"] as? Int == $0 }) ?? true,
                    medium.map({ last["medium"] as? Int == $0 }) ?? true, metered.map({ last["metered"] as? Bool == $0 }) ?? true,
                    portal.map({ last["portal"] as? Bool == $0 }) ?? true
                {
                    return last
                }
                guard ContinuousClock.now < deadline, child.isRunning else {
                    throw TimedOut(what: "Qt \(what): \(child.lines) \(child.errorLines)")
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }

        /// The signals since event `start` named `signal`.
        func count(_ signal: String, since start: Int) -> Int {
            events.dropFirst(start).filter { $0["signal"] as? String == signal }.count
        }
    }

    @Test func qtFollowsCarrierMeteredCellularAndARestartWhileTheLinksChange() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "eth0")
        let harness = try DaemonHarness(uplinks.ns, config: NM.config)
        defer { harness.shutdown() }
        try await harness.ready()
        let qt = try QtClient(bus: harness.address)
        defer { qt.child.kill() }
        let first = try await qt.wait("start", reachability: 4, medium: 1, metered: false, portal: false)
        #expect(first["backend"] as? String == "networkmanager", "\(first)")

        // Carrier loss: Disconnected, with one signal; back: Online.
        var start = qt.events.count
        try uplinks.carrier(false)
        try await qt.wait("carrier loss", reachability: 1)
        try await Task.sleep(for: .milliseconds(500))
        #expect(qt.count("reachability", since: start) == 1, "\(qt.events.dropFirst(start))")
        try uplinks.carrier(true)
        try await qt.wait("carrier back", reachability: 4, medium: 1)

        // A wired link configured as metered (a reload), and back.
        try harness.writeConfig(NM.config.replacingOccurrences(of: "Name=eth*\nKind=wired", with: "Name=eth*\nKind=wired\nMetered=yes"))
        harness.daemon?.signal(SIGHUP)
        try await qt.wait("a metered wired link", reachability: 4, medium: 1, metered: true)
        try harness.writeConfig(NM.config)
        harness.daemon?.signal(SIGHUP)
        try await qt.wait("unmetered again", reachability: 4, medium: 1, metered: false)

        // The ethernet link goes and a cellular one carries: Cellular, metered.
        try uplinks.addUplink("wwan0", "198.51.100", metric: 700)
        try uplinks.ns.ip("link del eth0")
        try await qt.wait("cellular carries", reachability: 4, medium: 2, metered: true)

        // reachd restarts while the cellular link loses its carrier: Qt learns it from the
        // announcement of the restarted reachd, and goes on following it.
        start = qt.events.count
        harness.stopDaemon()
        try uplinks.far.ip("link set wwan0p down")
        try harness.startDaemon()
        try harness.waitUntilServing()
        try await qt.wait("disconnected across the restart", reachability: 1)
        try uplinks.far.ip("link set wwan0p up")
        try await qt.wait("online after the restart", reachability: 4, medium: 2, metered: true)
        #expect(qt.child.isRunning)
    }

    @Test func qtSeesACaptivePortalAndItsEnd() async throws {
        let probe = "[Connectivity]\nTimeout=2s\nInterval=60m\nURL=http://192.0.2.1:"
        let setup = try await ConnectivityProbeTests.Setup(config: NM.config + "\n" + probe + "8302/\n")
        try await setup.waitFor("portal")
        // A client that starts behind the portal.
        let qt = try QtClient(bus: setup.harness.address)
        defer { qt.child.kill() }
        try await qt.wait("behind the portal", reachability: 3, portal: true)
        // The portal lets through: the probe's next verdict is full.
        try setup.reload(NM.config + "\n" + probe + "8204/\n")
        try await setup.waitFor("full")
        try await qt.wait("through the portal", reachability: 4, portal: false)
    }
}
