import Foundation
import Testing
@testable import Reachability

/// The portal's address from DHCP (RFC 8910): dnsmasq hands out option 114 on the far side of a
/// veth, ISC dhclient (asked for it as docs/admins.md says) takes the lease and records it, and
/// reachd, following dhclient's lease directory, shows it on the interface with its source and
/// as the host's announced portal.
@Suite(rootOnly)
struct PortalDHCPTests {
    /// dnsmasq serving leases with option 114 set to `value` on `link`'s far end; dhclient on
    /// `link` asking for it, its leases in `leases` (`directory`/leases unless told). Returns the pid files to kill.
    static func lease(
        _ uplinks: DaemonBusTests.Scenario, _ link: String, option value: String, in directory: String, leases: String? = nil
    ) throws -> [String] {
        let pids = ["\(directory)/dnsmasq.pid", "\(directory)/dhclient.pid"]
        try uplinks.far.exec(
            "/usr/sbin/dnsmasq",
            [
                "--conf-file=/dev/null", "--interface=\(link)p", "--bind-interfaces", "--port=0", "--dhcp-range=192.0.2.50,192.0.2.60,2m",
                "--dhcp-option=114,\(value)", "--pid-file=\(pids[0])", "--dhcp-leasefile=\(directory)/dnsmasq.leases",
                "--user=root", "--group=root",
            ])
        // What docs/admins.md tells an administrator to add to /etc/dhcp/dhclient.conf.
        try "also request default-url;\n".write(toFile: "\(directory)/dhclient.conf", atomically: true, encoding: .utf8)
        // -sf /bin/true: the lease is recorded, the namespace's own address and route stay.
        try uplinks.ns.exec(
            "/sbin/dhclient",
            ["-1", "-cf", "\(directory)/dhclient.conf", "-lf", "\(leases ?? directory + "/leases")/dhclient.\(link).leases", "-pf", pids[1], "-sf", "/bin/true", link])
        return pids
    }

    static func stop(_ pids: [String]) {
        for file in pids {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8), let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
            else { continue }
            kill(pid, SIGKILL)
        }
    }

    static func status(_ harness: DaemonHarness) throws -> [String: Any] {
        try reachctl(["status", "--json", "--daemon", "--bus-address", harness.address]).json()
    }

    static func interface(_ status: [String: Any], _ name: String) -> [String: Any]? {
        (status["interfaces"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    @Test func option114FromDnsmasqIsShownWithinASecondOfTheLease() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "pd0")
        let directory = try makeScratchDirectory("portal-dhcp")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/leases", withIntermediateDirectories: true)
        let harness = try DaemonHarness(uplinks.ns, arguments: ["--dhcp-client-leases", directory + "/leases"])
        defer { harness.shutdown() }
        try await harness.ready()
        #expect(try Self.status(harness)["announcedPortal"] as? String == "")

        let pids = try Self.lease(uplinks, "pd0", option: "https://portal.test/capport/api", in: directory)
        defer { Self.stop(pids) }
        let leased = ContinuousClock.now
        try await eventually("the lease's portal", timeout: .seconds(1), every: .milliseconds(20)) {
            try Self.status(harness)["announcedPortal"] as? String == "https://portal.test/capport/api"
        }
        #expect(ContinuousClock.now - leased < .seconds(1))
        let status = try Self.status(harness)
        let pd0 = try #require(Self.interface(status, "pd0"), "\(status)")
        #expect(pd0["portal"] as? String == "https://portal.test/capport/api" && pd0["portalSource"] as? String == "dhcpv4", "\(pd0)")
        // Over the bus as any client reads it: the property, and the interface's facts.
        let property = try harness.busctl(["get-property", DaemonHarness.busName, DaemonHarness.objectPath, DaemonHarness.interface, "AnnouncedPortal"])
        #expect(property.stdout.contains("https://portal.test/capport/api"), "\(property)")

        // The link down: a lease recorded for a link that is not ready is no portal of the host's.
        try uplinks.carrier(false)
        try await eventually("gone with the carrier", timeout: .seconds(2), every: .milliseconds(20)) {
            try Self.status(harness)["announcedPortal"] as? String == ""
        }
    }

    /// A server that hands out a plain-http "portal" or one with a control character in it: one
    /// journal line naming the value, nothing shown, and reachd answers at once all along.
    @Test func aRefusedOption114IsOneJournalLineAndNothingShown() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "pd1")
        let directory = try makeScratchDirectory("portal-dhcp-bad")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/leases", withIntermediateDirectories: true)
        let harness = try DaemonHarness(uplinks.ns, arguments: ["--dhcp-client-leases", directory + "/leases"])
        defer { harness.shutdown() }
        try await harness.ready()
        let pids = try Self.lease(uplinks, "pd1", option: "http://portal.test/\u{1b}[31mapi", in: directory)
        defer { Self.stop(pids) }
        try harness.daemon?.waitForErrorLine(containing: "DHCPv4 option 114 of 'pd1' refused", timeout: .seconds(2))
        let lines = harness.daemonErrorLines.filter { $0.contains("option 114") }
        #expect(lines.count == 1, "\(lines)")
        // dhclient records the escape as \033; the line names the value as recorded, no raw byte.
        #expect(lines.first?.contains("http://portal.test/\\033[31mapi") == true && lines.first?.contains("\u{1b}") == false, "\(lines)")
        let status = try Self.status(harness)
        #expect(status["announcedPortal"] as? String == "" && Self.interface(status, "pd1")?["portal"] as? String == "", "\(status)")
    }
}
