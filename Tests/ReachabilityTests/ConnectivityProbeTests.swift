import Foundation
import Testing
@testable import Reachability

/// issue 11: the opt-in connectivity probe against real HTTP servers in a namespace: healthy
/// (204), a hotel login (302), a page where 204 belongs, a server that accepts and never answers
/// (a dead uplink past the gateway). reachd runs as
/// shipped, on a private bus; what it says is read with independent calls (properties, GetStatus,
/// Validate) and counted in `Changed` signals.
@Suite(rootOnly)
struct ConnectivityProbeTests {
    static let validated = ReachabilityFlags.validated.rawValue
    static let intervention = ReachabilityFlags.interventionRequired.rawValue

    /// Serves on 192.0.2.1 (the scenario's gateway, in `far`): port 8204 answers 204, 8302
    /// redirects to a login page, 8200 answers a page, 8999 accepts and never answers; and as
    /// hostile servers do (`PortalAPILoopTests`), 8998 answers garbage (no HTTP), 8997 a 200 and
    /// 10 MB of page, 8996 a 204 with two Content-Lengths that disagree. Every request is printed
    /// ("GET PORT PATH"), so the test can count them.
    static let servers = """
        import socket, sys, threading
        answers = {
            8204: b"HTTP/1.1 204 No Content\\r\\nConnection: close\\r\\n\\r\\n",
            8302: b"HTTP/1.1 302 Found\\r\\nLocation: http://login.hotel.example/?continue=probe\\r\\nContent-Length: 0\\r\\n\\r\\n",
            8200: b"HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\nContent-Length: 33\\r\\n\\r\\n<html><b>Please log in</b></html>",
            8998: b"SSH-2.0-OpenSSH_9.2\\r\\n\\x1b[31m\\xff\\xfe\\r\\n\\r\\n",
            8997: b"HTTP/1.1 200 OK\\r\\nContent-Length: 100000000\\r\\n\\r\\n" + b"<p>log in</p>" * 800000,
            8996: b"HTTP/1.1 204 No Content\\r\\nContent-Length: 0\\r\\nContent-Length: 5\\r\\n\\r\\nhello",
        }
        # Every port bound and "ready" said before any is served: a reachd already probing must not
        # print a GET line first (the tests read the first line as the servers' start).
        def listen(port):
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("0.0.0.0", port))
            listener.listen(64)
            return listener
        said = threading.Lock()
        def serve(port, listener):
            held = []
            while True:
                connection, _ = listener.accept()
                request = connection.recv(4096).decode(errors="replace")
                with said:  # a whole line at a time: print's pieces from two threads interleave
                    sys.stdout.write("GET %d %s\\n" % (port, request.split(" ")[1] if " " in request else "?"))
                    sys.stdout.flush()
                if port in answers:
                    try:
                        connection.sendall(answers[port])
                    except OSError:
                        pass  # the reader had enough (a page past what it reads)
                    connection.close()
                else:
                    held.append(connection)  # never answered, never closed
        listeners = [(port, listen(port)) for port in (8204, 8302, 8200, 8999, 8998, 8997, 8996)]
        print("ready", flush=True)
        for port, listener in listeners:
            threading.Thread(target=serve, args=(port, listener), daemon=True).start()
        threading.Event().wait()
        """

    struct Setup {
        let scenario: DaemonBusTests.Scenario
        let server: ChildProcess
        let harness: DaemonHarness
        let client: BusConnection

        init(config: String, resolvConf: String? = nil, _ tag: String = #function) async throws {
            scenario = try DaemonBusTests.Scenario(tag)
            server = try ChildProcess("/usr/bin/ip", ["netns", "exec", scenario.far.name, "/usr/bin/python3", "-c", ConnectivityProbeTests.servers])
            #expect(try server.firstLine(timeout: .seconds(10)) == "ready")
            harness = try DaemonHarness(scenario.ns, config: config, resolvConf: resolvConf)
            try await harness.ready()
            client = try harness.connect()
        }

        func connectivity() throws -> String { try DaemonHarness.property(client, "Connectivity") }
        func portal() throws -> String { try DaemonHarness.property(client, "Portal") }
        func flags() throws -> UInt32 { try DaemonHarness.property(client, "Flags") }
        var requests: [String] { server.lines.filter { $0.hasPrefix("GET ") } }

        func waitFor(_ connectivity: String, within limit: Duration = waitLimit) async throws {
            try await eventually(
                "Connectivity \(connectivity), is \((try? self.connectivity()) ?? "?"); requests \(requests); \(harness.diagnostics)",
                timeout: limit, every: .milliseconds(20)
            ) { try self.connectivity() == connectivity }
        }

        func reload(_ config: String) throws {
            try harness.writeConfig(config)
            harness.daemon?.signal(SIGHUP)
        }

        func validate() throws -> (connectivity: String, portal: String, detail: String) {
            let output = try harness.busctlCall("Validate")
            let data = try DaemonHarness.jsonData(output)
            return (data[0] as? String ?? "?", data[1] as? String ?? "?", data[2] as? String ?? "?")
        }
    }

    @Test func healthyPortalAndDeadUplinkAreToldApart() async throws {
        let setup = try await Setup(config: "[Connectivity]\nURL=http://192.0.2.1:8204/generate_204\nTimeout=1s\n")
        try await setup.waitFor("full")
        #expect(try setup.flags() & Self.validated != 0)
        #expect(try setup.flags() & Self.intervention == 0)
        #expect(setup.requests.first == "GET 8204 /generate_204", "\(setup.requests)")
        let status = try DaemonHarness.jsonData(try setup.harness.busctlCall("GetStatus"))
        #expect("\(status)".contains("full"), "GetStatus carries Connectivity: \(status)")

        // A hotel login page: one Changed for the change of answer, the redirect's target told.
        let monitor = try setup.harness.monitor("type='signal',member='Changed'")
        defer { monitor.stop() }
        try setup.reload("[Connectivity]\nURL=http://192.0.2.1:8302/generate_204\nTimeout=1s\n")
        try await setup.waitFor("portal")
        #expect(try setup.portal() == "http://login.hotel.example/?continue=probe")
        #expect(try setup.flags() & Self.intervention != 0 && setup.flags() & Self.validated == 0)
        try await Task.sleep(for: .milliseconds(300))
        #expect(monitor.changes.count == 1, "one Changed for full -> portal: \(monitor.changes)")
        #expect(monitor.changes.last.map { $0.flags & Self.intervention != 0 } == true)

        // A page where 204 belongs is a portal too; Validate answers with what it saw.
        try setup.reload("[Connectivity]\nURL=http://192.0.2.1:8200/check\nTimeout=1s\n")
        let page = try setup.validate()
        #expect(page.connectivity == "portal" && page.portal == "" && page.detail.contains("HTTP 200"), "\(page)")

        // An uplink whose far end accepts and never answers: none at the probe's deadline, and
        // address checks answer at once meanwhile.
        try setup.reload("[Connectivity]\nURL=http://192.0.2.1:8999/generate_204\nTimeout=1s\n")
        let started = ContinuousClock.now
        let address = try DaemonHarness.jsonData(try setup.harness.busctlCall("CheckAddress", "s", "192.0.2.7"))
        #expect(address.count == 4 && (address[1] as? String) == "up0", "\(address)")
        try await setup.waitFor("none")
        #expect(ContinuousClock.now - started >= .milliseconds(900), "none only at the probe's 1 s deadline")
        #expect(try setup.flags() & (Self.validated | Self.intervention) == 0)
        #expect(try setup.validate().detail.contains("no answer within 1s"))
    }

    /// `reachctl wait --internet` through reachd: done at full, still waiting (exit 1, one line
    /// saying what was seen) behind a portal, and refused by reason without reachd.
    @Test func reachctlWaitsForTheInternetNotForARoute() async throws {
        let setup = try await Setup(config: "[Connectivity]\nURL=http://192.0.2.1:8204/generate_204\nTimeout=1s\n")
        let done = try reachctl(["wait", "--internet", "--timeout", "10s", "--daemon", "--bus-address", setup.harness.address])
        #expect(done.status == 0 && done.stdout.contains("internet: full"), "\(done)")
        try setup.reload("[Connectivity]\nURL=http://192.0.2.1:8302/generate_204\nTimeout=1s\n")
        try await setup.waitFor("portal")
        let portal = try reachctl(["wait", "--internet", "--timeout", "1s", "--daemon", "--bus-address", setup.harness.address])
        #expect(portal.status == 1, "\(portal)")
        #expect(portal.stderr.contains("the internet to answer") && portal.stderr.contains("internet: portal at http://login.hotel.example/"), "\(portal.stderr)")
        let status = try reachctl(["status", "--json", "--daemon", "--bus-address", setup.harness.address])
        #expect((try? status.json())?["connectivity"] as? String == "portal", "\(status)")
        let alone = try reachctl(["wait", "--internet", "--timeout", "1s", "--netns", setup.scenario.ns.name])
        #expect(alone.status != 0 && alone.stderr.contains("--internet needs reachd"), "\(alone)")
    }

    @Test func noRouteMeansNoneWithoutTrafficAndTheRouteBackProbesAtOnce() async throws {
        // An hour between good answers: in the main pass this test spans about 100 s (its steps
        // wait for the pool's two threads), and a minute's timer once probed a third time there.
        let setup = try await Setup(config: "[Connectivity]\nURL=http://192.0.2.1:8204/\nTimeout=2s\nInterval=1h\n")
        try await setup.waitFor("full")
        let before = setup.requests.count
        try setup.scenario.carrier(false)
        try await setup.waitFor("none")
        #expect(setup.requests.count == before, "no probe over a dead link: \(setup.requests)")
        #expect(try setup.flags() & Self.validated == 0)
        // The path comes back: probed at once, not at the next interval.
        try setup.scenario.carrier(true)
        try await setup.waitFor("full", within: .seconds(10))
        #expect(setup.requests.count == before + 1, "\(setup.requests)")
    }

    @Test func offMeansUnknownNoTrafficAndNoTimer() async throws {
        let setup = try await Setup(config: "[Checks]\nDefaultTimeout=2s\n")
        try await Task.sleep(for: .milliseconds(500))
        #expect(try setup.connectivity() == "unknown")
        #expect(setup.requests.isEmpty)
        let answer = try setup.validate()
        #expect(answer.connectivity == "unknown", "\(answer)")
        #expect(setup.requests.isEmpty)
        // No exchange asked, so neither libcurl nor its thread (issue 45).
        let pid = try #require(setup.harness.daemon?.pid)
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        #expect(!maps.contains("libcurl"), "libcurl mapped with the probe off")
        #expect(!setup.harness.daemonErrorLines.contains { $0.hasPrefix("HTTP exchanges:") })
    }

    /// `[Interface] Probe=no` on the link the host's path leaves through: nothing is sent, the
    /// verdict is `unknown` with the reason, Validate sends nothing either; a reload that drops
    /// the rule probes at once, and one that brings it back returns to `unknown`.
    @Test func probeNoOnTheUplinkSendsNothingAndSaysWhy() async throws {
        let probing = "[Connectivity]\nURL=http://192.0.2.1:8204/generate_204\nTimeout=1s\nInterval=1h\n"
        let optOut = probing + "[Interface]\nName=up0\nProbe=no\n"
        let setup = try await Setup(config: optOut)
        try await Task.sleep(for: .milliseconds(800))
        #expect(try setup.connectivity() == "unknown")
        let answer = try setup.validate()
        #expect(answer.connectivity == "unknown" && answer.detail.contains("up0 has Probe=no"), "\(answer)")
        #expect(setup.requests.isEmpty, "\(setup.requests)")
        #expect(try setup.flags() & Self.validated == 0)

        try setup.reload(probing)
        try await setup.waitFor("full")
        #expect(setup.requests.count == 1, "\(setup.requests)")
        try setup.reload(optOut)
        try await setup.waitFor("unknown")
        #expect(try setup.flags() & Self.validated == 0)
        #expect(setup.requests.count == 1, "\(setup.requests)")
    }

    /// `reachctl check --validate` asks reachd's probe: full exits 0, a portal 1 with where it
    /// leads (and the Validate reply as JSON); the probe off, no reachd, or a target with it: a
    /// sentence saying why, exit 255.
    @Test func reachctlCheckValidateAsksReachdsProbe() async throws {
        let setup = try await Setup(config: "[Connectivity]\nURL=http://192.0.2.1:8204/generate_204\nTimeout=1s\n")
        let bus = ["--daemon", "--bus-address", setup.harness.address]
        try await setup.waitFor("full")
        let asked = setup.requests.count
        try await Task.sleep(for: .seconds(2))  // past the 2 s in which Validate answers from the last verdict
        let full = try reachctl(["check", "--validate"] + bus)
        #expect(full.status == 0 && full.stdout == "internet: full (HTTP 204)\n", "\(full)")
        #expect(setup.requests.count == asked + 1, "Validate probes now: \(setup.requests)")

        try setup.reload("[Connectivity]\nURL=http://192.0.2.1:8302/generate_204\nTimeout=1s\n")
        try await setup.waitFor("portal")
        let portal = try reachctl(["check", "--validate", "--json"] + bus)
        #expect(portal.status == 1, "\(portal)")
        let json = try portal.json()
        #expect(json["connectivity"] as? String == "portal" && json["portal"] as? String == "http://login.hotel.example/?continue=probe", "\(json)")
        #expect((json["detail"] as? String)?.contains("302") == true, "\(json)")
        let text = try reachctl(["check", "--validate"] + bus)
        #expect(text.status == 1 && text.stdout.hasPrefix("internet: portal at http://login.hotel.example/?continue=probe ("), "\(text)")

        let both = try reachctl(["check", "--validate", "192.0.2.1"] + bus)
        #expect(both.status == 255 && both.stderr.contains("--validate takes no target") && both.stderr.contains("192.0.2.1"), "\(both)")
        let alone = try reachctl(["check", "--validate", "--netns", setup.scenario.ns.name])
        #expect(alone.status == 255 && alone.stderr.contains("--validate needs reachd"), "\(alone)")
        let nobody = try reachctl(["check", "--validate", "--bus-address", "unix:path=/nonexistent/bus"])
        #expect(nobody.status == 255 && nobody.stderr.contains("--validate needs reachd") && nobody.stderr.contains("not answering"), "\(nobody)")

        try setup.reload("[Checks]\nDefaultTimeout=2s\n")
        try await setup.waitFor("unknown")
        let off = try reachctl(["check", "--validate"] + bus)
        #expect(off.status == 255 && off.stdout.hasPrefix("internet: unknown") && off.stderr.contains("probe is off"), "\(off)")
    }

    /// Two uplinks (made `wired` by a rule: veths are not uplinks by default), only one of which
    /// leads to the HTTP server (up1's gateway, in a namespace of its own, forwards nothing). Each
    /// is judged through itself, so ValidatedInterfaces names the one that reaches the internet,
    /// whichever the kernel's default path is; an uplink without carrier is not probed.
    @Test func eachUplinkIsJudgedThroughItself() async throws {
        let setup = try await Setup(config: """
            [Connectivity]
            URL=http://203.0.113.80:8204/generate_204
            Timeout=1s
            Interval=1m
            [Interface]
            Name=up*
            Kind=wired
            """)
        let ns = setup.scenario.ns
        try setup.scenario.far.ip("addr add 203.0.113.80/32 dev lo")
        let dead = try TestNamespace("deadend")
        try ns.ip("link add up1 type veth peer name up1p")
        try ns.ip("link set up1p netns \(dead.name)")
        try ns.ip("link set up1 addrgenmode none")
        try ns.ip("addr add 198.51.100.2/24 dev up1")
        try dead.ip("addr add 198.51.100.1/24 dev up1p")
        try dead.ip("link set up1p up")
        try ns.ip("link set up1 up")
        try ns.ip("route add default via 198.51.100.1 dev up1 metric 200")

        func strings(_ name: String) throws -> [String] {
            let output = try setup.harness.busctl(["--json=short", "get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, name])
            return try DaemonHarness.jsonData(output).compactMap { $0 as? String }
        }
        func waitFor(_ name: String, _ expected: [String]) async throws {
            let deadline = ContinuousClock.now + waitLimit
            while try strings(name) != expected {
                guard ContinuousClock.now < deadline else {
                    throw TimedOut(what: "\(name) \(expected), is \(try strings(name)); requests \(setup.requests); \(setup.harness.diagnostics)")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await waitFor("AvailableInterfaces", ["up0", "up1"])
        try await setup.waitFor("full")
        // up1's own probe goes out through up1 and dies at its gateway: up0 alone is validated.
        try setup.harness.daemon?.waitForErrorLine(containing: "connectivity via up1: none (no answer within 1s)")
        try await waitFor("ValidatedInterfaces", ["up0"])

        // The kernel's default path moves to up1: the host's probe now fails through it, and
        // up0, judged through itself, still reaches the internet.
        try ns.ip("route del default via 192.0.2.1 dev up0 metric 100")
        try ns.ip("route add default via 192.0.2.1 dev up0 metric 300")
        try await setup.waitFor("none", within: .seconds(10))
        #expect(try DaemonHarness.property(setup.client, "PrimaryInterface") as String == "up1")
        try await waitFor("ValidatedInterfaces", ["up0"])
        let status = try reachctl(["status", "--json", "--daemon", "--bus-address", setup.harness.address])
        #expect((try? status.json())?["validatedInterfaces"] as? [String] == ["up0"], "\(status)")

        // up0 loses carrier: no longer an uplink, no longer validated, and nothing is even tried
        // through it (IPv6 is off on up0, so its transmit counters, drops included, move only if
        // something is sent); back with its carrier, it is probed at once.
        func sentThroughUp0() throws -> Int {
            let output = try ns.ip("-s -j link show up0")
            let link = (try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])?.first
            let tx = (link?["stats64"] as? [String: Any])?["tx"] as? [String: Any]
            return ((tx?["packets"] as? Int) ?? -1) + ((tx?["dropped"] as? Int) ?? -1)
        }
        try setup.scenario.carrier(false)
        try await waitFor("ValidatedInterfaces", [])
        let before = try sentThroughUp0()
        #expect(before > 0, "up0's counters read (it sent the probes before)")
        try await Task.sleep(for: .seconds(3))
        #expect(try sentThroughUp0() == before, "no probe through a link without carrier")
        let asked = setup.requests.count
        try setup.scenario.carrier(true)
        try await waitFor("ValidatedInterfaces", ["up0"])
        #expect(setup.requests.count == asked + 1, "\(setup.requests)")
    }
}
