import Foundation
import Testing
@testable import Reachability

// Packaging (issue 5): every file under packaging/ is checked here against the tools that will
// read it on a real host (systemd-analyze, dbus-daemon, man/groff, dpkg, systemd-nspawn) and
// against the code it describes. The Debian package itself is built, installed and removed only
// with REACHD_PACKAGE_TEST=1, because that takes minutes and changes this machine.

/// The exposure `systemd-analyze security --offline=true packaging/reachd.service` gives with
/// systemd 252, as packaging/README.md and the unit's header state it. Lower is better; a change
/// that lowers it should lower this figure and the two documents with it.
private let documentedExposure = 1.3

private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path
private let packaging = repository + "/packaging"
private let busName = "org.reachd.Reachability1"
private let objectPath = "/org/reachd/Reachability1"
private let nmName = "org.freedesktop.NetworkManager"
private let nmPath = "/org/freedesktop/NetworkManager"

// MARK: - The unit

@Suite("Packaging: systemd unit")
struct PackagingUnitTests {
    /// Root: the copy of the host's units includes directories only root may read.
    @Test(rootOnly) func verifyIsClean() async throws {
        let root = try PackagingRoot()
        defer { root.remove() }
        let clean = try await root.verify(unit: String(contentsOfFile: packaging + "/reachd.service", encoding: .utf8))
        #expect(clean.status == 0 && clean.stdout.isEmpty && clean.stderr.isEmpty, "\(clean)")

        // The same check fails for a unit with a mistake, so silence above means something.
        let broken = try await root.verify(unit: String(contentsOfFile: packaging + "/reachd.service", encoding: .utf8)
            .replacingOccurrences(of: "ProtectHome=yes", with: "ProtectHome=perhaps"))
        #expect(broken.stderr.contains("perhaps"), "\(broken)")
    }

    /// reachd-wait-online.service: clean for systemd-analyze, shaped as systemd.special(7) asks of
    /// a wait-online unit, and not tied to reachd so tightly that a reachd restart re-runs it.
    @Test(rootOnly) func waitOnlineUnitIsCleanAndOrdersNetworkOnline() async throws {
        let root = try PackagingRoot()
        defer { root.remove() }
        let clean = try await root.verify(
            unit: String(contentsOfFile: packaging + "/reachd.service", encoding: .utf8), unitName: "reachd-wait-online.service")
        #expect(clean.status == 0 && clean.stdout.isEmpty && clean.stderr.isEmpty, "\(clean)")

        let settings = try unitSettings("reachd-wait-online.service")
        for (key, value) in [
            ("Type", "oneshot"), ("RemainAfterExit", "yes"), ("DefaultDependencies", "no"),
            ("Before", "network-online.target shutdown.target"), ("WantedBy", "network-online.target"),
            ("After", "reachd.service"), ("Wants", "reachd.service"), ("Conflicts", "shutdown.target"),
            ("ExecStart", "/usr/bin/reachctl wait --from-config"), ("User", "reachd-is"), ("CapabilityBoundingSet", ""),
        ] {
            #expect(settings[key]?.contains(value) == true, "\(key)=\(value): have \(settings[key] ?? [])")
        }
        #expect(settings["Requires"] == nil)
    }

    /// reachd-is@.service: an instance is clean for systemd-analyze (a misspelt setting would not
    /// be), runs `reachctl hold` on its instance with every privilege dropped under a user of its
    /// own, restarts only after a clean end (a condition that ended), and has no start limit.
    @Test(rootOnly) func conditionUnitIsCleanAndHoldsNoPrivilege() async throws {
        let root = try PackagingRoot()
        defer { root.remove() }
        let reachd = try String(contentsOfFile: packaging + "/reachd.service", encoding: .utf8)
        for instance in ["online", "unmetered", "via-wifi", "no-portal"] {
            let clean = try await root.verify(unit: reachd, unitName: "reachd-is@\(instance).service")
            #expect(clean.status == 0 && clean.stdout.isEmpty && clean.stderr.isEmpty, "\(instance): \(clean)")
        }
        let settings = try unitSettings("reachd-is@.service")
        for (key, value) in [
            ("Type", "notify"), ("NotifyAccess", "main"), ("ExecStart", "/usr/bin/reachctl hold %i"), ("Restart", "on-success"),
            ("RestartSec", "0"), ("StartLimitIntervalSec", "0"), ("TimeoutStartSec", "infinity"), ("User", "reachd-is"),
            ("CapabilityBoundingSet", ""), ("NoNewPrivileges", "yes"), ("Wants", "reachd.service"), ("After", "reachd.service"),
        ] {
            #expect(settings[key] == [value], "\(key)=\(value): have \(settings[key] ?? [])")
        }
        // Never reachd's user (it may own reachd's bus name), nor a dynamic one (dbus-daemon closes
        // its connections), and never tied to reachd's restarts.
        #expect(settings["DynamicUser"] == nil && settings["Requires"] == nil && settings["BindsTo"] == nil)
        // Shipped inert: a bound service pulls an instance in; nothing enables the template.
        #expect(settings["WantedBy"] == nil)
        let security = try await execute(
            "/usr/bin/systemd-analyze", ["security", "--offline=true", "--no-pager", packaging + "/reachd-is@.service"])
        let exposure = try #require(Self.exposure(in: security.stdout), "\(security)")
        #expect(exposure <= 1.5, "reachd-is@.service exposure \(exposure): \(security.stdout)")
    }

    /// reachd-metrics.socket (issue 13): clean for systemd-analyze, loopback only, and naming
    /// its socket for reachd.service, whose own unit (and so its exposure) it leaves alone.
    @Test(rootOnly) func metricsSocketIsCleanLoopbackAndNamed() async throws {
        let root = try PackagingRoot()
        defer { root.remove() }
        let clean = try await root.verify(
            unit: String(contentsOfFile: packaging + "/reachd.service", encoding: .utf8), unitName: "reachd-metrics.socket")
        #expect(clean.status == 0 && clean.stdout.isEmpty && clean.stderr.isEmpty, "\(clean)")
        let settings = try unitSettings("reachd-metrics.socket")
        #expect(settings["ListenStream"] == ["127.0.0.1:9849"])
        #expect(settings["FileDescriptorName"] == ["metrics"])
        #expect(settings["Service"] == ["reachd.service"])
        #expect(settings["WantedBy"] == ["sockets.target"])
        // reachd.service needs nothing for it: no Sockets=, no new address family or privilege.
        #expect(try unitSettings()["Sockets"] == nil)
    }

    /// The drop-in an administrator links when turning the NetworkManager surface on: clean, and
    /// what it adds is the conflict with NetworkManager and the ordering before sessions.
    @Test(rootOnly) func networkManagerDropInIsClean() async throws {
        let root = try PackagingRoot()
        defer { root.remove() }
        let unit = try String(contentsOfFile: packaging + "/reachd.service", encoding: .utf8)
        let verified = try await root.verify(unit: unit, dropIn: packaging + "/reachd-networkmanager.dropin.conf")
        #expect(verified.status == 0 && verified.stdout.isEmpty && verified.stderr.isEmpty, "\(verified)")
        let settings = try unitSettings("reachd-networkmanager.dropin.conf")
        #expect(settings["Conflicts"] == ["NetworkManager.service"])
        #expect(settings["Before"]?.first?.contains("systemd-user-sessions.service") == true)
        // reachd.service itself never conflicts: reachd alone runs fine beside NetworkManager.
        #expect(try unitSettings()["Conflicts"] == nil)
    }

    /// reachd-login-page.service, a user unit: clean for the user manager's systemd-analyze (with
    /// reachctl where it is built, the man pages beside it; a misspelt value would not be), run with
    /// the graphical session, retried after a failure, and stopping reachctl only, never the
    /// browser it started; shipped disabled (postinst enables nothing for users).
    @Test func loginPageUserUnitIsCleanAndLeavesTheBrowserAlone() async throws {
        let scratch = try makeScratchDirectory("reachd-user-unit")
        defer { removeTree(scratch) }
        for page in ["reachd.8", "reachctl.1"] {
            let directory = scratch + "/man/man" + page.split(separator: ".").last!
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: packaging + "/man/" + page, toPath: directory + "/" + page)
        }
        var environment = ProcessInfo.processInfo.environment
        (environment["XDG_RUNTIME_DIR"], environment["MANPATH"]) = (scratch, scratch + "/man")
        let shipped = try String(contentsOfFile: packaging + "/reachd-login-page.service", encoding: .utf8)
        func verify(_ text: String) async throws -> Ran {
            let unit = scratch + "/reachd-login-page.service"
            try text.replacingOccurrences(of: "/usr/bin/reachctl", with: productPath("reachctl")).write(toFile: unit, atomically: true, encoding: .utf8)
            return try await execute("/usr/bin/systemd-analyze", ["--user", "verify", unit], environment: environment)
        }
        let clean = try await verify(shipped)
        #expect(clean.status == 0 && clean.stdout.isEmpty && clean.stderr.isEmpty, "\(clean)")
        let broken = try await verify(shipped.replacingOccurrences(of: "KillMode=process", with: "KillMode=perhaps"))
        #expect(broken.stderr.contains("perhaps"), "\(broken)")
        let settings = try unitSettings("reachd-login-page.service")
        for (key, value) in [
            ("ExecStart", "/usr/bin/reachctl login-page"), ("Restart", "on-failure"), ("KillMode", "process"),
            ("WantedBy", "graphical-session.target"), ("PartOf", "graphical-session.target"), ("After", "graphical-session.target"),
        ] {
            #expect(settings[key] == [value], "\(key)=\(value): have \(settings[key] ?? [])")
        }
        // The browser inherits whatever the unit sets: no NoNewPrivileges= to break its sandbox.
        #expect(settings["NoNewPrivileges"] == nil && settings["User"] == nil)
        let postinst = try String(contentsOfFile: packaging + "/debian/postinst", encoding: .utf8)
        #expect(!postinst.contains("reachd-login-page"), "shipped disabled")
    }

    @Test func exposureStaysAtTheDocumentedFigure() async throws {
        let result = try await execute(
            "/usr/bin/systemd-analyze", ["security", "--offline=true", "--no-pager", packaging + "/reachd.service"])
        let exposure = try #require(Self.exposure(in: result.stdout), "\(result)")
        #expect(exposure <= documentedExposure, "exposure rose to \(exposure): \(result.stdout)")

        // The documents give the same figure.
        let readme = try String(contentsOfFile: packaging + "/README.md", encoding: .utf8)
        #expect(Self.exposure(in: readme) == documentedExposure)
        let unit = try String(contentsOfFile: packaging + "/reachd.service", encoding: .utf8)
        #expect(unit.contains("security --offline=true`: \(documentedExposure)"))
    }

    /// The figure of "Overall exposure level for reachd.service: 1.1 OK".
    static func exposure(in text: String) -> Double? {
        // "Overall exposure level for UNIT: 1.1 OK", whichever unit was analysed.
        guard let line = text.range(of: "Overall exposure level for "), let colon = text[line.upperBound...].range(of: ": ")
        else { return nil }
        return Double(text[colon.upperBound...].prefix { $0.isNumber || $0 == "." })
    }

    @Test func hardeningSettingsThatMatterArePresent() throws {
        let settings = try unitSettings()
        for (key, value) in [
            ("Type", "notify"), ("BusName", busName), ("ExecStart", "/usr/sbin/reachd --system"),
            ("ExecReload", "/bin/kill -HUP $MAINPID"), ("Restart", "on-failure"), ("User", "reachd"),
            ("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("CapabilityBoundingSet", ""),
            ("RestrictAddressFamilies", "AF_UNIX AF_NETLINK AF_INET AF_INET6"),
            ("SystemCallArchitectures", "native"), ("MemoryDenyWriteExecute", "yes"),
        ] {
            #expect(settings[key]?.contains(value) == true, "\(key)=\(value): have \(settings[key] ?? [])")
        }
        #expect(settings["WatchdogSec"]?.isEmpty == false)
        #expect(settings["SystemCallFilter"]?.first == "@system-service")
        #expect(settings["DynamicUser"] == nil, "the bus policy needs a static user; see the unit's comment")
        #expect(settings["PrivateUsers"] == nil, "each caller's route is asked as its uid: a user namespace would make it no user")
    }

    @Test func sysusersDeclaresASystemUserWithoutLogin() async throws {
        let root = try makeScratchDirectory("reachd-sysusers")
        defer { removeTree(root) }
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        let made = try await execute("/usr/bin/systemd-sysusers", ["--root=\(root)", packaging + "/reachd.sysusers"])
        #expect(made.status == 0, "\(made)")
        let passwd = try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8)
        let fields = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("reachd:") })
            .split(separator: ":", omittingEmptySubsequences: false)
        #expect(fields.count == 7)
        #expect(Int(fields[2]).map { $0 > 0 && $0 < 1000 } == true, "a system uid: \(fields)")
        #expect(fields[6] == "/usr/sbin/nologin")
        // reachd-is@.service's user, another system user without login.
        let own = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("reachd-is:") }).split(separator: ":", omittingEmptySubsequences: false)
        #expect(Int(own[2]).map { $0 > 0 && $0 < 1000 } == true && own[2] != fields[2] && own[6] == "/usr/sbin/nologin", "\(own)")
    }
}

/// `KEY` -> values, from the unit's `KEY=VALUE` lines in file order.
private func unitSettings(_ unit: String = "reachd.service") throws -> [String: [String]] {
    var settings: [String: [String]] = [:]
    for line in try String(contentsOfFile: packaging + "/" + unit, encoding: .utf8).split(separator: "\n") {
        guard !line.hasPrefix("#"), !line.hasPrefix("["), let equals = line.firstIndex(of: "=") else { continue }
        settings[String(line[..<equals]), default: []].append(String(line[line.index(after: equals)...]))
    }
    return settings
}

/// A temporary root for `systemd-analyze verify --root`: a copy of the host's units (the targets
/// and sockets the unit names must exist), stubs where the unit's commands are, and the man pages
/// on a MANPATH of their own, so that the man: links of Documentation= are checked too.
private struct PackagingRoot {
    let path: String

    init() throws {
        path = try makeScratchDirectory("reachd-verify")
        do {
            try fill()
        } catch {
            remove()
            throw error
        }
    }

    private func fill() throws {
        let manager = FileManager.default
        try manager.createDirectory(atPath: path + "/usr/lib/systemd", withIntermediateDirectories: true)
        try manager.copyItem(atPath: "/usr/lib/systemd/system", toPath: path + "/usr/lib/systemd/system")
        for stub in ["/usr/sbin/reachd", "/usr/bin/reachctl", "/bin/kill"] {
            try manager.createDirectory(atPath: path + (stub as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            _ = manager.createFile(atPath: path + stub, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        }
        for page in ["reachd.8", "reachctl.1", "reachd.conf.5"] {
            let directory = path + "/man/man" + page.split(separator: ".").last!
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try manager.copyItem(atPath: packaging + "/man/" + page, toPath: directory + "/" + page)
        }
    }

    /// Verifies `unitName` with `text` as reachd.service and the other shipped units beside it.
    func verify(unit text: String, unitName: String = "reachd.service", dropIn: String? = nil) async throws -> Ran {
        let dropInDirectory = path + "/etc/systemd/system/reachd.service.d"
        removeTree(dropInDirectory)
        if let dropIn {
            try FileManager.default.createDirectory(atPath: dropInDirectory, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: dropIn, toPath: dropInDirectory + "/networkmanager.conf")
        }
        let unit = path + "/usr/lib/systemd/system/reachd.service"
        try? FileManager.default.removeItem(atPath: unit)
        try text.write(toFile: unit, atomically: true, encoding: .utf8)
        for other in ["reachd.socket", "reachd-wait-online.service", "reachd-metrics.socket", "reachd-is@.service"] {
            let copy = path + "/usr/lib/systemd/system/" + other
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: packaging + "/" + other, toPath: copy)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["MANPATH"] = path + "/man"
        return try await execute(
            "/usr/bin/systemd-analyze", ["verify", "--root=\(path)", unitName], environment: environment)
    }

    func remove() { removeTree(path) }
}

// MARK: - Man pages and completions

@Suite("Packaging: man pages and completions")
struct PackagingDocumentationTests {
    static let pages = ["reachd.8", "reachctl.1", "reachd.conf.5"]

    @Test(arguments: pages) func pageRendersWithoutWarnings(_ page: String) async throws {
        let path = packaging + "/man/" + page
        let groff = try await execute("/usr/bin/groff", ["-man", "-ww", "-z", path])
        #expect(groff.status == 0 && groff.stderr.isEmpty, "\(groff)")
        var environment = ProcessInfo.processInfo.environment
        environment["MANWIDTH"] = "80"
        let man = try await execute("/usr/bin/man", ["--warnings", "-l", path], environment: environment)
        #expect(man.status == 0 && man.stderr.isEmpty, "\(man.stderr)")
        #expect(man.stdout.contains("SEE ALSO"))
    }

    @Test func aBrokenPageIsCaught() async throws {
        let directory = try makeScratchDirectory("reachd-man")
        defer { removeTree(directory) }
        try ".TH X 1\n.SH NAME\nx \\- y\n.BOGUS macro\n\\f(XX\n".write(toFile: directory + "/x.1", atomically: true, encoding: .utf8)
        let groff = try await execute("/usr/bin/groff", ["-man", "-ww", "-z", directory + "/x.1"])
        #expect(!groff.stderr.isEmpty)
    }

    /// Every `--option` a man page names: `\-\-name` in roff, where `\-` is a hyphen.
    static func options(in page: String) throws -> Set<String> {
        let text = try String(contentsOfFile: packaging + "/man/" + page, encoding: .utf8)
        var names = Set<String>()
        var rest = text[...]
        while let range = rest.range(of: "\\-\\-") {
            var name = ""
            var characters = rest[range.upperBound...].makeIterator()
            while let character = characters.next() {
                if character.isLetter || character.isNumber || character == "-" {
                    name.append(character)
                } else if character == "\\", let next = characters.next() {
                    guard next == "-" else { break }
                    name.append("-")
                } else {
                    break
                }
            }
            names.insert(name)
            rest = rest[range.upperBound...]
        }
        return names
    }

    @Test func reachdPageMatchesTheDaemon() async throws {
        let help = try await execute(productPath("reachd"), ["--help"])
        #expect(help.status == 0)
        var helpOptions = Set<String>()
        for word in help.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," }) where word.hasPrefix("--") {
            helpOptions.insert(String(word.dropFirst(2).prefix { $0.isLetter || $0 == "-" }))
        }
        #expect(helpOptions.count >= 9, "\(helpOptions)")
        let pageOptions = try Self.options(in: "reachd.8")
        #expect(helpOptions.subtracting(pageOptions).isEmpty, "reachd --help has options reachd(8) lacks")
        #expect(pageOptions.subtracting(helpOptions).isEmpty, "reachd(8) names options reachd lacks")

        // Every member of the shipped interface, and every error name the daemon sends (its own
        // D-Bus contract's, and any spelled in reachd).
        let page = try String(contentsOfFile: packaging + "/man/reachd.8", encoding: .utf8)
        let xml = try String(contentsOfFile: packaging + "/org.reachd.Reachability1.xml", encoding: .utf8)
        let members = Self.members(inInterfaceXML: xml)
        #expect(members.count >= 15, "\(members)")
        for member in members { #expect(page.contains(".B \(member) ") || page.contains(".BI \(member)("), "reachd(8) lacks \(member)") }
        var errors = Set<String>()
        for file in try FileManager.default.contentsOfDirectory(atPath: repository + "/Sources/reachd") {
            let source = try String(contentsOfFile: repository + "/Sources/reachd/" + file, encoding: .utf8)
            errors.formUnion(Self.names(after: "org.reachd.Reachability1.Error.", in: source))
        }
        let contract = try String(contentsOfFile: repository + "/Sources/Reachability/Client/ReachdContract.swift", encoding: .utf8)
        errors.formUnion(Self.names(after: "org.reachd.Reachability1.Error.", in: contract))
        #expect(!errors.isEmpty)
        #expect(errors == Self.names(after: "org.reachd.Reachability1.Error.", in: page), "errors the daemon sends vs. reachd(8)")
    }

    /// The methods, properties and signals of reachd's own interfaces in introspection XML.
    static func members(inInterfaceXML xml: String) -> Set<String> {
        var members = Set<String>()
        for chunk in xml.components(separatedBy: "<interface name=\"").dropFirst()
        where chunk.hasPrefix("org.reachd.Reachability1\"") || chunk.hasPrefix("org.reachd.Reachability1.Watch\"") {
            let body = chunk.components(separatedBy: "</interface>")[0]
            for kind in ["method", "property", "signal"] {
                members.formUnion(names(after: "<\(kind) name=\"", in: body))
            }
        }
        return members
    }

    static func names(after prefix: String, in text: String) -> Set<String> {
        Set(text.components(separatedBy: prefix).dropFirst().map { String($0.prefix { $0.isLetter || $0.isNumber }) })
    }

    @Test func reachctlPageMatchesTheCommands() async throws {
        let dump = try await execute(reachctlPath(), ["--experimental-dump-help"])
        let root = try #require(JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let command = try #require(root["command"] as? [String: Any])
        let subcommands = try #require(command["subcommands"] as? [[String: Any]])
        var codeOptions: Set<String> = ["generate-completion-script"]
        var codeCommands = Set<String>()
        for subcommand in subcommands where subcommand["shouldDisplay"] as? Bool != false {
            codeCommands.insert(try #require(subcommand["commandName"] as? String))
            for argument in subcommand["arguments"] as? [[String: Any]] ?? [] where argument["shouldDisplay"] as? Bool != false {
                for name in argument["names"] as? [[String: String]] ?? [] where name["kind"] == "long" {
                    codeOptions.insert(name["name"]!)
                }
            }
        }
        #expect(codeCommands.isSuperset(of: ["status", "interfaces", "check", "monitor", "help"]), "\(codeCommands)")
        let pageOptions = try Self.options(in: "reachctl.1")
        #expect(codeOptions.subtracting(pageOptions).isEmpty, "reachctl has options reachctl(1) lacks")
        #expect(pageOptions.subtracting(codeOptions).isEmpty, "reachctl(1) names options reachctl lacks")

        // The COMMANDS section: one `.TP` entry per subcommand, no more, no less.
        let page = try String(contentsOfFile: packaging + "/man/reachctl.1", encoding: .utf8)
        let section = try #require(page.components(separatedBy: ".SH COMMANDS\n").last?.components(separatedBy: "\n.SH ").first)
        let documented = Set(section.components(separatedBy: ".TP\n").dropFirst().compactMap { entry -> String? in
            let words = entry.split(separator: "\n").first?.split(separator: " ") ?? []
            // roff's `\-` is the hyphen of a name (login\-page).
            return words.count > 1 ? String(words[1]).replacingOccurrences(of: "\\-", with: "-") : nil
        })
        #expect(documented == codeCommands, "reachctl(1) COMMANDS vs. reachctl's subcommands")
    }

    @Test func reachdConfPageMatchesTheConfiguration() throws {
        let page = try String(contentsOfFile: packaging + "/man/reachd.conf.5", encoding: .utf8)
        var codeKeys = Set<String>()
        for section in ConfigurationSection.allCases {
            #expect(page.contains(".SH [\(section.name)] SECTION"), "reachd.conf(5) lacks [\(section.name)]")
            codeKeys.formUnion(section.keyNames)
        }
        let pageKeys = Self.names(after: ".BI ", in: page).filter { page.contains(".BI \($0)=") }
        #expect(pageKeys == codeKeys, "reachd.conf(5) keys vs. ConfigurationSection")

        // Each default the page states is the built-in one (as --check-config prints it), looked
        // up in its own section: two sections may share a key name (Timeout=).
        var section = ""
        for line in Configuration.default.mergedText.split(separator: "\n") where !line.hasPrefix("#") {
            if line.hasPrefix("[") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard line.contains("=") else { continue }
            let parts = line.split(separator: "=", maxSplits: 1)
            let key = String(parts[0])
            let sectionText = page.components(separatedBy: ".SH [\(section)] SECTION").dropFirst().first?.components(separatedBy: "\n.SH ").first ?? page
            let entry = try #require(sectionText.components(separatedBy: ".BI \(key)=").dropFirst().first, "reachd.conf(5) [\(section)] lacks \(key)")
            let paragraph = entry.components(separatedBy: ".TP\n")[0].components(separatedBy: "\n.SH")[0]
            #expect(paragraph.contains("Default: \(parts[1])."), "reachd.conf(5) on \(key): expected Default: \(parts[1])")
        }
    }

    @Test(arguments: ["bash", "zsh", "fish"]) func completionIsGeneratedFromReachctl(_ shell: String) async throws {
        let script = try await execute(reachctlPath(), ["--generate-completion-script", shell])
        #expect(script.status == 0)
        for command in ["status", "interfaces", "check", "monitor", "json", "netns", "timeout"] {
            #expect(script.stdout.contains(command), "\(shell) completion lacks \(command)")
        }
        if shell == "bash" {
            let directory = try makeScratchDirectory("reachd-completion")
            defer { removeTree(directory) }
            try script.stdout.write(toFile: directory + "/reachctl", atomically: true, encoding: .utf8)
            let syntax = try await execute("/bin/bash", ["-n", directory + "/reachctl"])
            #expect(syntax.status == 0 && syntax.stderr.isEmpty, "\(syntax)")
        }
    }

    @Test func daemonLinksNoFoundation() async throws {
        let libraries = try await execute("/usr/bin/ldd", [productPath("reachd")])
        #expect(libraries.status == 0)
        #expect(!libraries.stdout.contains("Foundation"), "\(libraries.stdout)")
    }
}

// MARK: - D-Bus policy

@Suite("Packaging: D-Bus policy", rootOnly)
struct PackagingBusPolicyTests {
    @Test func everyoneMayAskOnlyReachdMayOwn() async throws {
        let bus = try await SystemLikeBus()
        defer { bus.stop() }
        // With the NetworkManager surface on, so that its policy is tried too.
        try "[Compatibility]\nNetworkManager=yes\n".write(toFile: bus.configDirectory + "/reachd.conf", atomically: true, encoding: .utf8)
        chmod(bus.configDirectory + "/reachd.conf", 0o644)

        // nobody cannot own the name, even while no one has it: the policy says no.
        let intruder = try await execute(
            "/usr/bin/setpriv", asUser("nobody", "nogroup") + [bus.reachd, "--bus-address", bus.address, "--config-dir", bus.configDirectory],
            environment: plainEnvironment, timeout: .seconds(10))
        #expect(intruder.status == 1, "\(intruder)")
        #expect(intruder.stderr.contains("not allowed to own"), "\(intruder.stderr)")

        // reachd's own user can.
        let daemon = try ChildProcess(
            "/usr/bin/setpriv", asUser("reachd", "reachd") + [bus.reachd, "--bus-address", bus.address, "--config-dir", bus.configDirectory],
            environment: plainEnvironment)
        defer { daemon.kill() }
        try await bus.waitForOwner(of: busName, while: daemon)
        try await bus.waitForOwner(of: "org.freedesktop.NetworkManager", while: daemon)

        // A watch held by another client, for nobody to read.
        let holder = try BusConnection(.address(bus.address), description: "watch-holder")
        let reply = try holder.call(
            destination: busName, path: objectPath, interface: busName, member: "Watch", timeout: .seconds(10)
        ) { message throws(BusError) in try message.append("127.0.0.1") }
        let watch = try withExtendedLifetime(reply) { try reply.message.readObjectPath() }

        // nobody may ask everything a client needs...
        let nobody = { (arguments: [String]) async throws -> Ran in
            try await execute("/usr/bin/setpriv", asUser("nobody", "nogroup") + ["/usr/bin/busctl", "--address=\(bus.address)"] + arguments,
                              environment: plainEnvironment)
        }
        let call = ["call", busName, objectPath, busName]
        for (arguments, expected) in [
            (call + ["GetStatus"], "a{sv} 35"),
            (call + ["ListInterfaces"], "a(issuas)"),
            (call + ["CheckAddress", "s", "127.0.0.1"], "\"lo\""),
            (call + ["CheckHost", "su", "localhost", "2000"], "\"127.0.0.1\""),
            (call + ["Watch", "s", "127.0.0.1"], "o \"/org/reachd/Reachability1/watch/"),
            (["get-property", busName, objectPath, busName, "State"], "s \""),
            (["call", busName, objectPath, "org.freedesktop.DBus.Properties", "GetAll", "s", busName], "a{sv}"),
            (["get-property", busName, watch, "org.reachd.Reachability1.Watch", "Target"], "s \"127.0.0.1\""),
            (["call", busName, objectPath, "org.freedesktop.DBus.Introspectable", "Introspect"], "GetStatus"),
            (["call", busName, objectPath, "org.freedesktop.DBus.Peer", "GetMachineId"], "s \""),
            // What GLib's and Qt's NetworkManager backends read (reachd-networkmanager.conf).
            (["get-property", nmName, nmPath, nmName, "State"], "u "),
            (["call", nmName, nmPath, "org.freedesktop.DBus.Properties", "GetAll", "s", nmName], "a{sv} 4 "),
            (["call", nmName, nmPath, "org.freedesktop.DBus.Introspectable", "Introspect"], "PrimaryConnection"),
        ] {
            let answer = try await nobody(arguments)
            #expect(answer.status == 0 && answer.stdout.contains(expected), "nobody: busctl \(arguments.joined(separator: " ")): \(answer)")
        }

        // The same by reachd's unique name, as reachctl calls it once it found the owner: the
        // bus applies the rules for a name to every connection that owns it.
        let owner = try await execute("/usr/bin/busctl", [
            "--address=\(bus.address)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
            "GetNameOwner", "s", busName,
        ]).stdout.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
        #expect(owner.hasPrefix(":"))
        let byUniqueName = try await nobody(["call", owner, objectPath, busName, "GetStatus"])
        #expect(byUniqueName.status == 0 && byUniqueName.stdout.hasPrefix("a{sv}"), "\(byUniqueName)")

        // dbus-send prints the whole error: the bus's own refusal reads "Rejected send message".
        let send = { (member: String, path: String, arguments: [String]) async throws -> Ran in
            try await execute("/usr/bin/setpriv", asUser("nobody", "nogroup") + [
                "/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply", "--dest=\(busName)", path, member,
            ] + arguments, environment: plainEnvironment)
        }
        // What the policy lets through reaches reachd, which answers for itself...
        let watchCall = try await send("org.reachd.Reachability1.Watch.Frobnicate", watch, [])
        #expect(watchCall.stderr.contains("org.freedesktop.DBus.Error.UnknownMethod"), "\(watchCall)")
        // ...and everything else is refused by the bus before it reaches reachd.
        let nmSet = try await execute("/usr/bin/setpriv", asUser("nobody", "nogroup") + [
            "/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply", "--dest=\(nmName)", nmPath,
            "org.freedesktop.DBus.Properties.Set", "string:\(nmName)", "string:State", "variant:uint32:70",
        ], environment: plainEnvironment)
        #expect(nmSet.status != 0 && nmSet.stderr.contains("AccessDenied: Rejected send message"), "nobody: Set on NetworkManager: \(nmSet)")
        for (member, arguments) in [
            ("org.freedesktop.DBus.Properties.Set", ["string:\(busName)", "string:State", "variant:string:online"]),
            ("org.reachd.Reachability1.Private.Anything", []),
            ("org.freedesktop.DBus.ObjectManager.GetManagedObjects", []),
        ] {
            let refused = try await send(member, objectPath, arguments)
            #expect(refused.status != 0 && refused.stderr.contains("AccessDenied: Rejected send message"), "nobody: \(member): \(refused)")
        }

        // The activation file is read: the bus can start reachd by name.
        let activatable = try await execute(
            "/usr/bin/busctl", ["--address=\(bus.address)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                "org.freedesktop.DBus", "ListActivatableNames"])
        #expect(activatable.stdout.contains("\"\(busName)\""), "\(activatable)")

        withExtendedLifetime(holder) {}
        daemon.signal(SIGTERM)
        #expect(try await daemon.exit(timeout: .seconds(10)) == 0, "\(daemon.errorOutput)")
    }
}

/// A dbus-daemon configured like Debian's system bus (`/usr/share/dbus-1/system.conf`: nobody owns
/// anything, no method calls, unless a policy file says otherwise) that includes the shipped
/// policy and activation file, in a directory every user can reach, with a copy of reachd there.
private final class SystemLikeBus: @unchecked Sendable {
    let directory: String
    let address: String
    let reachd: String
    let configDirectory: String
    private var daemon: ChildProcess?

    init() async throws {
        // The user the package creates, from the shipped sysusers.d file (nothing if it exists).
        let sysusers = try await execute("/usr/bin/systemd-sysusers", [packaging + "/reachd.sysusers"])
        guard sysusers.status == 0 else { throw CommandFailed(command: "systemd-sysusers", status: sysusers.status, output: sysusers.stderr) }

        directory = try makeScratchDirectory("reachd-sysbus")
        reachd = directory + "/reachd"
        configDirectory = directory + "/config"
        address = "unix:path=\(directory)/system_bus_socket"
        do {
            try start()
            try await waitForFile(directory + "/system_bus_socket", while: daemon!)
            // A policy the bus could not use (an unknown user, a bad element) is only a warning:
            // refuse it. (Not being allowed to raise its fd limit, in a test sandbox, is no concern.)
            try await Task.sleep(for: .milliseconds(100))
            let warnings = daemon!.errorOutput.split(separator: "\n").filter { !$0.contains("fd limit") }
            guard warnings.isEmpty else { throw CommandFailed(command: "dbus-daemon", status: 0, output: daemon!.errorOutput) }
        } catch {
            stop()
            throw error
        }
    }

    private func start() throws {
        chmod(directory, 0o755)
        let manager = FileManager.default
        try manager.createDirectory(atPath: configDirectory, withIntermediateDirectories: true)
        try manager.createDirectory(atPath: directory + "/services", withIntermediateDirectories: true)
        try manager.copyItem(
            atPath: packaging + "/org.reachd.Reachability1.service", toPath: directory + "/services/org.reachd.Reachability1.service")
        try manager.copyItem(atPath: productPath("reachd"), toPath: reachd)
        chmod(reachd, 0o755)

        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <auth>EXTERNAL</auth>
              <listen>\(address)</listen>
              <servicedir>\(directory)/services</servicedir>
              <policy context="default">
                <allow user="*"/>
                <deny own="*"/>
                <deny send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_requested_reply="true" send_type="method_return"/>
                <allow send_requested_reply="true" send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
                <allow receive_type="signal"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
                <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus" send_member="UpdateActivationEnvironment"/>
              </policy>
              <include>\(packaging)/org.reachd.Reachability1.conf</include>
              <include>\(packaging)/reachd-networkmanager.conf</include>
            </busconfig>
            """
        try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        daemon = try ChildProcess("/usr/bin/dbus-daemon", ["--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile", "--nosyslog"])
    }

    func waitForOwner(of name: String, while process: ChildProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            let owned = try await execute("/usr/bin/busctl", [
                "--address=\(address)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "NameHasOwner", "s", name,
            ])
            if owned.stdout.contains("b true") { return }
            guard ContinuousClock.now < deadline, process.isRunning else {
                throw CommandFailed(command: "wait for \(name)", status: -1, output: process.errorOutput)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func stop() {
        daemon?.kill()
        removeTree(directory)
    }
}

private func asUser(_ user: String, _ group: String) -> [String] {
    ["--reuid=\(user)", "--regid=\(group)", "--clear-groups", "--"]
}

/// What a daemon gets from systemd, less systemd's own variables: no NOTIFY_SOCKET, no JOURNAL_STREAM.
private let plainEnvironment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"]

// MARK: - The sandbox, from what reachd actually does

@Suite("Packaging: sandbox fits the daemon", rootOnly, .enabled(if: programExists("/usr/bin/strace"), "needs strace (scripts/deps)"))
struct PackagingSandboxTests {
    /// Runs reachd under strace through a session that touches every path: start, netlink dump and
    /// changes, D-Bus calls of every kind, DNS over the network (dnsmasq), a watch, a reload and a
    /// stop. Then holds the trace against the unit: SystemCallFilter=, RestrictAddressFamilies=,
    /// MemoryDenyWriteExecute=, ProcSubset=pid, ProtectSystem=strict and RestrictNamespaces=.
    @Test func everySystemCallSocketAndFileFitsTheUnit() async throws {
        let scenario = try DNSScenario(nameserver: DNSScenario.answering)
        let dns = try DNSMasqServer(in: scenario.server, address: DNSScenario.answering, records: ["up.test": ["203.0.113.10"]])
        let directory = try makeScratchDirectory("reachd-strace")
        defer { removeTree(directory) }
        let bus = try ChildProcess("/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--nosyslog", "--address=unix:path=\(directory)/bus"])
        defer { bus.kill() }
        let address = "unix:path=\(directory)/bus"
        try await waitForFile(directory + "/bus", while: bus)
        try FileManager.default.createDirectory(atPath: directory + "/config", withIntermediateDirectories: true)
        // What StateDirectory= makes writable, as systemd tells it: the outage clock's file goes there.
        let state = directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let trace = directory + "/trace"
        let tracer = try ChildProcess("/usr/sbin/ip", [
            "netns", "exec", scenario.client.name, "/usr/bin/strace", "-f", "-qq", "-o", trace, productPath("reachd"),
            "--bus-address", address, "--config-dir", directory + "/config", "--resolv-conf", scenario.resolvConf.path,
        ], environment: plainEnvironment.merging(["STATE_DIRECTORY": state]) { $1 })
        defer { tracer.kill() }
        let busctl = { (arguments: [String]) async throws -> Ran in
            try await execute("/usr/bin/busctl", ["--address=\(address)"] + arguments)
        }
        // Under strace -f, beside the main pass's hundred tests: 30 s was once too few to answer.
        let deadline = ContinuousClock.now + .seconds(90)
        while !(try await busctl(["call", busName, objectPath, busName, "GetStatus"]).stdout.contains("online")) {
            guard ContinuousClock.now < deadline, tracer.isRunning else { throw TimedOut(what: "reachd online: \(tracer.errorOutput)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        let call = ["call", busName, objectPath, busName]
        for arguments in [
            call + ["ListInterfaces"], call + ["CheckAddress", "s", "192.0.2.1"], call + ["CheckHost", "su", "up.test", "3000"],
            call + ["CheckHost", "su", "nothere.test", "3000"], call + ["Watch", "s", "up.test"],
            ["call", busName, objectPath, "org.freedesktop.DBus.Properties", "GetAll", "s", busName],
            ["introspect", busName, objectPath],
        ] {
            let answer = try await busctl(arguments)
            #expect(answer.status == 0, "busctl \(arguments.joined(separator: " ")): \(answer)")
        }
        #expect(dns.queries(for: "up.test") >= 1, "the host check went over the network")
        // A carrier flap (netlink changes), then a reload, then a stop.
        try scenario.server.ip("link set up0s down")
        try await Task.sleep(for: .milliseconds(200))
        try scenario.server.ip("link set up0s up")
        try await Task.sleep(for: .milliseconds(200))
        let reachd = try #require(try await descendant(of: tracer.pid, named: "reachd"))
        kill(reachd, SIGHUP)
        try tracer.waitForErrorLine(containing: "configuration reloaded", timeout: .seconds(10))
        kill(reachd, SIGTERM)
        #expect(try await tracer.exit(timeout: .seconds(20)) == 0, "\(tracer.errorOutput)")

        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init)
        let calls = lines.compactMap(Self.call)
        #expect(calls.count > 200, "the trace has \(calls.count) calls")
        let filter = try await Self.allowedSystemCalls()
        let outside = Set(calls.map(\.name)).subtracting(filter)
        #expect(outside.isEmpty, "system calls outside SystemCallFilter=: \(outside.sorted())")

        let families = Set(try unitSettings()["RestrictAddressFamilies"]?.flatMap { $0.split(separator: " ").map(String.init) } ?? [])
        for socket in calls where socket.name == "socket" {
            let family = String(socket.arguments.prefix { $0 != "," })
            #expect(families.contains(family), "socket family \(family) outside RestrictAddressFamilies=")
        }
        for mapping in calls where ["mmap", "mprotect", "pkey_mprotect"].contains(mapping.name) {
            let writableAndExecutable = mapping.arguments.contains("PROT_WRITE") && mapping.arguments.contains("PROT_EXEC")
            let madeExecutable = mapping.name != "mmap" && mapping.arguments.contains("PROT_EXEC")
            #expect(!writableAndExecutable && !madeExecutable, "MemoryDenyWriteExecute= would refuse: \(mapping.name)(\(mapping.arguments))")
        }
        for open in calls where open.name == "openat" || open.name == "open" {
            guard let path = open.arguments.components(separatedBy: "\"").dropFirst().first else { continue }
            if path.hasPrefix("/proc/") {
                let component = path.dropFirst(6).prefix { $0 != "/" }
                // sd-event reads the boot id to spread its timers and does without when it is hidden.
                let allowed = component == "self" || component == "thread-self" || component.allSatisfy(\.isNumber)
                    || path == "/proc/sys/kernel/random/boot_id"
                #expect(allowed, "ProcSubset=pid hides \(path)")
            }
            let writes = ["O_WRONLY", "O_RDWR", "O_CREAT"].contains { open.arguments.contains($0) }
            #expect(!writes || path == "/dev/null" || path.hasPrefix(state + "/"), "ProtectSystem=strict: reachd opens \(path) to write")
        }
        #expect(FileManager.default.fileExists(atPath: state + "/outage-clock"), "the outage clock's file, written in StateDirectory=")
        for name in ["setns", "unshare"] { #expect(!calls.contains { $0.name == name }, "RestrictNamespaces=: \(name)") }
        #expect(!calls.contains { $0.name.hasPrefix("clone") && $0.arguments.contains("CLONE_NEW") })
    }

    struct Call {
        var name: String
        var arguments: Substring
    }

    /// `PID name(arguments) = result` from `strace -f`; nil for signals, exits and resumptions.
    static func call(_ line: String) -> Call? {
        let afterPID = line.drop { $0.isNumber }.drop { $0 == " " }
        let name = afterPID.prefix { $0.isLowercase || $0.isNumber || $0 == "_" }
        guard !name.isEmpty, afterPID.dropFirst(name.count).first == "(" else { return nil }
        return Call(name: String(name), arguments: afterPID.dropFirst(name.count + 1))
    }

    /// The system calls the unit's SystemCallFilter= lines allow: the allow-list groups, less the
    /// `~` ones, each expanded by `systemd-analyze syscall-filter`.
    static func allowedSystemCalls() async throws -> Set<String> {
        var allowed = Set<String>()
        var denied = Set<String>()
        for value in try unitSettings()["SystemCallFilter"] ?? [] {
            let deny = value.hasPrefix("~")
            for item in value.drop(while: { $0 == "~" }).split(separator: " ") {
                let calls = try await expand(String(item))
                if deny { denied.formUnion(calls) } else { allowed.formUnion(calls) }
            }
        }
        #expect(allowed.count > 100)
        return allowed.subtracting(denied)
    }

    static func expand(_ item: String) async throws -> Set<String> {
        guard item.hasPrefix("@") else { return [item] }
        let listing = try await execute("/usr/bin/systemd-analyze", ["syscall-filter", "--no-pager", item])
        var calls = Set<String>()
        for line in listing.stdout.split(separator: "\n").dropFirst() {
            let word = line.trimmingCharacters(in: .whitespaces)
            if word.isEmpty || word.hasPrefix("#") { continue }
            calls.formUnion(word.hasPrefix("@") ? try await expand(word) : [word])
        }
        return calls
    }
}

/// The first process below `ancestor` (children first) whose command is `name`, walking the tree
/// from `ancestor` down through /proc: only our own processes, never a match on names machine-wide.
/// Waits up to 10 s for it to appear.
private func descendant(of ancestor: Int32, named name: String) async throws -> Int32? {
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
        var queue = [ancestor]
        while !queue.isEmpty {
            let parent = queue.removeFirst()
            let children = (try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8)) ?? ""
            for child in children.split(separator: " ").compactMap({ Int32($0) }) {
                let command = (try? String(contentsOfFile: "/proc/\(child)/comm", encoding: .utf8)) ?? ""
                if command.trimmingCharacters(in: .whitespacesAndNewlines) == name { return child }
                queue.append(child)
            }
        }
        try await Task.sleep(for: .milliseconds(20))
    }
    return nil
}

/// Waits until `path` exists (a socket being bound), as long as `process` runs.
private func waitForFile(_ path: String, while process: ChildProcess) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !FileManager.default.fileExists(atPath: path) {
        guard ContinuousClock.now < deadline, process.isRunning else { throw TimedOut(what: "\(path): \(process.errorOutput)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

// MARK: - The Debian package (REACHD_PACKAGE_TEST=1)

private let packageTestsEnabled = ProcessInfo.processInfo.environment["REACHD_PACKAGE_TEST"] == "1"

/// What `dpkg-deb -c` must list, directories with a trailing slash.
private let expectedPackageContents: Set<String> = [
    "etc/", "etc/reachd/", "etc/reachd/reachd.conf", "etc/reachd/reachd.conf.d/",
    "usr/", "usr/bin/", "usr/bin/reachctl", "usr/sbin/", "usr/sbin/reachd",
    "usr/lib/", "usr/lib/systemd/", "usr/lib/systemd/system/", "usr/lib/systemd/system/reachd.service", "usr/lib/systemd/system/reachd.socket",
    "usr/lib/systemd/system/reachd-wait-online.service", "usr/lib/systemd/system/reachd-metrics.socket",
    "usr/lib/systemd/system/reachd-is@.service",
    "usr/lib/systemd/user/", "usr/lib/systemd/user/reachd-login-page.service",
    "usr/lib/sysusers.d/", "usr/lib/sysusers.d/reachd.conf",
    "usr/share/", "usr/share/dbus-1/", "usr/share/dbus-1/system.d/", "usr/share/dbus-1/system.d/org.reachd.Reachability1.conf",
    "usr/share/dbus-1/system.d/reachd-networkmanager.conf", "usr/share/reachd/", "usr/share/reachd/reachd-networkmanager.conf",
    "usr/share/reachd/reachd-alerts.yml", "usr/share/reachd/reachd-alerts.test.yml", "usr/share/reachd/reachd-dashboard.json",
    "usr/share/reachd/reachd-npd.json", "usr/share/reachd/enable-textfile",
    "usr/share/dbus-1/system-services/", "usr/share/dbus-1/system-services/org.reachd.Reachability1.service",
    "usr/share/dbus-1/interfaces/", "usr/share/dbus-1/interfaces/org.reachd.Reachability1.xml",
    "usr/share/man/", "usr/share/man/man1/", "usr/share/man/man1/reachctl.1.gz", "usr/share/man/man5/",
    "usr/share/man/man5/reachd.conf.5.gz", "usr/share/man/man8/", "usr/share/man/man8/reachd.8.gz",
    "usr/share/bash-completion/", "usr/share/bash-completion/completions/", "usr/share/bash-completion/completions/reachctl",
    "usr/share/zsh/", "usr/share/zsh/vendor-completions/", "usr/share/zsh/vendor-completions/_reachctl",
    "usr/share/fish/", "usr/share/fish/vendor_completions.d/", "usr/share/fish/vendor_completions.d/reachctl.fish",
    "usr/share/doc/", "usr/share/doc/reachd/", "usr/share/doc/reachd/copyright", "usr/share/doc/reachd/changelog.Debian.gz",
    "usr/share/doc/reachd/README.md", "usr/share/lintian/", "usr/share/lintian/overrides/", "usr/share/lintian/overrides/reachd",
]

/// `scripts/package`, run once for the suite; or its .deb from this tree in REACHD_PACKAGE_DEB,
/// when scripts/test ran it already (alone, before the containers: a second run took 75 s).
private actor BuiltPackage {
    static let shared = BuiltPackage()
    private var path: String?

    /// Where a person's `scripts/package` puts it too: build/ in the repository.
    func deb() async throws -> String {
        if let path { return path }
        if let built = ProcessInfo.processInfo.environment["REACHD_PACKAGE_DEB"], !built.isEmpty {
            guard built.hasPrefix(repository + "/build/"), FileManager.default.fileExists(atPath: built) else {
                throw CommandFailed(command: "REACHD_PACKAGE_DEB", status: 1, output: "\(built): not a package scripts/package built from this tree")
            }
            path = built
            return built
        }
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "OUT")
        let built = try await execute(repository + "/scripts/package", [], environment: environment, timeout: .seconds(1500))
        guard built.status == 0, let deb = built.stdout.split(separator: "\n").last.map(String.init), deb.hasSuffix(".deb") else {
            throw CommandFailed(command: "scripts/package", status: built.status, output: built.stderr)
        }
        path = deb
        return deb
    }
}

@Suite("Packaging: Debian package", rootOnly, .serialized,
       .enabled(if: packageTestsEnabled, "builds for minutes and installs on this machine: set REACHD_PACKAGE_TEST=1"))
struct PackagingDebianTests {
    @Test func packageHoldsExactlyTheExpectedFiles() async throws {
        let deb = try await BuiltPackage.shared.deb()
        let changelog = try String(contentsOfFile: packaging + "/debian/changelog", encoding: .utf8)
        let version = String(changelog.drop { $0 != "(" }.dropFirst().prefix { $0 != ")" })
        let architecture = try await execute("/usr/bin/dpkg", ["--print-architecture"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect((deb as NSString).lastPathComponent == "reachd_\(version)_\(architecture).deb", "\(deb)")
        let listing = try await execute("/usr/bin/dpkg-deb", ["-c", deb])
        let paths = Set(listing.stdout.split(separator: "\n").compactMap { line -> String? in
            guard let dot = line.range(of: " ./") else { return nil }
            let path = String(line[dot.upperBound...])
            return path.isEmpty ? nil : path
        })
        #expect(paths.subtracting(expectedPackageContents).isEmpty, "unexpected: \(paths.subtracting(expectedPackageContents).sorted())")
        #expect(expectedPackageContents.subtracting(paths).isEmpty, "missing: \(expectedPackageContents.subtracting(paths).sorted())")
        #expect(listing.stdout.split(separator: "\n").allSatisfy { $0.contains(" root/root ") })

        let depends = try await execute("/usr/bin/dpkg-deb", ["-f", deb, "Depends"]).stdout
        for package in ["libsystemd0", "libc-ares2", "libc6", "adduser"] { #expect(depends.contains(package), "\(depends)") }
        #expect(!depends.lowercased().contains("swift"))
        let conffiles = try await execute("/usr/bin/dpkg-deb", ["-I", deb, "conffiles"]).stdout
        #expect(conffiles == "/etc/reachd/reachd.conf\n")

        // The binaries need no Swift toolchain, and the man pages and completions are real.
        let tree = try makeScratchDirectory("reachd-deb")
        defer { removeTree(tree) }
        #expect(try await execute("/usr/bin/dpkg-deb", ["-x", deb, tree]).status == 0)
        for binary in ["/usr/sbin/reachd", "/usr/bin/reachctl"] {
            let libraries = try await execute("/usr/bin/ldd", [tree + binary]).stdout
            #expect(!libraries.contains("swift") && !libraries.contains("not found") && !libraries.contains("Foundation"), "\(binary): \(libraries)")
        }
        let packaged = try await execute(tree + "/usr/sbin/reachd", ["--version"])
        let built = try await execute(productPath("reachd"), ["--version"])
        #expect(packaged.status == 0 && packaged.stdout == built.stdout && version.hasPrefix(packaged.stdout.dropFirst(7).dropLast() + "-"))
        let page = try await execute("/bin/sh", ["-c", "zcat \(tree)/usr/share/man/man8/reachd.8.gz | groff -man -ww -z"])
        #expect(page.status == 0 && page.stderr.isEmpty, "\(page)")
        let bash = try String(contentsOfFile: tree + "/usr/share/bash-completion/completions/reachctl", encoding: .utf8)
        #expect(!bash.hasPrefix("#!") && bash.contains("reachctl"))
        // The monitoring files as they are in the repository; the one step is executable.
        for file in ["reachd-alerts.yml", "reachd-alerts.test.yml", "reachd-dashboard.json", "reachd-npd.json", "enable-textfile"] {
            #expect(FileManager.default.contentsEqual(atPath: tree + "/usr/share/reachd/" + file, andPath: packaging + "/" + file), "\(file)")
        }
        #expect(FileManager.default.isExecutableFile(atPath: tree + "/usr/share/reachd/enable-textfile"))
        let scriptLine = listing.stdout.split(separator: "\n").first { $0.hasSuffix(" ./usr/share/reachd/enable-textfile") }
        #expect(scriptLine?.hasPrefix("-rwxr-xr-x ") == true, "\(scriptLine ?? "no enable-textfile")")
    }

    @Test func installsUpgradesAndRemovesCleanly() async throws {
        let deb = try await BuiltPackage.shared.deb()
        let before = try await execute("/usr/bin/dpkg-query", ["-W", "-f=${Status}", "reachd"])
        try #require(!before.stdout.contains("installed"), "reachd is installed on this machine already; remove it before this test")
        var purged = false
        defer { if !purged { _ = try? ChildProcess("/usr/bin/dpkg", ["-P", "reachd"]).finish(timeout: .seconds(120)) } }

        let install = try await execute("/usr/bin/dpkg", ["-i", deb], timeout: .seconds(300))
        #expect(install.status == 0, "\(install)")
        for path in ["/usr/sbin/reachd", "/usr/bin/reachctl", "/etc/reachd/reachd.conf", "/usr/lib/systemd/system/reachd.service",
                     "/usr/share/dbus-1/system.d/org.reachd.Reachability1.conf", "/usr/share/man/man8/reachd.8.gz"] {
            #expect(FileManager.default.fileExists(atPath: path), "\(path)")
        }
        #expect(try await execute("/usr/bin/id", ["-u", "reachd"]).status == 0, "postinst creates the user")
        #expect(try await execute("/usr/bin/id", ["-u", "reachd-is"]).status == 0, "and reachd-is@.service's")
        let check = try await execute("/usr/sbin/reachd", ["--check-config"])
        #expect(check.status == 0 && check.stdout.contains("/etc/reachd/reachd.conf"), "\(check)")
        // The installed unit, in the real root, with the installed man pages.
        let verify = try await execute("/usr/bin/systemd-analyze", ["verify", "/usr/lib/systemd/system/reachd.service"])
        #expect(verify.status == 0 && verify.stdout.isEmpty && verify.stderr.isEmpty, "\(verify)")
        #expect(FileManager.default.fileExists(atPath: "/etc/systemd/system/multi-user.target.wants/reachd.service"), "enabled")
        // The login page's user unit, installed where the user manager finds it, valid there, not enabled.
        let runtime = try makeScratchDirectory("reachd-user-runtime")
        defer { removeTree(runtime) }
        var userScope = ProcessInfo.processInfo.environment
        userScope["XDG_RUNTIME_DIR"] = runtime
        let userUnit = try await execute(
            "/usr/bin/systemd-analyze", ["--user", "verify", "/usr/lib/systemd/user/reachd-login-page.service"], environment: userScope)
        #expect(userUnit.status == 0 && userUnit.stdout.isEmpty && userUnit.stderr.isEmpty, "\(userUnit)")
        #expect(!FileManager.default.fileExists(atPath: "/etc/systemd/user/graphical-session.target.wants/reachd-login-page.service"))
        // /metrics is opt-in: the socket unit is installed, not enabled.
        #expect(FileManager.default.fileExists(atPath: "/usr/lib/systemd/system/reachd-metrics.socket"))
        #expect(!FileManager.default.fileExists(atPath: "/etc/systemd/system/sockets.target.wants/reachd-metrics.socket"), "shipped disabled")

        // An upgrade (the same version again runs the upgrade path of the maintainer scripts).
        let upgrade = try await execute("/usr/bin/dpkg", ["-i", deb], timeout: .seconds(300))
        #expect(upgrade.status == 0, "\(upgrade)")

        let remove = try await execute("/usr/bin/dpkg", ["-r", "reachd"], timeout: .seconds(300))
        #expect(remove.status == 0, "\(remove)")
        #expect(!FileManager.default.fileExists(atPath: "/usr/sbin/reachd"))
        #expect(FileManager.default.fileExists(atPath: "/etc/reachd/reachd.conf"), "a removal keeps the conffile")
        #expect(try await execute("/usr/bin/dpkg-query", ["-W", "-f=${Status}", "reachd"]).stdout == "deinstall ok config-files")

        let purge = try await execute("/usr/bin/dpkg", ["-P", "reachd"], timeout: .seconds(300))
        purged = purge.status == 0
        #expect(purge.status == 0, "\(purge)")
        #expect(!FileManager.default.fileExists(atPath: "/etc/reachd"))
        let leftovers = try await execute("/usr/bin/find", [
            "/etc/systemd/system", "/var/lib/systemd/deb-systemd-helper-enabled", "/var/lib/systemd/deb-systemd-helper-masked",
            "-name", "*reachd*",
        ])
        #expect(leftovers.stdout.isEmpty, "left behind: \(leftovers.stdout)")
        #expect(try await execute("/usr/bin/dpkg-query", ["-W", "reachd"]).status != 0)
    }

    /// The shell that boots the package's container: this machine's own root under an overlay in
    /// `directory` (which holds reachd.deb), the package installed in it, `beforeBoot` run there,
    /// then systemd-nspawn with a private network. Run under `unshare --mount`, so the overlay goes
    /// when the container does. scripts/test mounts a fresh sysfs over /sys, without the cgroup
    /// hierarchies nspawn needs: unmounting it shows the machine's /sys again.
    static func containerScript(_ directory: String, beforeBoot: String = "") -> String {
        """
        set -e
        if [ "$(stat -f -c %T /sys/fs/cgroup)" = sysfs ]; then umount /sys; fi
        cd \(directory)
        mkdir upper work root
        mount -t overlay overlay -o lowerdir=/,upperdir=upper,workdir=work root
        cp reachd.deb root/var/tmp/reachd.deb
        chroot root dpkg -i /var/tmp/reachd.deb >dpkg.log 2>&1
        \(beforeBoot)
        exec systemd-nspawn -q -D root --register=no --private-network --keep-unit -b -- --unit=basic.target
        """
    }

    /// The package on a real systemd, each scenario in a container of its own booted from this
    /// machine's own root under an overlay (nothing is written to the host), the three side by
    /// side: the sandboxed unit (`sandboxedUnit`), a watched unit's dropped traffic (issue 47,
    /// `checkUnitTrafficUnderSystemd`) and a portal session's lead (issue 45,
    /// `checkPortalSessionUnits`, which waits out 105 s of a session). One after the other they
    /// took 134 s of the package pass; side by side, the longest's time. After the install test
    /// (the serialized suite's order): the overlays' lower layer is the root that test writes.
    @Test(.enabled(if: programExists("/usr/bin/systemd-nspawn"), "needs systemd-nspawn (systemd-container)"))
    func runsUnderSystemdInContainersSideBySide() async throws {
        async let sandboxed: Void = Self.inContainer("reachd-nspawn") { inside, _ in try await Self.sandboxedUnit(inside) }
        async let traffic: Void = Self.inContainer("reachd-nspawn-traffic") { inside, systemd in
            try await checkUnitTrafficUnderSystemd(inside, systemd: systemd)
        }
        async let portal: Void = Self.inContainer("reachd-nspawn-portal") { inside, _ in try await checkPortalSessionUnits(inside) }
        _ = try await (sandboxed, traffic, portal)
    }

    /// The unit starts with its whole sandbox, reaches READY, answers an unprivileged user,
    /// reloads, stops cleanly, and is started again by a bus call.
    fileprivate static func sandboxedUnit(_ inside: @escaping ([String]) async throws -> Ran) async throws {
        let start = try await inside(["systemctl", "start", "reachd.service"])
        let startJournal = try await inside(["journalctl", "-u", "reachd", "--no-pager"]).stdout
        #expect(start.status == 0, "\(start) \(startJournal)")
        let state = try await inside(["systemctl", "show", "reachd", "-p", "ActiveState", "-p", "MainPID", "-p", "StatusText"])
        #expect(state.stdout.contains("ActiveState=active"), "\(state)")
        let pid = state.stdout.split(separator: "\n").first { $0.hasPrefix("MainPID=") }.map { String($0.dropFirst(8)) } ?? "0"
        let status = try await inside(["cat", "/proc/\(pid)/status"]).stdout
        for field in ["NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000"] {
            #expect(status.contains(field), "reachd's /proc status lacks \(field)")
        }
        let uid = try await inside(["id", "-u", "reachd"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(status.contains("Uid:\t\(uid)\t"), "runs as reachd (\(uid))")
        // The sandbox lets stall detection read the TCP sockets (sock_diag needs no capability).
        #expect(!startJournal.contains("stall detection"), "\(startJournal)")
        // Radios: the unit started with rfkill's device bound in where it exists, and reachd says
        // which source it follows (this container's host has no rfkill: sysfs on link events).
        let devices = try await inside(["systemctl", "show", "reachd", "-p", "BindReadOnlyPaths", "-p", "DeviceAllow"]).stdout
        #expect(devices.contains("-/dev/rfkill:/dev/rfkill") && devices.contains("/dev/char/10:242 r"), "\(devices)")
        #expect(startJournal.contains("radios: following /dev/rfkill")
            || startJournal.contains("radios: /dev/rfkill absent, reading sysfs on link events"), "\(startJournal)")

        let asNobody = ["setpriv"] + asUser("nobody", "nogroup") + ["busctl", "call", busName, objectPath, busName]
        let answer = try await inside(asNobody + ["CheckHost", "su", "localhost", "2000"])
        #expect(answer.status == 0 && answer.stdout.contains("\"127.0.0.1\""), "\(answer)")

        // reachctl, as an unprivileged user, through the policy (--daemon: no in-process answer).
        let client = try await inside(["setpriv"] + asUser("nobody", "nogroup") + ["reachctl", "status", "--daemon", "--json"])
        #expect(client.status != 255 && client.stdout.contains("\"state\""), "\(client)")
        // The counters of reachd's netlink socket: nothing overran on this quiet container, and
        // the one dump is the first sync (the socket's backlog from boot was discarded unread).
        let verbose = try await inside(["setpriv"] + asUser("nobody", "nogroup") + ["reachctl", "status", "--daemon", "--verbose"])
        #expect(verbose.stdout.contains("Netlink: 0 overrun(s), 1 resync(s)"), "\(verbose)")

        try await checkWaitOnline(inside)
        try await checkConditionUnits(inside)
        try await checkUnmeteredUnit(inside)
        try await checkVPNRecipe(inside)
        try await checkWaitRecipe(inside)
        try await checkUnitsUnderSystemd(inside)

        #expect(try await inside(["systemctl", "reload", "reachd"]).status == 0)
        let stop = try await inside(["systemctl", "stop", "reachd"])
        #expect(stop.status == 0)
        let stopped = try await inside(["systemctl", "show", "reachd", "-p", "Result", "-p", "ExecMainStatus"])
        #expect(stopped.stdout.contains("Result=success") && stopped.stdout.contains("ExecMainStatus=0"), "\(stopped)")

        // Bus activation: a call by nobody starts the unit again.
        let activated = try await inside(asNobody + ["GetStatus"])
        #expect(activated.status == 0 && activated.stdout.hasPrefix("a{sv}"), "\(activated)")
        #expect(try await inside(["systemctl", "is-active", "reachd"]).stdout.hasPrefix("active"))

        // The netlink socket came from reachd.socket, with the buffer PID 1 set past rmem_max
        // (ReceiveBuffer=8M; the kernel reports twice that), at the first start and again when
        // the bus started reachd: the socket outlives the service. The second start's lines come
        // through its stream to journald, which may still hold them when PID 1 has its READY (one
        // read had the second "Starting" and nothing after it): read again until they are in.
        let adopted = "netlink: receive buffer 16384 KiB (socket from reachd.socket, sized by systemd)"
        var journal = ""
        let logged = ContinuousClock.now + .seconds(10)
        repeat {
            journal = try await inside(["journalctl", "-u", "reachd", "--no-pager", "-o", "cat"]).stdout
            if journal.components(separatedBy: adopted).count - 1 >= 2 { break }
            try await Task.sleep(for: .milliseconds(200))
        } while ContinuousClock.now < logged
        #expect(journal.contains("ready on the bus") && journal.contains("configuration reloaded"), "\(journal)")
        #expect(journal.components(separatedBy: adopted).count - 1 == 2, "\(journal)")
        #expect(try await inside(["systemctl", "is-active", "reachd.socket"]).stdout.hasPrefix("active"))
        #expect(try await inside(["systemctl", "is-enabled", "reachd.socket"]).stdout.hasPrefix("enabled"))
        for failure in ["SIGSYS", "core-dump", "Watchdog timeout", "Failed with result", "error:"] {
            #expect(!journal.contains(failure), "journal: \(journal)")
        }
        try await checkMetricsSocket(inside)
    }

    /// The package's container booted (`containerScript`, nothing run before the boot), `body`
    /// given the way to run a command inside and the machine's pid of the container's systemd;
    /// the container goes after it.
    fileprivate static func inContainer(_ tag: String, _ body: (@escaping ([String]) async throws -> Ran, Int32) async throws -> Void) async throws {
        let deb = try await BuiltPackage.shared.deb()
        let directory = try makeScratchDirectory(tag)
        defer { removeTree(directory) }
        try FileManager.default.copyItem(atPath: deb, toPath: directory + "/reachd.deb")
        let container = try ChildProcess("/usr/bin/unshare", ["--mount", "--propagation", "private", "--", "/bin/sh", "-c", containerScript(directory)])
        defer {
            container.signal(SIGTERM)
            sleep(3)
            container.kill()
        }
        // unshare and sh each exec the next; nspawn forks a child that forks systemd. dpkg -i
        // comes first: on a loaded machine longer than descendant's 10 s.
        var found: Int32?
        let installed = ContinuousClock.now + .seconds(120)
        while found == nil, container.isRunning, ContinuousClock.now < installed {
            found = try await descendant(of: container.pid, named: "systemd")
        }
        let systemd = try #require(found, "\(container.errorOutput)")
        let inside = { (arguments: [String]) async throws -> Ran in
            try await execute("/usr/bin/nsenter", ["--target", "\(systemd)", "--all", "--"] + arguments, timeout: .seconds(60))
        }
        let booted = ContinuousClock.now + .seconds(60)
        while !(try await inside(["systemctl", "is-active", "dbus.socket"]).stdout.hasPrefix("active")) {
            guard ContinuousClock.now < booted else { throw TimedOut(what: "container boot: \(container.errorOutput)") }
            try await Task.sleep(for: .milliseconds(200))
        }
        try await body(inside, systemd)
    }

    /// issue 47's soak: 20 watched units exchanging real traffic for REACHD_UNIT_SOAK_MINUTES
    /// minutes (10 for the issue's figure), none ever flagged (`soakWatchedUnits`). Not in any
    /// pass of scripts/test: set the variable (and REACHD_PACKAGE_TEST=1) to run it.
    @Test(.enabled(if: programExists("/usr/bin/systemd-nspawn"), "needs systemd-nspawn (systemd-container)"),
          .enabled(if: unitSoakMinutes != nil, "minutes long: set REACHD_UNIT_SOAK_MINUTES"))
    func flagsNoWatchedUnitInALongRunUnderSystemd() async throws {
        let minutes = try #require(unitSoakMinutes)
        try await Self.inContainer("reachd-nspawn-soak") { inside, _ in try await soakWatchedUnits(inside, minutes: minutes) }
    }

    /// NetworkManager's own per-connection setting, with the real NetworkManager under the real
    /// PID 1: installed only in the container's overlay, from the packages the host's apt
    /// downloaded into its cache (`NetworkManagerPackages`: nothing is installed on the host, and
    /// dpkg lists the same packages after as before). A keyfile connection with
    /// `connection.metered=yes` on a veth makes that link expensive for reachd with the reason
    /// networkManager (reachctl and the bus say so); when NetworkManager stops, its word is
    /// forgotten, and when it runs again it is heard again; `connection.metered no` reapplied
    /// flips the link within a second of NetworkManager's PropertiesChanged. reachd's own
    /// NetworkManager surface, switched on, steps aside for the real one.
    @Test(.enabled(if: programExists("/usr/bin/systemd-nspawn"), "needs systemd-nspawn (systemd-container)"),
          .enabled(if: packageTestsEnabled && NetworkManagerPackages.downloaded,
                   "network-manager's packages cannot be downloaded into apt's cache (offline?): apt-get install --download-only network-manager failed"))
    func followsNetworkManagersMeteredSettingUnderSystemd() async throws {
        let deb = try await BuiltPackage.shared.deb()
        let directory = try makeScratchDirectory("reachd-nspawn-nm")
        defer { removeTree(directory) }
        try FileManager.default.copyItem(atPath: deb, toPath: directory + "/reachd.deb")
        // As runsUnderSystemdInContainersSideBySide's containers, with network-manager installed in the overlay
        // from apt's cache (--no-download) and its maintainer scripts starting nothing
        // (policy-rc.d); /dev and /proc are bound in for apt and unmounted before the boot.
        let script = Self.containerScript(directory, beforeBoot: """
            printf '#!/bin/sh\\nexit 101\\n' >root/usr/sbin/policy-rc.d
            chmod +x root/usr/sbin/policy-rc.d
            mount --rbind /dev root/dev
            mount -t proc proc root/proc
            chroot root apt-get install -y --no-install-recommends --no-download network-manager >apt.log 2>&1
            umount root/proc
            umount -R root/dev
            rm root/usr/sbin/policy-rc.d
            """)
        let container = try ChildProcess("/usr/bin/unshare", ["--mount", "--propagation", "private", "--", "/bin/sh", "-c", script])
        defer {
            container.signal(SIGTERM)
            sleep(3)
            container.kill()
        }
        // apt unpacks eight packages first: minutes on a loaded machine, not descendant's 10 s.
        var found: Int32?
        let installed = ContinuousClock.now + .seconds(600)
        while found == nil, container.isRunning, ContinuousClock.now < installed {
            found = try await descendant(of: container.pid, named: "systemd")
        }
        let systemd = try #require(found, "\(container.errorOutput) \((try? String(contentsOfFile: directory + "/apt.log", encoding: .utf8)) ?? "")")
        let inside = { (arguments: [String]) async throws -> Ran in
            try await execute("/usr/bin/nsenter", ["--target", "\(systemd)", "--all", "--"] + arguments, timeout: .seconds(60))
        }
        let booted = ContinuousClock.now + .seconds(60)
        while !(try await inside(["systemctl", "is-active", "dbus.socket"]).stdout.hasPrefix("active")) {
            guard ContinuousClock.now < booted else { throw TimedOut(what: "container boot: \(container.errorOutput)") }
            try await Task.sleep(for: .milliseconds(200))
        }
        try await checkNetworkManagersMeteredSetting(inside)
        let after = NetworkManagerPackages.installedPackages()
        #expect(after == NetworkManagerPackages.installedBefore, "the host's packages are those it had: \(after.count) bytes of dpkg's list")
        #expect(!after.contains("network-manager "), "network-manager is not installed on the host")
    }
}

/// network-manager's packages in the host's apt cache, downloaded once per run: `apt-get
/// install --download-only` installs nothing (dpkg's list is read before, for the test to
/// compare), and runs in the network namespace the suite was started from, as scripts/test runs
/// the suite in a private one without the network. Offline, packages already in the cache do.
private enum NetworkManagerPackages {
    static let installedBefore = installedPackages()
    static let downloaded: Bool = {
        _ = installedBefore
        let apt = ["/usr/bin/apt-get", "install", "--download-only", "-y", "--no-install-recommends", "network-manager"]
        let command = outerNetworkNamespace().map { ["/usr/bin/nsenter", "--net=\($0)", "--"] + apt } ?? apt
        let download = try? ChildProcess(command[0], Array(command.dropFirst())).finish(timeout: .seconds(600))
        return download?.0 == 0
    }()

    /// The nearest ancestor's network namespace that is not this process's (PID 1's may not be
    /// readable in a container); nil when every ancestor shares this one.
    static func outerNetworkNamespace() -> String? {
        let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")
        var pid = getppid()
        while pid > 1 {
            let path = "/proc/\(pid)/ns/net"
            if let namespace = try? FileManager.default.destinationOfSymbolicLink(atPath: path), namespace != own { return path }
            // "pid (comm) state ppid ...": the command's name may hold spaces; ppid is after the last ')'.
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[close...].split(separator: " ")
            guard fields.count > 2, let parent = Int32(fields[2]) else { return nil }
            pid = parent
        }
        return nil
    }

    /// Every package dpkg knows, with its version and status, one a line.
    static func installedPackages() -> String {
        (try? ChildProcess("/usr/bin/dpkg-query", ["-W", "-f=${Package} ${Version} ${Status}\\n"]).finish(timeout: .seconds(60)))?.1 ?? ""
    }
}

/// The steps of followsNetworkManagersMeteredSettingUnderSystemd inside the booted container.
private func checkNetworkManagersMeteredSetting(_ inside: ([String]) async throws -> Ran) async throws {
    func shell(_ commands: String) async throws -> Ran { try await inside(["sh", "-c", commands]) }
    // NetworkManager makes no connection of its own for the veth's peer, nor manages it.
    let configured = try await shell("""
        printf '[main]\\nno-auto-default=*\\n[keyfile]\\nunmanaged-devices=interface-name:nmpeer0\\n' >/etc/NetworkManager/conf.d/test.conf
        printf '[Compatibility]\\nNetworkManager=yes\\n' >/etc/reachd/reachd.conf.d/nm.conf
        systemctl start NetworkManager.service && systemctl start reachd.service
        """)
    #expect(configured.status == 0, "\(configured)")
    func journal() async throws -> String { try await inside(["journalctl", "-u", "reachd", "--no-pager", "-o", "cat"]).stdout }
    // reachd's surface steps aside: NetworkManager's own process owns the name.
    let nmPID = try await inside(["systemctl", "show", "-p", "MainPID", "--value", "NetworkManager"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    let owner = try await inside(["busctl", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                  "GetConnectionUnixProcessID", "s", "org.freedesktop.NetworkManager"])
    #expect(owner.stdout == "u \(nmPID)\n", "\(owner) NetworkManager \(nmPID)")

    let keyfile = """
        [connection]
        id=metered
        type=ethernet
        interface-name=nmveth0
        metered=1
        [ipv4]
        method=manual
        address1=192.0.2.10/24,192.0.2.1
        [ipv6]
        method=disabled
        """
    let up = try await inside(["sh", "-c", """
        ip link add nmveth0 type veth peer name nmpeer0 && ip link set nmpeer0 up
        printf '%s\\n' "$0" >/etc/NetworkManager/system-connections/metered.nmconnection
        chmod 600 /etc/NetworkManager/system-connections/metered.nmconnection
        nmcli connection load /etc/NetworkManager/system-connections/metered.nmconnection
        nmcli -g connection.metered connection show metered
        nmcli connection up metered >/dev/null
        """, keyfile])
    #expect(up.status == 0 && up.stdout.hasSuffix("yes\n"), "\(up)")

    /// How long, in ms, until reachd says nmveth0's reason is `reason` ("" for none), polled
    /// inside after `commands`; nil when not within 10 s.
    func reason(_ reason: String, after commands: String = "true") async throws -> Int? {
        try await timedReason(inside, interface: "nmveth0", reason: reason, after: commands)
    }
    var log = try await journal()
    #expect(try await reason("networkManager") != nil, "\(log)")
    let status = try await inside(["reachctl", "status", "--daemon", "--json"]).stdout
    #expect(status.contains("\"primaryInterface\":\"nmveth0\"") && status.contains("\"expensiveReason\":\"networkManager\""), "\(status)")
    let busReasons = try await inside(["busctl", "call", "org.reachd.Reachability1", "/org/reachd/Reachability1", "org.reachd.Reachability1", "GetStatus"])
    #expect(busReasons.stdout.contains("\"InterfaceExpensiveReasons\" a{ss} 1 \"nmveth0\" \"networkManager\""), "\(busReasons)")
    let text = try await inside(["reachctl", "status", "--daemon"]).stdout
    #expect(text.contains("Metered: yes (NetworkManager's connection setting)"), "\(text)")
    log = try await journal()
    #expect(log.contains("NetworkManager compatibility refused") && log.contains("following its devices' Metered"), "\(log)")

    // NetworkManager stops (leaving the link configured): its word goes; it runs again: heard again.
    let forgotten = try await reason("", after: "systemctl stop NetworkManager.service")
    let kept = try await inside(["ip", "-br", "addr", "show", "nmveth0"]).stdout
    log = try await journal()
    #expect(forgotten != nil && kept.contains("192.0.2.10/24"), "\(kept) \(log)")
    // NetworkManager withdraws its devices' Metered as it stops (unknown, by PropertiesChanged),
    // then its name goes: reachd hears both, and says so.
    #expect(log.contains(") is gone: what it said of"), "\(log)")
    let heard = try await reason("networkManager", after: "systemctl start NetworkManager.service")
    log = try await journal()
    #expect(heard != nil, "\(log)")

    // The user changes the setting: reachd follows NetworkManager's PropertiesChanged within a second.
    let flip = try await inside(["sh", "-c", """
        busctl monitor --json=short org.freedesktop.NetworkManager >/run/nm-monitor.json 2>/dev/null &
        monitor=$!
        sleep 0.5
        nmcli connection modify metered connection.metered no && nmcli device reapply nmveth0 >/dev/null
        start=$(date +%s%N)
        until reachctl interfaces --daemon --json | grep -q '"name":"nmveth0"[^}]*"expensiveReason":""'; do
            [ $(( $(date +%s%N) - start )) -lt 10000000000 ] || { kill $monitor; exit 1; }
        done
        echo flipped $(date +%s%6N)
        sleep 0.2
        kill $monitor
        grep '"member":"PropertiesChanged"' /run/nm-monitor.json | grep '"Metered":{"type":"u","data":2}' | grep -m1 -o '"timestamp-realtime":[0-9]*'
        """])
    let words = flip.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == ":" })
    let flipped = words.firstIndex(of: "flipped").flatMap { Int64(words[$0 + 1]) }
    let signalled = words.last.flatMap { Int64($0) }
    log = try await journal()
    #expect(flip.status == 0 && flipped != nil && signalled != nil, "\(flip) \(log)")
    if let flipped, let signalled {
        #expect(flipped - signalled < 1_000_000, "reachd flipped \(flipped - signalled) µs after NetworkManager's PropertiesChanged: \(log)")
    }
    for failure in ["SIGSYS", "core-dump", "Failed with result", "error: cannot"] {
        #expect(!log.contains(failure), "journal: \(log)")
    }
    #expect(!log.contains("warning: NetworkManager"), "no value of the real NetworkManager is refused: \(log)")
}

/// How long, in ms, until `reachctl interfaces --json` shows `interface` with `reason` as its
/// expensiveReason, polled inside after `commands`; nil when not within 10 s.
private func timedReason(_ inside: ([String]) async throws -> Ran, interface: String, reason: String, after commands: String) async throws -> Int? {
    try await millisecondsInside(
        inside, after: commands,
        until: "reachctl interfaces --daemon --json | grep -q '\"name\":\"\(interface)\"[^}]*\"expensiveReason\":\"\(reason)\"'")
}

/// reachd-metrics.socket under the real PID 1 (issue 13): shipped disabled; started (with
/// reachd stopped, as PID 1 requires of a socket unit whose service runs), it hands
/// reachd.service its listening socket by name beside reachd.socket's, reachd answers /metrics
/// from inside its unchanged sandbox, promtool accepts the answer, and a scrape of a stopped
/// reachd starts it.
private func checkMetricsSocket(_ inside: ([String]) async throws -> Ran) async throws {
    let unit = "reachd-metrics.socket"
    #expect(try await inside(["systemctl", "is-enabled", unit]).stdout.hasPrefix("disabled"), "the package leaves it off")
    // PID 1 refuses to start a socket unit while its service runs: reachd stops first.
    #expect(try await inside(["systemctl", "stop", "reachd"]).status == 0)
    let started = try await inside(["systemctl", "start", unit])
    #expect(started.status == 0, "\(started)")
    #expect(try await inside(["systemctl", "start", "reachd"]).status == 0)
    // bash's /dev/tcp: a client without curl; the head is cut off before promtool reads the body.
    let scrape = "exec 3<>/dev/tcp/127.0.0.1/9849; printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3"
    let answer = try await inside(["bash", "-c", scrape])
    #expect(answer.stdout.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.stdout.contains("\nreachd_host_state{state=\"online\"} "), "\(answer)")
    let lint = try await inside(["bash", "-c", scrape + " | sed '1,/^\\r$/d' | promtool check metrics"])
    #expect(lint.status == 0, "\(lint)")
    let journal = try await inside(["journalctl", "-u", "reachd", "--no-pager", "-o", "cat"]).stdout
    #expect(journal.contains("metrics: serving /metrics on 1 socket(s) from reachd-metrics.socket"), "\(journal)")
    #expect(journal.components(separatedBy: "(socket from reachd.socket, sized by systemd)").count - 1 == 3, "\(journal)")

    // Socket activation: with reachd stopped, a scrape starts it and is answered.
    #expect(try await inside(["systemctl", "stop", "reachd"]).status == 0)
    let activated = try await inside(["bash", "-c", scrape])
    #expect(activated.stdout.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(activated)")
    // The scrape is answered as soon as the listener is served, which may be before reachd has
    // told systemd it is ready (the bus name comes after): "activating" for a moment.
    var state = ""
    for _ in 0..<100 {
        state = try await inside(["systemctl", "is-active", "reachd"]).stdout
        if state.hasPrefix("active") { break }
        try await Task.sleep(for: .milliseconds(100))
    }
    #expect(state.hasPrefix("active"), "reachd after a socket-activated scrape: \(state)")
    #expect(try await inside(["systemctl", "stop", unit]).status == 0)
    try await checkMetricsTextfile(inside)
}

/// The node_exporter textfile from inside the sandbox, set up in the one step reachd(8)
/// "METRICS" gives: /usr/share/reachd/enable-textfile (the key, the drop-in with
/// ReadWritePaths=, the directory writable by the reachd group, and the restart). reachd writes
/// reachd.prom world-readable and removes it when stopped; `off` undoes it.
private func checkMetricsTextfile(_ inside: ([String]) async throws -> Ran) async throws {
    let directory = "/var/lib/prometheus/node-exporter"
    // Running, so the step's restart is what makes reachd write the file.
    #expect(try await inside(["systemctl", "start", "reachd"]).status == 0)
    let setup = try await inside(["/usr/share/reachd/enable-textfile"])
    #expect(setup.status == 0, "\(setup)")
    let file = directory + "/reachd.prom"
    let deadline = ContinuousClock.now + .seconds(15)
    var mode = ""
    while mode != "644", ContinuousClock.now < deadline {
        mode = try await inside(["stat", "-c", "%a", file]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        if mode != "644" { try await Task.sleep(for: .milliseconds(200)) }
    }
    #expect(mode == "644", "reachd.prom: \(mode)")
    let lint = try await inside(["sh", "-c", "promtool check metrics < \(file)"])
    #expect(lint.status == 0, "\(lint)")
    let journal = try await inside(["journalctl", "-u", "reachd", "--no-pager", "-o", "cat"]).stdout
    #expect(journal.contains("metrics: writing \(file) on change and every 1m"), "\(journal)")
    #expect(!journal.contains("metrics: cannot"), "\(journal)")
    #expect(try await inside(["systemctl", "stop", "reachd"]).status == 0)
    #expect(try await inside(["test", "-e", file]).status != 0, "removed at a clean stop")
    #expect(try await inside(["systemctl", "start", "reachd"]).status == 0)
    let off = try await inside(["/usr/share/reachd/enable-textfile", "off"])
    #expect(off.status == 0, "\(off)")
    #expect(off.stdout.contains("reachd no longer writes its textfile"), "\(off)")
    // Its restart is a stop (which removes the file) and a start, both done when it returns.
    #expect(try await inside(["test", "-e", file]).status != 0, "no textfile after off")
    #expect(try await inside(["systemctl", "is-active", "reachd"]).stdout.hasPrefix("active"))

    // The installed alert rules pass their installed unit tests, as an administrator runs them.
    let rules = try await inside(["promtool", "test", "rules", "/usr/share/reachd/reachd-alerts.test.yml"])
    #expect(rules.status == 0 && rules.stdout.contains("SUCCESS"), "\(rules)")
}

/// reachd-wait-online.service in the booted container (which has only lo: no uplink): shipped
/// disabled; once enabled it orders network-online.target, fails at its Timeout= (3 s here, from a
/// drop-in) with one journal line saying what it waited for and what it saw, and succeeds at once
/// when an uplink is there.
private func checkWaitOnline(_ inside: ([String]) async throws -> Ran) async throws {
    let unit = "reachd-wait-online.service"
    #expect(try await inside(["systemctl", "is-enabled", unit]).stdout.hasPrefix("disabled"), "the package leaves it off")
    let dropIn = try await inside(["sh", "-c", "mkdir -p /etc/reachd/reachd.conf.d && printf '[WaitOnline]\\nTimeout=3s\\n' >/etc/reachd/reachd.conf.d/50-wait.conf"])
    #expect(dropIn.status == 0, "\(dropIn)")
    #expect(try await inside(["systemctl", "enable", unit]).status == 0)
    let target = try await inside(["systemctl", "show", "network-online.target", "-p", "Wants", "-p", "After"]).stdout
    #expect(target.contains("Wants=") && target.components(separatedBy: unit).count == 3, "network-online.target: \(target)")

    // No uplink: reaching network-online.target takes the 3 s and no more; the unit fails.
    let start = ContinuousClock.now
    let reached = try await inside(["systemctl", "start", "network-online.target"])
    let waited = ContinuousClock.now - start
    #expect(reached.status == 0, "a failed Wants= does not fail the target: \(reached)")
    #expect(waited >= .seconds(3) && waited < .seconds(10), "waited \(waited)")
    #expect(try await inside(["systemctl", "is-failed", unit]).stdout.hasPrefix("failed"))
    let journal = try await inside(["journalctl", "-u", unit, "--no-pager", "-o", "cat"]).stdout
    #expect(journal.contains("reachctl: gave up after 3s waiting for the host to be online; saw: "), "\(journal)")

    // An uplink (a veth whose peer is up, an address and a default route): done at once.
    for command in [
        "ip link add up0 type veth peer name up0p", "ip link set up0p up", "ip addr add 192.0.2.2/24 dev up0",
        "ip link set up0 up", "ip route add default via 192.0.2.1 dev up0",
    ] {
        let made = try await inside(command.split(separator: " ").map(String.init))
        #expect(made.status == 0, "\(command): \(made)")
    }
    let again = ContinuousClock.now
    let restarted = try await inside(["systemctl", "restart", unit])
    let log = try await inside(["journalctl", "-u", unit, "--no-pager", "-o", "cat"]).stdout
    #expect(restarted.status == 0, "\(restarted) \(log)")
    #expect(ContinuousClock.now - again < .seconds(3))
    #expect(try await inside(["systemctl", "is-active", unit]).stdout.hasPrefix("active"))
    _ = try await inside(["ip", "link", "del", "up0"])
}

/// reachd-is@online.service under the real PID 1, with a service bound to it as docs/services.md
/// says (BindsTo=, After=, WantedBy=): the condition unit waits (activating) while the container
/// has no uplink and the bound service does not run; an uplink starts both; a carrier loss stops
/// the bound service within a second; the uplink's return starts it again. reachctl hold runs
/// as its own user (reachd-is, not reachd) with no capability, and asks reachd on the bus.
private func checkConditionUnits(_ inside: ([String]) async throws -> Ran) async throws {
    let unit = "reachd-is@online.service"
    let bound = boundService(to: unit)
    let written = try await inside(["sh", "-c", "printf '%s\\n' \"$0\" >/etc/systemd/system/follower.service", bound])
    #expect(written.status == 0, "\(written)")
    #expect(try await inside(["systemctl", "daemon-reload"]).status == 0)
    let enabled = try await inside(["systemctl", "enable", "follower.service"])
    #expect(enabled.status == 0, "\(enabled)")

    // No uplink: the condition unit waits, and the bound service is not running.
    #expect(try await inside(["systemctl", "start", "--no-block", unit]).status == 0)
    try await Task.sleep(for: .seconds(1))
    let waiting = try await inside(["systemctl", "show", unit, "-p", "ActiveState", "-p", "StatusText", "-p", "MainPID"]).stdout
    #expect(waiting.contains("ActiveState=activating") && waiting.contains("StatusText=waiting: online: no"), "\(waiting)")
    #expect(try await inside(["systemctl", "is-active", "follower"]).stdout.hasPrefix("inactive"))
    let pid = waiting.split(separator: "\n").first { $0.hasPrefix("MainPID=") }.map { String($0.dropFirst(8)) } ?? "0"
    let status = try await inside(["cat", "/proc/\(pid)/status"]).stdout
    for field in ["NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000"] {
        #expect(status.contains(field), "reachctl hold's /proc status lacks \(field): \(status)")
    }
    let reachdUID = try await inside(["id", "-u", "reachd"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(separator: "\t").dropFirst().first.map(String.init) ?? ""
    let ownUID = try await inside(["id", "-u", "reachd-is"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(!uid.isEmpty && uid == ownUID && uid != "0" && uid != reachdUID, "a user of its own: \(uid), reachd-is \(ownUID)")

    func timed(_ commands: String, until state: String) async throws -> Int? {
        try await timedInside(inside, "follower", after: commands, until: state)
    }
    let started = try await timed(containerUplink, until: "active")
    func journal() async throws -> String {
        try await inside(["journalctl", "-u", unit, "-u", "follower", "--no-pager", "-o", "short-precise"]).stdout
    }
    var log = try await journal()
    #expect(started != nil, "the bound service starts with the condition: \(log)")
    #expect(try await inside(["systemctl", "is-active", unit]).stdout.hasPrefix("active"))

    // The carrier goes: the bound service is stopped within a second.
    let stopped = try await timed("ip link set up0p down", until: "inactive")
    log = try await journal()
    #expect(stopped.map { $0 < 1000 } == true, "stopped after \(stopped.map { "\($0) ms" } ?? "never"): \(log)")
    #expect(try await inside(["systemctl", "is-failed", unit]).stdout.hasPrefix("failed") == false)

    // The carrier returns: started again (Restart= re-runs the hold, its WantedBy= pulls the service in).
    let again = try await timed("ip link set up0p up", until: "active")
    log = try await journal()
    #expect(again != nil, "started again: \(log)")
    #expect(log.contains("reachctl: no longer holds: online: no"), "\(log)")
    // Its user asked reachd through the bus policy; it did not fall back to in-process. And the
    // system call filter refuses the runtime nothing (its EPERM would show as libdispatch's
    // "errno=1"; the EACCES of a nice value an unprivileged process may not lower, errno=13, is
    // libdispatch's for any such process, and harmless).
    #expect(!log.split(separator: "\n").contains { $0.hasSuffix("errno=1") }, "\(log)")
    #expect(!log.contains("answering in-process"), "\(log)")

    // Stopping the condition unit stops what is bound to it.
    #expect(try await inside(["systemctl", "stop", unit]).status == 0)
    #expect(try await inside(["systemctl", "is-active", "follower"]).stdout.hasPrefix("inactive"))
    _ = try await inside(["systemctl", "disable", "follower.service"])
    _ = try await inside(["ip", "link", "del", "up0"])
}

/// A service bound to the condition unit `unit` as docs/services.md says (BindsTo=, After=,
/// WantedBy=): it runs exactly while the unit is active.
private func boundService(to unit: String) -> String {
    """
    [Unit]
    BindsTo=\(unit)
    After=\(unit)
    [Service]
    ExecStart=/bin/sleep infinity
    [Install]
    WantedBy=\(unit)
    """
}

/// A veth uplink with a default route, as the condition units' checks make it.
private let containerUplink = "ip link add up0 type veth peer name up0p && ip link set up0p up && ip addr add 192.0.2.2/24 dev up0 && "
    + "ip link set up0 up && ip route add default via 192.0.2.1 dev up0"

/// How long, in ms, until `systemctl is-active SERVICE` says `state`, measured inside after
/// `commands` (nil: not within 10 s).
private func timedInside(
    _ inside: ([String]) async throws -> Ran, _ service: String, after commands: String, until state: String
) async throws -> Int? {
    try await millisecondsInside(inside, after: commands, until: "[ \"$(systemctl is-active \(service))\" = \(state) ]")
}

/// How long, in ms, until the shell `condition` holds, polled inside right after `commands`
/// (nil: not within 10 s). In one shell inside, so no process start of the test's own counts.
private func millisecondsInside(_ inside: ([String]) async throws -> Ran, after commands: String, until condition: String) async throws -> Int? {
    let script = """
        \(commands)
        start=$(date +%s%N)
        until \(condition); do
            [ $(( $(date +%s%N) - start )) -lt 10000000000 ] || exit 1
        done
        echo $(( ($(date +%s%N) - start) / 1000000 ))
        """
    let ran = try await inside(["sh", "-c", script])
    return ran.status == 0 ? Int(ran.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) : nil
}

/// docs/services.md's backup recipe under the real PID 1: a service bound to
/// reachd-is@unmetered.service runs while the host's path is unmetered, and stops within a
/// second of a reload that marks its network metered by the network's own name (a `[Network]`
/// rule keyed by the NetworkID reachctl shows); the journal says why. Removing the rule and
/// reloading starts it again.
private func checkUnmeteredUnit(_ inside: ([String]) async throws -> Ran) async throws {
    let unit = "reachd-is@unmetered.service"
    let bound = boundService(to: unit)
    #expect(try await inside(["sh", "-c", "printf '%s\\n' \"$0\" >/etc/systemd/system/backup.service", bound]).status == 0)
    #expect(try await inside(["systemctl", "daemon-reload"]).status == 0)
    #expect(try await inside(["systemctl", "enable", "backup.service"]).status == 0)
    // The uplink's gateway as ARP would have learnt it: the network gets its name.
    let uplink = containerUplink + " && ip neigh replace 192.0.2.1 lladdr 02:00:5e:10:00:01 dev up0 nud permanent"
    #expect(try await inside(["sh", "-c", uplink]).status == 0)
    let started = try await timedInside(inside, "backup", after: "systemctl start --no-block \(unit)", until: "active")
    func journal() async throws -> String {
        try await inside(["journalctl", "-u", unit, "-u", "backup", "--no-pager", "-o", "short-precise"]).stdout
    }
    let startLog = try await journal()
    #expect(started != nil, "the backup starts on the unmetered uplink: \(startLog)")

    var network = ""
    for _ in 0..<50 where network.isEmpty {
        let listed = try await inside(["reachctl", "interfaces", "--verbose", "--no-legend", "--daemon"]).stdout
        network = listed.split(separator: "\n").first { $0.contains(" up0 ") }?.split(separator: " ").first { $0.count == 16 && $0.allSatisfy(\.isHexDigit) }.map(String.init) ?? ""
        if network.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
    }
    #expect(network.count == 16, "up0's network is named")
    let rule = "mkdir -p /etc/reachd/reachd.conf.d && printf '[Network]\\nID=\(network)\\nMetered=yes\\n' >/etc/reachd/reachd.conf.d/60-metered.conf"
        + " && systemctl reload reachd"
    let stopped = try await timedInside(inside, "backup", after: rule, until: "inactive")
    var log = try await journal()
    #expect(stopped.map { $0 < 1000 } == true, "stopped after \(stopped.map { "\($0) ms" } ?? "never"): \(log)")
    #expect(log.contains("reachctl: no longer holds: unmetered: no") && log.contains("configuration"), "the journal says why: \(log)")

    let again = try await timedInside(
        inside, "backup", after: "rm /etc/reachd/reachd.conf.d/60-metered.conf && systemctl reload reachd", until: "active")
    log = try await journal()
    #expect(again != nil, "started again once unmetered: \(log)")

    #expect(try await inside(["systemctl", "stop", unit]).status == 0)
    _ = try await inside(["systemctl", "disable", "backup.service"])
    _ = try await inside(["ip", "link", "del", "up0"])
}

/// docs/services.md's VPN recipe under the real PID 1: a job with `ExecCondition=reachctl is
/// via-vpn` is skipped (not failed) while the host's path is no VPN and runs once a tunnel carries
/// it, and a service bound to reachd-is@via-vpn.service follows the tunnel up and down. The
/// container has no tunnel driver, so the tunnel is a veth that a reachd.conf rule calls a VPN,
/// routed as wg-quick and OpenVPN route theirs (0.0.0.0/1 and 128.0.0.0/1 over the uplink).
private func checkVPNRecipe(_ inside: ([String]) async throws -> Ran) async throws {
    let job = """
        [Service]
        Type=oneshot
        RemainAfterExit=yes
        ExecCondition=/usr/bin/reachctl is via-vpn
        ExecStart=/bin/true
        """
    let unit = "reachd-is@via-vpn.service"
    let bound = boundService(to: unit)
    #expect(try await inside(["sh", "-c", "printf '%s\\n' \"$0\" >/etc/systemd/system/vpnjob.service", job]).status == 0)
    #expect(try await inside(["sh", "-c", "printf '%s\\n' \"$0\" >/etc/systemd/system/vpnbound.service", bound]).status == 0)
    #expect(try await inside(["systemctl", "daemon-reload"]).status == 0)
    #expect(try await inside(["systemctl", "enable", "vpnbound.service"]).status == 0)
    let rule = "mkdir -p /etc/reachd/reachd.conf.d && printf '[Interface]\\nName=vpn0\\nKind=vpn\\n' >/etc/reachd/reachd.conf.d/60-vpn.conf"
        + " && systemctl reload reachd && " + containerUplink
    #expect(try await inside(["sh", "-c", rule]).status == 0)
    try await Task.sleep(for: .milliseconds(500))

    // No tunnel: the job is skipped, not failed.
    _ = try await inside(["systemctl", "start", "vpnjob"])
    let skipped = try await inside(["systemctl", "show", "vpnjob", "-p", "ActiveState", "-p", "Result"]).stdout
    let skipLog = try await inside(["journalctl", "-u", "vpnjob", "--no-pager", "-o", "cat"]).stdout
    #expect(skipped.contains("ActiveState=inactive") && !skipped.contains("ActiveState=failed"), "\(skipped)")
    #expect(skipLog.contains("Skipped due to 'exec-condition'") && skipLog.contains("via-vpn: no"), "skipped, and why: \(skipped) \(skipLog)")
    #expect(try await inside(["systemctl", "start", "--no-block", unit]).status == 0)

    // The tunnel comes up: the bound service starts, the job runs.
    let tunnel = "ip link add vpn0 type veth peer name vpn0p && ip link set vpn0p up && ip addr add 10.8.0.2/24 dev vpn0 && "
        + "ip link set vpn0 up && ip route add 0.0.0.0/1 via 10.8.0.1 dev vpn0 && ip route add 128.0.0.0/1 via 10.8.0.1 dev vpn0"
    let started = try await timedInside(inside, "vpnbound", after: tunnel, until: "active")
    func journal() async throws -> String {
        try await inside(["journalctl", "-u", unit, "-u", "vpnbound", "-u", "vpnjob", "--no-pager", "-o", "short-precise"]).stdout
    }
    let upLog = try await journal()
    #expect(started != nil, "the bound service starts with the tunnel: \(upLog)")
    _ = try await inside(["systemctl", "start", "vpnjob"])
    let ran = try await inside(["systemctl", "show", "vpnjob", "-p", "ActiveState", "-p", "Result"]).stdout
    #expect(ran.contains("ActiveState=active") && ran.contains("Result=success"), "\(ran)")

    // The tunnel goes: the bound service stops within a second.
    let stopped = try await timedInside(inside, "vpnbound", after: "ip link del vpn0", until: "inactive")
    let downLog = try await journal()
    #expect(stopped.map { $0 < 1000 } == true, "stopped after \(stopped.map { "\($0) ms" } ?? "never"): \(downLog)")

    #expect(try await inside(["systemctl", "stop", unit, "vpnjob"]).status == 0)
    _ = try await inside(["systemctl", "disable", "vpnbound.service"])
    _ = try await inside(["sh", "-c", "rm /etc/reachd/reachd.conf.d/60-vpn.conf && systemctl reload reachd && ip link del up0"])
}

/// docs/services.md's timer recipe (`ExecCondition=reachctl wait ... --timeout`) under the real
/// PID 1, with the outcomes the page states: a condition that does not hold by the timeout skips
/// the run (exit 1), a typo in it fails the unit (exit 255), where systemd lists it.
private func checkWaitRecipe(_ inside: ([String]) async throws -> Ran) async throws {
    for (name, condition, failed) in [
        ("waitjob", "/usr/bin/reachctl wait -i nolink0 --timeout 1s", false),
        ("waittypo", "/usr/bin/reachctl wait --internt --timeout 2min", true),
    ] {
        let job = "[Service]\nType=oneshot\nExecCondition=\(condition)\nExecStart=/bin/true\n"
        #expect(try await inside(["sh", "-c", "printf \"$0\" >/etc/systemd/system/\(name).service", job]).status == 0)
        #expect(try await inside(["systemctl", "daemon-reload"]).status == 0)
        _ = try await inside(["systemctl", "start", name])
        let shown = try await inside(["systemctl", "show", name, "-p", "ActiveState", "-p", "Result"]).stdout
        let log = try await inside(["journalctl", "-u", name, "--no-pager", "-o", "cat"]).stdout
        if failed {
            #expect(shown.contains("ActiveState=failed"), "\(name): a typo fails the unit: \(shown) \(log)")
            #expect(log.contains("--internt"), "\(name): the journal names the typo: \(log)")
        } else {
            #expect(shown.contains("ActiveState=inactive") && log.contains("Skipped due to 'exec-condition'"), "\(name): \(shown) \(log)")
            #expect(log.contains("reachctl: gave up after 1s waiting for nolink0 ready"), "\(name): \(log)")
        }
        _ = try await inside(["systemctl", "reset-failed", name])
    }
}

/// `reachctl check --unit` under the real PID 1, beside each unit's real outcome: a web server
/// beyond a gateway (namespace ustore: 192.0.2.1 on the container's link, 203.0.113.9 behind it),
/// units whose ExecStart= is curl to it with one sandbox each, started by systemd; reachd (as
/// packaged) must agree with what curl met, and `why --unit` name the setting that denies.
/// A namespace of the unit's own is what the shipped unit withholds from reachd (entering it
/// needs CAP_SYS_ADMIN): reachd says it cannot. A uid routed by an `ip rule uidrange` is
/// answered as curl met it.
private func checkUnitsUnderSystemd(_ inside: ([String]) async throws -> Ran) async throws {
    let setup = """
        ip netns add ustore && ip netns add uisolated && ip netns add utunnel
        ip link add up1 type veth peer name up1p netns ustore
        ip addr add 192.0.2.2/24 dev up1 && ip link set up1 up && ip route add default via 192.0.2.1 dev up1
        ip -n ustore addr add 192.0.2.1/24 dev up1p && ip -n ustore addr add 203.0.113.9/32 dev up1p
        ip -n ustore link set up1p up && ip -n ustore link set lo up
        ip link add tun1 netns utunnel type veth peer name tun1p netns ustore
        ip -n utunnel addr add 10.9.0.2/24 dev tun1 && ip -n utunnel link set tun1 up && ip -n utunnel link set lo up
        ip -n utunnel route add default via 10.9.0.1 && ip -n ustore addr add 10.9.0.1/24 dev tun1p && ip -n ustore link set tun1p up
        ip rule add uidrange 4242-4242 prohibit
        systemd-run --unit=ustore-http ip netns exec ustore /usr/bin/python3 -m http.server 8080 --bind 0.0.0.0
        for i in $(seq 50); do curl -s -m 1 -o /dev/null http://203.0.113.9:8080/ && exit 0; sleep 0.2; done; exit 1
        """
    let ready = try await inside(["sh", "-c", setup])
    try #require(ready.status == 0, "the server answers: \(ready)")

    let far = "203.0.113.9"
    // (unit, its settings, target, what denies when it does)
    let units: [(name: String, settings: String, target: String, denies: String?)] = [
        ("u-plain", "", far, nil),
        ("u-allow-one", "IPAddressDeny=any\nIPAddressAllow=192.0.2.1", far, "IPAddressDeny=any of u-allow-one.service"),
        ("u-allow-one-ok", "IPAddressDeny=any\nIPAddressAllow=192.0.2.1", "192.0.2.1", nil),
        ("u-deny-one", "IPAddressDeny=203.0.113.9", far, "IPAddressDeny=203.0.113.9/32 of u-deny-one.service"),
        ("u-interfaces", "RestrictNetworkInterfaces=wg0", far, nil),
        ("u-private", "PrivateNetwork=yes", far, "PrivateNetwork=yes of u-private.service"),
        ("u-unix", "RestrictAddressFamilies=AF_UNIX", far, "RestrictAddressFamilies=AF_UNIX of u-unix.service"),
        ("u-no-inet", "RestrictAddressFamilies=~AF_INET", far, "RestrictAddressFamilies=~AF_INET of u-no-inet.service"),
        ("u-dynamic", "DynamicUser=yes", far, nil),
        ("u-nobody", "User=nobody", far, nil),
        ("u-unix-inet", "RestrictAddressFamilies=AF_UNIX AF_INET", far, nil),
        ("u-local", "IPAddressDeny=any\nIPAddressAllow=localhost", "192.0.2.1", "IPAddressDeny=any of u-local.service"),
    ]
    for unit in units {
        let file = "[Service]\nType=oneshot\nExecStart=/usr/bin/curl -sS -m 3 -o /dev/null http://\(unit.target):8080/\n\(unit.settings)\n"
        #expect(try await inside(["sh", "-c", "printf \"$0\" >/run/systemd/system/\(unit.name).service", file]).status == 0)
    }
    for name in ["u-netns-none", "u-netns-uplink", "u-uid"] {
        let setting = ["u-netns-none": "NetworkNamespacePath=/run/netns/uisolated", "u-netns-uplink": "NetworkNamespacePath=/run/netns/utunnel",
                       "u-uid": "User=4242"][name]!
        let file = "[Service]\nType=oneshot\nExecStart=/usr/bin/curl -sS -m 3 -o /dev/null http://\(far):8080/\n\(setting)\n"
        #expect(try await inside(["sh", "-c", "printf \"$0\" >/run/systemd/system/\(name).service", file]).status == 0)
    }
    #expect(try await inside(["systemctl", "daemon-reload"]).status == 0)
    // systemd filters IP addresses only on the unified hierarchy; this container boots on a
    // hybrid one (then systemd ignores IPAddressDeny=, and reachd must say so, not deny). Booted
    // unified (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1) on these machines, systemd ignored them too,
    // saying nothing, and reachd, which cannot see why, said denied: not covered here.
    let hierarchy = "stat -f -c %T /sys/fs/cgroup | grep -q cgroup2"
    let filtered = try await inside(["sh", "-c", hierarchy]).status == 0

    for var unit in units {
        if !filtered, unit.settings.contains("IPAddress") { unit.denies = nil }
        let real = try await inside(["systemctl", "start", unit.name])
        let said = try await inside(["reachctl", "check", "--unit", unit.name, unit.target, "--json"])
        #expect(said.status == (real.status == 0 ? 0 : 1), "\(unit.name): curl \(real.status == 0 ? "reached" : "did not reach") \(unit.target); reachctl: \(said)")
        #expect((unit.denies == nil) == (real.status == 0), "\(unit.name): the real outcome is the one expected: \(real)")
        if !filtered, unit.settings.contains("IPAddress") {
            let why = try await inside(["reachctl", "why", "--unit", unit.name, unit.target])
            #expect(why.stdout.contains("IPAddressAllow= and IPAddressDeny= are not enforced"), "\(unit.name): \(why)")
        }
        if let denies = unit.denies {
            let why = try await inside(["reachctl", "why", "--unit", unit.name, unit.target])
            #expect(why.stdout.contains("broken at the policy layer") && why.stdout.contains(denies), "\(unit.name): \(why)")
        }
        _ = try await inside(["systemctl", "reset-failed", unit.name])
    }
    // Their real outcomes, and reachd's word on them as packaged.
    for (name, reaches) in [("u-netns-none", false), ("u-netns-uplink", true), ("u-uid", false)] {
        let real = try await inside(["systemctl", "start", name])
        #expect((real.status == 0) == reaches, "\(name): \(real)")
        _ = try await inside(["systemctl", "reset-failed", name])
    }
    for name in ["u-netns-none", "u-netns-uplink"] {
        let said = try await inside(["reachctl", "check", "--unit", name, far])
        #expect(said.status == 255 && said.stderr.contains("reachd cannot route in \(name).service's network namespace /run/netns/"), "\(name): \(said)")
    }
    // The shipped unit once had PrivateUsers=yes, which made every uid but reachd's no user to
    // the kernel's route lookups: this answered reachable.
    let said = try await inside(["reachctl", "check", "--unit", "u-uid", far])
    #expect(said.status == 1, "u-uid: curl was refused by the uid's prohibit rule; reachctl: \(said)")
    let cleanup = "systemctl stop ustore-http; ip rule del uidrange 4242-4242 prohibit; ip link del up1; "
        + "ip netns del utunnel; ip netns del uisolated; ip netns del ustore"
    _ = try await inside(["sh", "-c", cleanup])
}

/// issue 47's soak under the real PID 1: 20 watched services (`[Units] Watch=`), five of each
/// kind of `unitTraffic` (short requests, long idle connections, busy exchanges, bulk), all to
/// the echo server beyond the container's gateway, for `minutes` with reachd's shipped
/// defaults. Every 2 s `reachctl metrics` is read: no reachd_unit_stalled sample may be 1, nor
/// reachd_stalled; reachd's journal may hold no "its own traffic is stalled" (it logs every
/// flip, so a flag between two reads is counted too). The units must have been judged
/// (flowing) and be running at the end, so that the count means something.
private func soakWatchedUnits(_ inside: ([String]) async throws -> Ran, minutes: Int) async throws {
    let kinds = [("short", 1), ("idle", 4), ("busy", 2), ("bulk", 1)]
    let units = (1...20).map { index in (name: "u-soak\(index)", mode: kinds[index % 4].0, count: kinds[index % 4].1) }
    try await unitTrafficNetwork(inside, units: units)
    #expect(try await inside(["systemctl", "start"] + units.map(\.name)).status == 0)
    try await startReachdWatching(inside, units.map { $0.name + ".service" })
    func journal() async throws -> String { try await inside(["journalctl", "-u", "reachd", "--no-pager", "-o", "cat"]).stdout }
    // Judged first: every unit whose connections stay open and send has its cgroup's sockets
    // judged flowing (a short request's socket lives milliseconds: a poll seldom finds one open).
    let judged = ContinuousClock.now + .seconds(90)
    for unit in units where unit.mode == "busy" || unit.mode == "bulk" {
        while !(((try await jsonInside(inside, ["reachctl", "status", "--unit", unit.name, "--json"]))["traffic"] as? [String])?.first ?? "")
            .contains("flowing")
        {
            guard ContinuousClock.now < judged else {
                Issue.record("\(unit.name) (\(unit.mode)) never judged flowing: \(try await journal())")
                return
            }
            try await Task.sleep(for: .milliseconds(500))
        }
    }
    let begin = ContinuousClock.now
    var reads = 0
    var unitFlags: [String] = []
    var hostFlags = 0
    var loads: [String] = []
    while ContinuousClock.now - begin < .seconds(60 * minutes) {
        let metrics = try await inside(["reachctl", "metrics"]).stdout
        reads += 1
        unitFlags += metrics.split(separator: "\n").filter { $0.hasPrefix("reachd_unit_stalled{") && $0.hasSuffix(" 1") }.map(String.init)
        if metrics.split(separator: "\n").contains("reachd_stalled 1") { hostFlags += 1 }
        if reads % 30 == 1 { loads.append((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?") }
        try await Task.sleep(for: .seconds(2))
    }
    let log = try await journal()
    let flips = log.split(separator: "\n").filter { $0.contains("its own traffic is stalled") }
    let metrics = try await inside(["reachctl", "metrics"]).stdout
    let samples = metrics.split(separator: "\n").filter { $0.hasPrefix("reachd_unit_stalled{") }
    #expect(samples.count == 20, "a sample per watched unit: \(samples)")
    #expect(unitFlags.isEmpty && flips.isEmpty, "false flags: \(unitFlags.count) reads, \(flips.count) flips: \(flips.prefix(5))")
    #expect(hostFlags == 0, "the host's Stalled was true in \(hostFlags) of \(reads) reads")
    let running = try await inside(["systemctl", "is-active"] + units.map(\.name)).stdout.split(separator: "\n")
    #expect(running.count == 20 && running.allSatisfy { $0 == "active" }, "\(running)")
    let traffic = try await inside(["sh", "-c", "ss -tn state established '( dport = :8080 )' | tail -n +2 | wc -l"]).stdout
    print("""
        soak(units, systemd): \(minutes) min, 20 watched units (5 short requests a second, 5 × 4 idle connections, \
        5 × 2 busy exchanges every 50 ms, 5 bulk 32 KiB every 20 ms), \(reads) metric reads: \(unitFlags.count) unit flags, \
        \(flips.count) flips logged, host Stalled true in \(hostFlags) reads; \
        \(traffic.trimmingCharacters(in: .whitespacesAndNewlines)) connections established at the end; load average (1 min) every minute: \(loads.joined(separator: " "))
        """)
}

/// How long `flagsNoWatchedUnitInALongRunUnderSystemd` runs; nil (unset): it does not.
private let unitSoakMinutes = ProcessInfo.processInfo.environment["REACHD_UNIT_SOAK_MINUTES"].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil }

/// The units' traffic, to the echo server of `StallKernelTests.traffic`: clients of four kinds,
/// each as many connections as asked: `busy` (200 bytes every 50 ms, the echo read), `idle`
/// (connected, then silent), `short` (a connection a second: 200 bytes, the echo, closed) and
/// `bulk` (32 KiB every 20 ms, the echo read whole). A client whose connection fails connects again.
private let unitTraffic = #"""
    import socket, sys, threading, time
    mode = sys.argv[1]
    host, port, count = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    def exchange(c, size):
        c.sendall(b"x" * size)
        got = 0
        while got < size:
            d = c.recv(65536)
            if not d:
                raise OSError("closed")
            got += len(d)
    def client():
        while True:
            try:
                if mode == "short":
                    with socket.create_connection((host, port), timeout=30) as c:
                        exchange(c, 200)
                    time.sleep(1)
                    continue
                c = socket.create_connection((host, port), timeout=30)
                while True:
                    if mode == "idle":
                        time.sleep(3600)
                    exchange(c, 200 if mode == "busy" else 32768)
                    time.sleep(0.05 if mode == "busy" else 0.02)
            except OSError:
                time.sleep(0.5)
    for _ in range(count):
        threading.Thread(target=client, daemon=True).start()
    while True:
        time.sleep(3600)
    """#

/// The units' network inside the container: a gateway namespace (utraffic, 192.0.2.1 on the
/// container's link, 203.0.113.9 behind it) with the echo server, and `units` (name, mode,
/// connections) written as services of the traffic's client, not started.
private func unitTrafficNetwork(_ inside: ([String]) async throws -> Ran, units: [(name: String, mode: String, count: Int)]) async throws {
    let setup = """
        printf '%s' "$0" >/run/reachd-traffic.py && printf '%s' "$1" >/run/reachd-echo.py
        ip netns add utraffic
        ip link add ut1 type veth peer name ut1p netns utraffic
        ip addr add 192.0.2.2/24 dev ut1 && ip link set ut1 up && ip route add default via 192.0.2.1 dev ut1
        ip -n utraffic addr add 192.0.2.1/24 dev ut1p && ip -n utraffic addr add 203.0.113.9/32 dev ut1p
        ip -n utraffic link set ut1p up && ip -n utraffic link set lo up
        systemd-run --unit=utraffic-echo ip netns exec utraffic /usr/bin/python3 /run/reachd-echo.py server 8080
        for i in $(seq 50); do python3 -c 'import socket; socket.create_connection(("203.0.113.9", 8080), timeout=1)' 2>/dev/null && exit 0; sleep 0.2; done
        exit 1
        """
    let ready = try await inside(["sh", "-c", setup, unitTraffic, StallKernelTests.traffic])
    try #require(ready.status == 0, "the echo server answers: \(ready)")
    for unit in units {
        let file = "[Service]\nExecStart=/usr/bin/python3 /run/reachd-traffic.py \(unit.mode) 203.0.113.9 8080 \(unit.count)\n"
        #expect(try await inside(["sh", "-c", "printf '%s' \"$0\" >/run/systemd/system/\(unit.name).service", file]).status == 0)
    }
    #expect(try await inside(["systemctl", "daemon-reload"]).status == 0)
}

/// reachd as packaged, its shipped reachd.conf with `[Units] Watch=` of `units` added, started
/// afresh (reachd.socket may have started it already, on the links the network's setup made).
private func startReachdWatching(_ inside: ([String]) async throws -> Ran, _ units: [String]) async throws {
    let added = try await inside(["sh", "-c", "printf '\\n[Units]\\nWatch=%s\\n' \"$0\" >>/etc/reachd/reachd.conf", units.joined(separator: " ")])
    #expect(added.status == 0, "\(added)")
    let start = try await inside(["systemctl", "restart", "reachd.service"])
    let journal = try await inside(["journalctl", "-u", "reachd", "--no-pager"]).stdout
    try #require(start.status == 0, "\(start) \(journal)")
}

/// The JSON object a command inside printed (empty when it printed none).
private func jsonInside(_ inside: ([String]) async throws -> Ran, _ arguments: [String]) async throws -> [String: Any] {
    let ran = try await inside(arguments)
    return (try? JSONSerialization.jsonObject(with: Data(ran.stdout.utf8))) as? [String: Any] ?? [:]
}

/// issue 47 under the real PID 1: u-watched.service (reachd.conf's `[Units] Watch=`) and
/// u-other.service (not watched) each keep four busy connections to a server beyond the
/// container's gateway. An nft rule of the container's output hook on the watched unit's cgroup
/// (`socket cgroupv2 level N "…/system.slice/u-watched.service"`, resolved in the machine's
/// cgroup2 hierarchy, as the kernel's levels are counted from its root) marks its packets, and
/// the gateway drops them silently, as a path that drops one service's traffic does (a drop in
/// the container's own output hook would be a refusal its sockets see: the firewall layer's
/// case). Shipped defaults: the unit is flagged within 15 s (reachctl status and is --unit,
/// CheckUnit's traffic layer on the bus, reachd_unit_stalled), the host's Stalled (bus property
/// and reachd_stalled) false in every read while u-other's traffic flows; without the rule the
/// unit's verdict clears.
private func checkUnitTrafficUnderSystemd(_ inside: ([String]) async throws -> Ran, systemd: Int32) async throws {
    try await unitTrafficNetwork(inside, units: [("u-watched", "busy", 4), ("u-other", "busy", 4)])
    #expect(try await inside(["systemctl", "start", "u-watched", "u-other"]).status == 0)
    try await startReachdWatching(inside, ["u-watched.service"])
    func unitStatus() async throws -> [String: Any] { try await jsonInside(inside, ["reachctl", "status", "--unit", "u-watched", "--json"]) }
    func hostStalled() async throws -> Bool {
        let property = try await inside(["busctl", "get-property", busName, objectPath, busName, "Stalled"])
        return property.stdout.trimmingCharacters(in: .whitespacesAndNewlines) != "b false"
    }
    let judged = ContinuousClock.now + .seconds(60)
    while !(((try await unitStatus())["traffic"] as? [String])?.first ?? "").contains("flowing") {
        guard ContinuousClock.now < judged else {
            let facts = try await inside(["sh", "-c", "env; reachd --check-config | tail -3; reachctl why --unit u-watched --json; journalctl -u reachd --no-pager -o cat"])
            Issue.record("u-watched's own traffic never judged flowing: \(try await unitStatus()) \(facts)")
            return
        }
        try await Task.sleep(for: .milliseconds(500))
    }
    #expect(try await unitStatus()["stalled"] as? Bool == false)
    #expect(try await hostStalled() == false)

    // The unit's cgroup as the machine's hierarchy names it: its depth is the rule's level.
    let drop = """
        path=$(grep -h '^0::.*/system.slice/u-watched.service$' /proc/[0-9]*/cgroup | head -1 | cut -c4-)
        [ -n "$path" ] || { echo "no process of u-watched.service" >&2; exit 1; }
        level=$(printf '%s' "$path" | tr -cd / | wc -c)
        mount -t cgroup2 none /sys/fs/cgroup
        /usr/sbin/nft add table inet svc && /usr/sbin/nft add chain inet svc out '{ type filter hook output priority 0; }'
        /usr/sbin/nft add rule inet svc out socket cgroupv2 level "$level" "\\"${path#/}\\"" ip dscp set cs1
        echo "$level ${path#/}"
        """
    let gateway = "nft add table inet svc && nft add chain inet svc in '{ type filter hook input priority 0; }' && nft add rule inet svc in ip dscp cs1 drop"
    let dropping = try await inside(["ip", "netns", "exec", "utraffic", "sh", "-c", gateway])
    try #require(dropping.status == 0, "the gateway's drop: \(dropping)")
    // In the container's network namespace, from the machine's cgroup and mount view.
    let rule = try await execute("/usr/bin/nsenter", ["--target", "\(systemd)", "--net", "--", "/usr/bin/unshare", "-m", "/bin/sh", "-c", drop])
    try #require(rule.status == 0, "the drop rule: \(rule)")
    let begin = ContinuousClock.now
    var hostReads = 0
    var hostStalledReads = 0
    var flagged: Duration?
    while flagged == nil, ContinuousClock.now - begin < .seconds(30) {
        hostReads += 1
        if try await hostStalled() { hostStalledReads += 1 }
        if try await unitStatus()["stalled"] as? Bool == true { flagged = ContinuousClock.now - begin }
        try await Task.sleep(for: .milliseconds(500))
    }
    let seen = flagged == nil ? "\(try await unitStatus()) \(try await inside(["journalctl", "-u", "reachd", "--no-pager", "-o", "cat"]).stdout)" : ""
    let took = try #require(flagged, "u-watched flagged within 30 s (rule \(rule.stdout)): \(seen)")
    #expect(took <= .seconds(15), "flagged after \(took)")
    for _ in 0..<10 {
        hostReads += 1
        if try await hostStalled() { hostStalledReads += 1 }
        try await Task.sleep(for: .milliseconds(500))
    }
    #expect(hostStalledReads == 0, "the host's Stalled was true in \(hostStalledReads) of \(hostReads) reads")
    let text = try await inside(["reachctl", "status", "--unit", "u-watched"])
    #expect(text.stdout.contains("but its own traffic is stalled"), "\(text)")
    let condition = try await inside(["reachctl", "is", "--unit", "u-watched", "online"])
    #expect(condition.status == 1 && condition.stderr.contains("u-watched.service's own traffic stopped flowing"), "\(condition)")
    let other = try await inside(["reachctl", "is", "--unit", "u-other", "online"])
    #expect(other.status == 0, "an unwatched unit answers as the host: \(other)")
    let call = try await inside(["busctl", "call", "--json=short", busName, objectPath, busName, "CheckUnit", "ss", "u-watched", ""])
    #expect(call.stdout.contains("\"traffic\",\"broken\"") && call.stdout.contains(#""TrafficScope":{"type":"s","data":"unit"}"#),
            "CheckUnit on the bus: \(call)")
    let metrics = try await inside(["reachctl", "metrics"]).stdout
    #expect(metrics.contains("reachd_unit_stalled{unit=\"u-watched.service\"} 1") && metrics.contains("reachd_stalled 0"), "\(metrics)")
    print("stall(unit, systemd): u-watched flagged \(took) after its cgroup's packets were dropped (rule level \(rule.stdout.trimmingCharacters(in: .whitespacesAndNewlines))); the host's Stalled false in \(hostReads) reads")

    #expect(try await inside(["ip", "netns", "exec", "utraffic", "nft", "delete", "table", "inet", "svc"]).status == 0)
    let restored = ContinuousClock.now
    while try await unitStatus()["stalled"] as? Bool != false {
        guard ContinuousClock.now - restored < .seconds(45) else {
            Issue.record("u-watched's verdict did not clear within 45 s: \(try await unitStatus())")
            return
        }
        try await Task.sleep(for: .milliseconds(500))
    }
    #expect(try await inside(["reachctl", "is", "--unit", "u-watched", "online"]).status == 0)
    let cleared = try await inside(["reachctl", "metrics"]).stdout
    #expect(cleared.contains("reachd_unit_stalled{unit=\"u-watched.service\"} 0"), "\(cleared)")
    print("stall(unit, systemd): cleared \(ContinuousClock.now - restored) after the drop rule went")
    _ = try await inside(["sh", "-c", "systemctl stop u-watched u-other utraffic-echo reachd; ip link del ut1; ip netns del utraffic"])
}

/// issue 45's done-when under the real PID 1, with the issue's numbers and the shipped lead
/// (EndingLead=1m): the network's portal API (RFC 8908, HTTPS with a CA made for the test, in a
/// gateway namespace beyond the container's uplink) answers `{"captive": false,
/// "seconds-remaining": 120}` for the lease dhclient recorded (option 114), and counts down from
/// there as a real session does (reachd asks again when the lead begins). A service bound to
/// reachd-is@no-portal.service runs while the session has time left, is stopped 60 ± 2 s before
/// its end, and starts again once the API tells of a renewal (reachd asks again every 15 s within
/// the lead). reachd as packaged, sandboxed, asks the API bound to the link. About 80 s.
private func checkPortalSessionUnits(_ inside: ([String]) async throws -> Ran) async throws {
    let certificates = try makeScratchDirectory("portal-nspawn-ca")
    defer { removeTree(certificates) }
    try PortalServer.makeCertificates(in: certificates, address: "192.0.2.1")
    let pem = try ["ca.pem", "server.pem", "server.key"].map { try String(contentsOfFile: certificates + "/" + $0, encoding: .utf8) }
    let setup = """
        mkdir -p /run/reachd-portal && cd /run/reachd-portal
        printf '%s' "$0" >server.py && printf '%s' "$1" >ca.pem && printf '%s' "$2" >server.pem && printf '%s' "$3" >server.key
        printf 'application/captive+json\\n{"captive": false}' >answer
        cp ca.pem /etc/reachd/portal-ca.pem && chmod 644 /etc/reachd/portal-ca.pem
        ip netns add uportal
        ip link add up1 type veth peer name up1p netns uportal
        ip addr add 192.0.2.2/24 dev up1 && ip link set up1 up && ip route add default via 192.0.2.1 dev up1
        ip -n uportal addr add 192.0.2.1/24 dev up1p && ip -n uportal link set up1p up && ip -n uportal link set lo up
        systemd-run --unit=uportal-api ip netns exec uportal /usr/bin/python3 /run/reachd-portal/server.py /run/reachd-portal 192.0.2.1
        printf '\\n[Portal]\\nCAFile=/etc/reachd/portal-ca.pem\\n' >>/etc/reachd/reachd.conf
        mkdir -p /var/lib/dhcp
        systemctl restart reachd.service || exit 2
        for i in $(seq 50); do python3 -c 'import socket; socket.create_connection(("192.0.2.1", 8443), timeout=1)' 2>/dev/null && exit 0; sleep 0.2; done
        exit 1
        """
    let ready = try await inside(["sh", "-c", setup, PortalServer.script] + pem)
    try #require(ready.status == 0, "the portal API answers and reachd runs: \(ready)")
    let unit = "reachd-is@no-portal.service"
    let written = try await inside(["sh", "-c", "printf '%s\\n' \"$0\" >/etc/systemd/system/follower.service", boundService(to: unit)])
    #expect(written.status == 0, "\(written)")
    #expect(try await inside(["systemctl", "daemon-reload"]).status == 0)
    #expect(try await inside(["systemctl", "enable", "follower.service"]).status == 0)
    // No portal announced: no-portal holds, and the bound service runs.
    let started = try await timedInside(inside, "follower", after: "systemctl start --no-block \(unit)", until: "active")
    func journal() async throws -> String {
        try await inside(["journalctl", "-u", "reachd", "-u", unit, "-u", "follower", "--no-pager", "-o", "short-precise"]).stdout
    }
    let before = try await journal()
    try #require(started != nil, "the bound service starts while no portal is announced: \(before)")

    // The session ends in 120 s (the API counts down: `{"captive": false, "seconds-remaining":
    // 120}` now), and dhclient's lease names the API (written whole, then renamed in).
    let lease = "lease {\n  interface \"up1\";\n  fixed-address 192.0.2.2;\n  option default-url \"https://192.0.2.1:8443/api\";\n}\n"
    let leased = try await inside(["sh", "-c", "echo $(( $(date +%s) + 120 )) >/run/reachd-portal/ends && "
        + "printf '%s' \"$0\" >/var/lib/dhcp/.lease && mv /var/lib/dhcp/.lease /var/lib/dhcp/dhclient.up1.leases", lease])
    #expect(leased.status == 0, "\(leased)")
    var ends: Double?
    let asked = ContinuousClock.now + .seconds(5)
    while ends == nil, ContinuousClock.now < asked {
        let session = try await jsonInside(inside, ["reachctl", "status", "--json", "--daemon"])["portalSession"] as? [String: Any]
        ends = (session?["ends"] as? Double).flatMap { $0 > 0 ? $0 / 1e6 : nil }
        if ends == nil { try await Task.sleep(for: .milliseconds(100)) }
    }
    let asking = try await journal()
    let end = try #require(ends, "the API's session within 5 s of the lease: \(asking)")
    #expect(abs(end - Date().timeIntervalSince1970 - 120) < 5, "ends \(end)")
    #expect(try await inside(["reachctl", "is", "no-portal", "--daemon"]).status == 0)
    #expect(try await inside(["systemctl", "is-active", "follower"]).stdout.hasPrefix("active"))

    // 60 s before the end, the bound service is stopped.
    var stopped: Double?
    while stopped == nil, Date().timeIntervalSince1970 < end - 50 {
        if try await inside(["systemctl", "is-active", "follower"]).stdout.hasPrefix("inactive") { stopped = Date().timeIntervalSince1970 }
        else { try await Task.sleep(for: .milliseconds(100)) }
    }
    let waited = try await journal()
    let stop = try #require(stopped, "the bound service still runs 50 s before the end: \(waited)")
    #expect(abs(end - stop - 60) <= 2, "stopped \(end - stop) s before the end")
    print("portal(systemd): the service bound to no-portal stopped \(end - stop) s before the session's end (lead 60 s)")
    let ending = try await inside(["reachctl", "is", "no-portal", "--daemon"])
    #expect(ending.status == 1 && ending.stderr.contains("ends within the lead time"), "\(ending)")

    // The API tells of a renewal: the service runs again.
    let renewal = "echo $(( $(date +%s) + 600 )) >/run/reachd-portal/ends.tmp && mv /run/reachd-portal/ends.tmp /run/reachd-portal/ends"
    let renewed = ContinuousClock.now
    #expect(try await inside(["sh", "-c", renewal]).status == 0)
    var again = false
    while !again, ContinuousClock.now - renewed < .seconds(20) {
        again = try await inside(["systemctl", "is-active", "follower"]).stdout.hasPrefix("active")
        if !again { try await Task.sleep(for: .milliseconds(200)) }
    }
    let log = try await journal()
    #expect(again, "the bound service runs again after the renewal: \(log)")
    print("portal(systemd): started again \(ContinuousClock.now - renewed) after the API's renewal")
    #expect(try await inside(["reachctl", "is", "no-portal", "--daemon"]).status == 0)
    #expect(log.contains("reachctl: no longer holds: no-portal"), "\(log)")
    #expect(!log.contains("answering in-process"), "\(log)")
    _ = try await inside(["sh", "-c", "systemctl stop \(unit) follower uportal-api; systemctl disable follower; ip link del up1; ip netns del uportal"])
}

// MARK: - Processes

/// A finished program: exit status and both streams.
private struct Ran: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    var command: String
    var description: String { "\(command) exited \(status); stdout: \(stdout); stderr: \(stderr)" }
}

private func programExists(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }

/// Runs a program to completion (killed after `timeout`), both streams captured.
private func execute(
    _ program: String, _ arguments: [String], environment: [String: String]? = nil, timeout: Duration = .seconds(120)
) async throws -> Ran {
    let child = try ChildProcess(program, arguments, environment: environment)
    guard let status = try await child.exit(timeout: timeout) else {
        child.kill()
        throw TimedOut(what: "\(child.command): \(child.errorOutput)")
    }
    return Ran(status: status, stdout: child.output, stderr: child.errorOutput, command: child.command)
}
