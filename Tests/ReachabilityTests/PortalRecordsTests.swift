import Foundation
import Testing
@testable import Reachability
@testable import ReachabilityCore

/// The portal's address as the other DHCP clients record it (RFC 8910): systemd-networkd's link
/// state files (`CAPTIVE_PORTAL=`, networkd 254 and later) and dhcpcd's lease files (the server's
/// reply as received). Real files in a directory of the test's: their format is the contract.
struct PortalRecordsTests {
    // MARK: - systemd-networkd

    /// A link state file as networkd 254+ writes it (link_save: KEY=VALUE lines, unquoted).
    static func linkState(portal: String?) -> String {
        var text = "# This is private data. Do not parse.\nADMIN_STATE=configured\nOPER_STATE=routable\nCARRIER_STATE=carrier\n"
        text += "ONLINE_STATE=online\nREQUIRED_FOR_ONLINE=yes\nNETWORK_FILE=/etc/systemd/network/50-dhcp.network\nDNS=192.0.2.1\nNTP=\n"
        if let portal { text += "CAPTIVE_PORTAL=\(portal)\n" }
        return text + "DOMAINS=\nROUTE_DOMAINS=\nLLMNR=yes\nMDNS=no\n"
    }

    /// The file named by lo's index (1 in every namespace) gives lo's portal with source
    /// networkd; a file of an index no link has gives none; one without the line gives none.
    @Test func networkdsCaptivePortalLineIsReadByTheLinksName() throws {
        let directory = try makeScratchDirectory("networkd-links")
        defer { removeTree(directory) }
        try Self.linkState(portal: "https://portal.example/capport/api").write(toFile: directory + "/1", atomically: true, encoding: .utf8)
        try Self.linkState(portal: "https://other.example/api").write(toFile: directory + "/2147483000", atomically: true, encoding: .utf8)
        let read = NetworkdLinks.portals(in: directory)
        #expect(read.portals == [DHCPPortal(interfaceName: "lo", uri: "https://portal.example/capport/api", source: .networkd)], "\(read)")
        #expect(read.refusals.isEmpty, "\(read.refusals)")
        try Self.linkState(portal: nil).write(toFile: directory + "/1", atomically: true, encoding: .utf8)
        #expect(NetworkdLinks.portals(in: directory).portals.isEmpty)
        #expect(NetworkdLinks.portalValue(Array("CAPTIVE_PORTAL_X=1\nXCAPTIVE_PORTAL=2\n".utf8)) == nil)
    }

    /// A plain-http value, a control character, a FIFO and a file past the bound: each refused
    /// with a line naming it, nothing read from it; told once by `DHCPLeases` while it stays.
    @Test func networkdsRefusedRecordsAreNamedOnce() throws {
        let directory = try makeScratchDirectory("networkd-links-bad")
        defer { removeTree(directory) }
        try Self.linkState(portal: "http://portal.example/\u{1b}[31m").write(toFile: directory + "/1", atomically: true, encoding: .utf8)
        #expect(mkfifo(directory + "/2", 0o600) == 0)
        try String(repeating: "DNS=192.0.2.1\n", count: 10_000).write(toFile: directory + "/3", atomically: true, encoding: .utf8)
        let read = NetworkdLinks.portals(in: directory)
        #expect(read.portals.isEmpty)
        #expect(read.refusals.count == 3, "\(read.refusals)")
        #expect(read.refusals.contains { $0.contains("for 'lo' refused") && $0.contains("http://portal.example/") && !$0.contains("\u{1b}") }, "\(read.refusals)")
        #expect(read.refusals.contains { $0.contains("a FIFO") }, "\(read.refusals)")
        #expect(read.refusals.contains { $0.contains("exceeds") }, "\(read.refusals)")

        var configuration = CoreConfiguration()
        (configuration.dhcpLeasesDirectory, configuration.dhcpClientLeasesDirectory, configuration.dhcpcdLeasesDirectory) = (nil, nil, nil)
        configuration.networkdLinksDirectory = directory
        let leases = try #require(DHCPLeases(configuration))
        #expect(leases.changes().refusals.count == 3)
        #expect(leases.changes().refusals.isEmpty, "told once")
    }

    // MARK: - dhcpcd

    /// A DHCPv4 reply as dhcpcd keeps it: BOOTP's 236 bytes, the cookie, `options`, END, and
    /// `file` (108..<236) filled from `file` when given.
    static func dhcpv4(options: [UInt8], file: [UInt8] = []) -> [UInt8] {
        var message = [UInt8](repeating: 0, count: 236)
        message[0] = 2  // BOOTREPLY
        message.replaceSubrange(108..<(108 + file.count), with: file)
        return message + [99, 130, 83, 99] + [53, 1, 5] + options + [255]
    }

    static func option(_ code: UInt8, _ text: String) -> [UInt8] { [code, UInt8(text.utf8.count)] + Array(text.utf8) }

    static func dhcpv6(options: [(UInt16, [UInt8])]) -> [UInt8] {
        var message: [UInt8] = [7, 0x12, 0x34, 0x56]  // REPLY
        for (code, value) in options {
            message += [UInt8(code >> 8), UInt8(code & 0xFF), UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value
        }
        return message
    }

    @Test func dhcpcdsOption114And103AreRead() throws {
        let plain = Self.dhcpv4(options: Self.option(114, "https://portal.example/api"))
        #expect(try DhcpcdLeases.portalOption(dhcpv4: plain).get() == Array("https://portal.example/api".utf8))
        // RFC 3396: two instances are one value; option 52 puts more options in `file`.
        let split = Self.dhcpv4(options: Self.option(114, "https://portal.") + [52, 1, 1], file: Self.option(114, "example/long") + [255])
        #expect(try DhcpcdLeases.portalOption(dhcpv4: split).get() == Array("https://portal.example/long".utf8))
        #expect(try DhcpcdLeases.portalOption(dhcpv4: Self.dhcpv4(options: Self.option(15, "example"))).get() == nil)
        let six = Self.dhcpv6(options: [(1, [0, 1, 2]), (103, Array("https://six.example/api".utf8)), (23, [UInt8](repeating: 0, count: 16))])
        #expect(try DhcpcdLeases.portalOption(dhcpv6: six).get() == Array("https://six.example/api".utf8))
        #expect(try DhcpcdLeases.portalOption(dhcpv6: Self.dhcpv6(options: [(23, [])])).get() == nil)
    }

    /// Cut messages and lengths past the end are refused with what is wrong, never read past.
    @Test func dhcpcdsMalformedMessagesAreRefused() {
        let whole = Self.dhcpv4(options: Self.option(114, "https://portal.example/api"))
        #expect(throws: DhcpcdLeases.Malformed.self) { try DhcpcdLeases.portalOption(dhcpv4: Array(whole.prefix(200))).get() }
        var noCookie = whole
        noCookie[237] = 0
        #expect(throws: DhcpcdLeases.Malformed.self) { try DhcpcdLeases.portalOption(dhcpv4: noCookie).get() }
        // The option's length byte says 200; 26 bytes follow.
        let overlong = Array(whole.dropLast()).enumerated().map { $0.offset == 244 ? 200 : $0.element }
        #expect(throws: DhcpcdLeases.Malformed(reason: "option 114 claims 200 bytes, 26 left")) { try DhcpcdLeases.portalOption(dhcpv4: overlong).get() }
        #expect(throws: DhcpcdLeases.Malformed.self) { try DhcpcdLeases.portalOption(dhcpv4: Array(whole.prefix(244)) + [114]).get() }
        let six = Self.dhcpv6(options: [(103, Array("https://six.example/api".utf8))])
        #expect(throws: DhcpcdLeases.Malformed.self) { try DhcpcdLeases.portalOption(dhcpv6: Array(six.dropLast())).get() }
        #expect(throws: DhcpcdLeases.Malformed.self) { try DhcpcdLeases.portalOption(dhcpv6: Array(six.prefix(6))).get() }
        #expect(throws: DhcpcdLeases.Malformed.self) { try DhcpcdLeases.portalOption(dhcpv6: [7, 0]).get() }
    }

    /// Random bytes, random cuts of a good message and random lengths never trap and never read
    /// past the end (the parser indexes arrays, which would trap).
    @Test func dhcpcdGarbageNeverTraps() {
        var generator = SystemRandomNumberGenerator()
        let good4 = Self.dhcpv4(options: Self.option(114, "https://portal.example/api") + [52, 1, 3])
        let good6 = Self.dhcpv6(options: [(103, Array("https://six.example/api".utf8))])
        for _ in 0..<5000 {
            let random = (0..<Int.random(in: 0..<600, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = DhcpcdLeases.portalOption(dhcpv4: random)
            _ = DhcpcdLeases.portalOption(dhcpv6: random)
            var mutated4 = Array(good4.prefix(Int.random(in: 0...good4.count, using: &generator)))
            var mutated6 = Array(good6.prefix(Int.random(in: 0...good6.count, using: &generator)))
            if !mutated4.isEmpty { mutated4[Int.random(in: 0..<mutated4.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            if !mutated6.isEmpty { mutated6[Int.random(in: 0..<mutated6.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            _ = DhcpcdLeases.portalOption(dhcpv4: mutated4)
            _ = DhcpcdLeases.portalOption(dhcpv6: mutated6)
        }
    }

    /// IFNAME.lease, IFNAME.lease6 and IFNAME-SSID.lease name their interface; a refused value
    /// and a message that is none are one line each naming the file.
    @Test func dhcpcdsLeaseFilesNameTheirInterface() throws {
        let directory = try makeScratchDirectory("dhcpcd-leases")
        defer { removeTree(directory) }
        try Data(Self.dhcpv4(options: Self.option(114, "https://four.example/api"))).write(to: URL(fileURLWithPath: directory + "/lo-Hotel-Wifi.lease"))
        try Data(Self.dhcpv6(options: [(103, Array("https://six.example/api".utf8))])).write(to: URL(fileURLWithPath: directory + "/eth9.lease6"))
        try Data(Self.dhcpv4(options: Self.option(114, "http://plain.example/"))).write(to: URL(fileURLWithPath: directory + "/eth7.lease"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: directory + "/eth8.lease"))
        try Data().write(to: URL(fileURLWithPath: directory + "/eth6.lease"))
        let read = DhcpcdLeases.portals(in: directory)
        #expect(Set(read.portals) == [
            DHCPPortal(interfaceName: "lo", uri: "https://four.example/api", source: .dhcpv4),
            DHCPPortal(interfaceName: "eth9", uri: "https://six.example/api", source: .dhcpv6),
        ], "\(read.portals)")
        #expect(read.refusals.count == 2, "\(read.refusals)")
        #expect(read.refusals.contains { $0.contains("eth7.lease: DHCPv4 option 114 of 'eth7' refused") && $0.contains("http://plain.example/") })
        #expect(read.refusals.contains { $0.contains("eth8.lease: no DHCP message (3 bytes") })
        #expect(DhcpcdLeases.interfaceName("-x") == nil && DhcpcdLeases.interfaceName("averyveryverylongname") == nil)
    }
}

/// The same records through reachd, in a namespace: the uplink's portal shown with its source
/// within a second of the file, and gone with it.
@Suite(rootOnly)
struct PortalRecordsDaemonTests {
    /// dnsmasq hands out option 114 on the far side of the uplink; the real dhcpcd (Debian's
    /// dhcpcd-base 9.4, asked for the option as docs/admins.md says) takes the lease and writes its
    /// file, in a directory of the test's bound over /var/lib/dhcpcd for dhcpcd alone; reachd
    /// shows the portal, source dhcpv4, within a second of dhcpcd's exit.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/dhcpcd"), "needs dhcpcd (dhcpcd-base, scripts/deps)"))
    func dhcpcdsLeaseFromDnsmasqIsShownWithinASecond() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "pr1")
        let directory = try makeScratchDirectory("portal-dhcpcd")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/leases", withIntermediateDirectories: true)
        let harness = try DaemonHarness(uplinks.ns, arguments: [
            "--dhcp-client-leases", "none", "--networkd-links", "none", "--dhcpcd-leases", directory + "/leases",
        ])
        defer { harness.shutdown() }
        try await harness.ready()
        try uplinks.far.exec("/usr/sbin/dnsmasq", [
            "--conf-file=/dev/null", "--interface=pr1p", "--bind-interfaces", "--port=0", "--dhcp-range=192.0.2.50,192.0.2.60,2m",
            "--dhcp-option=114,https://portal.test/dhcpcd/api", "--pid-file=\(directory)/dnsmasq.pid",
            "--dhcp-leasefile=\(directory)/dnsmasq.leases", "--user=root", "--group=root",
        ])
        defer { PortalDHCPTests.stop(["\(directory)/dnsmasq.pid"]) }
        // What docs/admins.md tells an administrator to add to /etc/dhcpcd.conf, and for the test:
        // no ARP probe (seconds), no route or hook of dhcpcd's in the namespace.
        let conf = "define 114 string captive_portal_uri\noption captive_portal_uri\nnoarp\nnogateway\nnoipv4ll\nnohook resolv.conf\n"
        try conf.write(toFile: directory + "/dhcpcd.conf", atomically: true, encoding: .utf8)
        let dhcpcd = try ChildProcess("/usr/bin/unshare", ["--mount", "--propagation", "private", "--", "/bin/sh", "-c",
            "mount --bind \"$0\" /var/lib/dhcpcd && exec ip netns exec \"$1\" /usr/sbin/dhcpcd -f \"$2\" -c /bin/true -1 -4 -B -t 10 pr1",
            directory + "/leases", uplinks.ns.name, directory + "/dhcpcd.conf"])
        let status = try await dhcpcd.exit(timeout: .seconds(20))
        #expect(status == 0, "\(dhcpcd.errorOutput)")
        let leased = ContinuousClock.now
        #expect(FileManager.default.fileExists(atPath: directory + "/leases/pr1.lease"), "\(dhcpcd.errorOutput)")
        try await eventually("dhcpcd's portal; \(harness.diagnostics)", timeout: .seconds(1), every: .milliseconds(20)) {
            let pr1 = PortalDHCPTests.interface(try PortalDHCPTests.status(harness), "pr1")
            return pr1?["portal"] as? String == "https://portal.test/dhcpcd/api" && pr1?["portalSource"] as? String == "dhcpv4"
        }
        #expect(ContinuousClock.now - leased < .seconds(1))
    }

    @Test func networkdsAndDhcpcdsPortalsAreShownWithinASecond() async throws {
        let uplinks = try DaemonBusTests.Scenario(uplink: "pr0")
        let directory = try makeScratchDirectory("portal-records")
        defer { removeTree(directory) }
        for sub in ["links", "dhcpcd"] { try FileManager.default.createDirectory(atPath: directory + "/" + sub, withIntermediateDirectories: true) }
        let harness = try DaemonHarness(uplinks.ns, arguments: [
            "--dhcp-client-leases", "none", "--networkd-links", directory + "/links", "--dhcpcd-leases", directory + "/dhcpcd",
        ])
        defer { harness.shutdown() }
        try await harness.ready()
        let link = try JSONSerialization.jsonObject(with: Data(try uplinks.ns.ip("-j link show pr0").utf8)) as? [[String: Any]]
        let index = try #require(link?.first?["ifindex"] as? Int)
        func shown(_ uri: String, _ source: String) async throws {
            let written = ContinuousClock.now
            try await eventually("\(uri) from \(source)", timeout: .seconds(1), every: .milliseconds(20)) {
                let pr0 = PortalDHCPTests.interface(try PortalDHCPTests.status(harness), "pr0")
                return pr0?["portal"] as? String ?? "" == uri && pr0?["portalSource"] as? String ?? "" == source
            }
            #expect(ContinuousClock.now - written < .seconds(1))
        }
        // networkd renames a temporary file over the link's.
        try PortalRecordsTests.linkState(portal: "https://networkd.example/api").write(toFile: directory + "/links/\(index)", atomically: true, encoding: .utf8)
        try await shown("https://networkd.example/api", "networkd")
        #expect(try PortalDHCPTests.status(harness)["announcedPortal"] as? String == "https://networkd.example/api")
        try PortalRecordsTests.linkState(portal: nil).write(toFile: directory + "/links/\(index)", atomically: true, encoding: .utf8)
        try await shown("", "")

        // dhcpcd writes its file in place.
        #expect(FileManager.default.createFile(atPath: directory + "/dhcpcd/pr0.lease", contents: nil))
        let lease = try #require(FileHandle(forWritingAtPath: directory + "/dhcpcd/pr0.lease"))
        lease.write(Data(PortalRecordsTests.dhcpv4(options: PortalRecordsTests.option(114, "https://dhcpcd.example/api"))))
        try lease.close()
        try await shown("https://dhcpcd.example/api", "dhcpv4")
        try FileManager.default.removeItem(atPath: directory + "/dhcpcd/pr0.lease")
        try await shown("", "")

        // A value refused: one journal line, nothing shown.
        try PortalRecordsTests.linkState(portal: "http://plain.example/").write(toFile: directory + "/links/\(index)", atomically: true, encoding: .utf8)
        try harness.daemon?.waitForErrorLine(containing: "networkd recorded for 'pr0' refused", timeout: .seconds(2))
        try PortalRecordsTests.linkState(portal: "http://plain.example/").write(toFile: directory + "/links/\(index)", atomically: true, encoding: .utf8)
        try await Task.sleep(for: .milliseconds(300))
        #expect(harness.daemonErrorLines.filter { $0.contains("networkd recorded") }.count == 1, "\(harness.daemonErrorLines)")
        #expect(PortalDHCPTests.interface(try PortalDHCPTests.status(harness), "pr0")?["portal"] as? String == "")
    }
}
