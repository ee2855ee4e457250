import Foundation
import Testing
@testable import Reachability

/// The group the package creates: the setup gives the textfile directory to it.
private let reachdGroup = getgrnam("reachd")?.pointee.gr_gid

/// issue 32: node_exporter's textfile in one step, packaging/enable-textfile (installed as
/// /usr/share/reachd/enable-textfile), run here under a scratch root (ROOT=, which restarts
/// nothing). The package test runs the installed one in a booted container, where reachd then
/// writes reachd.prom under its whole sandbox.
@Suite(rootOnly, .enabled(if: reachdGroup != nil, "needs the reachd group (the package's, or systemd-sysusers packaging/reachd.sysusers)"))
struct TextfileSetupTests {
    static let script = MetricsEndpointTests.packaging + "/enable-textfile"
    static let conf = "/etc/reachd/reachd.conf.d/60-textfile.conf"
    static let dropIn = "/etc/systemd/system/reachd.service.d/60-textfile.conf"

    static func run(_ root: String, _ arguments: [String]) throws -> DaemonHarness.Output {
        try DaemonHarness.execute("/usr/bin/env", ["ROOT=\(root)", script] + arguments)
    }

    static func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    /// One command writes the reachd.conf key and the unit's ReadWritePaths= for the same
    /// directory, makes the directory writable by the reachd group keeping the rest of its
    /// mode, and reachd accepts the result; `off` takes both files away again.
    @Test func oneStepSetsTheKeyTheDropInAndTheDirectory() throws {
        let root = try makeScratchDirectory("textfile-setup")
        defer { removeTree(root) }
        let directory = "/var/lib/prometheus/node-exporter"
        // As Debian's node_exporter package leaves it, but closed to others: the mode's other bits stay.
        try FileManager.default.createDirectory(atPath: root + directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o750])
        let on = try Self.run(root, [])
        #expect(on.status == 0, "\(on)")
        let conf = try #require(Self.read(root + Self.conf))
        #expect(conf.hasSuffix("\n[Metrics]\nTextfileDirectory=\(directory)\n"), "\(conf)")
        let dropIn = try #require(Self.read(root + Self.dropIn))
        #expect(dropIn.hasSuffix("\n[Service]\nReadWritePaths=-\(directory)\n"), "\(dropIn)")
        var status = stat()
        #expect(stat(root + directory, &status) == 0)
        #expect(status.st_gid == reachdGroup)
        #expect(status.st_mode & 0o777 == 0o770, "mode \(String(status.st_mode & 0o777, radix: 8))")

        let checked = try DaemonHarness.execute(productPath("reachd"), ["--check-config", "--config-dir", root + "/etc/reachd"])
        #expect(checked.status == 0 && checked.stdout.contains("\nTextfileDirectory=\(directory)\n"), "\(checked)")

        // A directory of the administrator's choice, made when missing; the same files rewritten.
        #expect(try Self.run(root, ["/srv/metrics"]).status == 0)
        #expect(Self.read(root + Self.conf)?.contains("TextfileDirectory=/srv/metrics\n") == true)
        #expect(Self.read(root + Self.dropIn)?.contains("ReadWritePaths=-/srv/metrics\n") == true)
        #expect(FileManager.default.fileExists(atPath: root + "/srv/metrics"))

        let off = try Self.run(root, ["off"])
        #expect(off.status == 0, "\(off)")
        #expect(!FileManager.default.fileExists(atPath: root + Self.conf))
        #expect(!FileManager.default.fileExists(atPath: root + "/etc/systemd/system/reachd.service.d"))
        #expect(FileManager.default.fileExists(atPath: root + directory), "the directory stays, as other collectors use it")
    }

    /// What cannot go into a unit file or reachd.conf as it is is refused (exit 2) before
    /// anything is written.
    @Test func unusablePathsAreRefusedBeforeAnythingIsWritten() throws {
        let root = try makeScratchDirectory("textfile-refused")
        defer { removeTree(root) }
        for arguments in [["relative/dir"], ["/with space"], ["/a/../etc"], ["/a/./b"], ["/per%cent"], ["--bogus"], ["offf"], ["/a", "/b"]] {
            let refused = try Self.run(root, arguments)
            #expect(refused.status == 2, "\(arguments): \(refused)")
            #expect(!refused.stderr.isEmpty, "\(arguments): says why")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: root).isEmpty)
    }
}
