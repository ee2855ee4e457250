#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import Reachability

// reachd.conf and its drop-ins: the pure parser fed literal text, and the loader fed throwaway
// directories under /tmp (no root needed; each test makes and removes its own).

// MARK: - Helpers

/// Parses `text` on top of the defaults as the file `test.conf`.
private func parsed(_ text: String) -> (configuration: Configuration, errors: [String]) {
    var configuration = Configuration.default
    let errors = Configuration.parse(text, file: "test.conf", into: &configuration)
    return (configuration, errors.map(\.description))
}

/// A directory under /tmp standing in for /etc/reachd (or /run/reachd ...), removed afterwards.
private struct Scratch {
    let root: String

    func path(_ relative: String) -> String { root + "/" + relative }

    func directory(_ relative: String) throws {
        var path = root
        for component in relative.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) != 0, errno != EEXIST { throw SetupFailure(call: "mkdir", path: path, code: errno) }
        }
    }

    func write(_ relative: String, _ contents: String) throws {
        try write(relative, bytes: Array(contents.utf8))
    }

    func write(_ relative: String, bytes: [UInt8]) throws {
        try directory(relative.split(separator: "/").dropLast().joined(separator: "/"))
        let target = path(relative)
        let descriptor = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SetupFailure(call: "open", path: target, code: errno) }
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { throw SetupFailure(call: "write", path: target, code: errno) }
            offset += written
        }
    }

    func symlink(_ relative: String, to target: String) throws {
        try directory(relative.split(separator: "/").dropLast().joined(separator: "/"))
        guard Glibc.symlink(target, path(relative)) == 0 else {
            throw SetupFailure(call: "symlink", path: path(relative), code: errno)
        }
    }
}

private func withScratch(_ body: (Scratch) throws -> Void) throws {
    let scratch = Scratch(root: try makeScratchDirectory("reachd-config"))
    defer { removeTree(scratch.root) }
    try body(scratch)
}


/// The load's configuration, or a test failure listing its errors.
private func loaded(_ directories: [String]) throws -> Configuration {
    switch Configuration.load(directories: directories) {
    case .success(let configuration): return configuration
    case .failure(let errors):
        Issue.record("unexpected configuration errors:\n\(errors)")
        throw errors
    }
}

/// The load's error lines; none is a test failure.
private func loadErrors(_ directories: [String]) -> [String] {
    switch Configuration.load(directories: directories) {
    case .success(let configuration):
        Issue.record("expected errors, loaded \(configuration)")
        return []
    case .failure(let errors): return errors.errors.map(\.description)
    }
}

/// The repository's `packaging/` directory, found from this file's path.
private let packagingDirectory: String = {
    var components = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    components.removeLast(3)  // ConfigurationTests.swift, ReachabilityTests, Tests
    return components.joined(separator: "/") + "/packaging"
}()

// MARK: - Values

@Suite("Configuration values")
struct ConfigurationValueTests {
    @Test func defaultsAreTheDocumentedOnes() {
        let configuration = Configuration.default
        #expect(configuration.defaultTimeout == .seconds(5))
        #expect(configuration.maxConcurrentLookups == 64)
        #expect(configuration.negativeCacheTime == .seconds(5))
        #expect(configuration.maxWatchesPerClient == 64)
        #expect(configuration.maxWatches == 4096)
        #expect(configuration.priorities == [
            .vpn: 50, .wired: 100, .wifi: 600, .cellular: 700, .bridge: 800, .virtual: 800, .other: 800, .loopback: 1000,
        ])
        #expect(configuration.rules.isEmpty)
        #expect(configuration.sources.isEmpty)
        #expect(Configuration.default == Configuration())
    }

    @Test func emptyTextChangesNothing() {
        let (configuration, errors) = parsed("")
        #expect(errors.isEmpty)
        #expect(configuration == .default)
    }

    @Test func everyKeyIsParsed() {
        let (configuration, errors) = parsed("""
            [Checks]
            DefaultTimeout=1.5s
            MaxConcurrentLookups=8
            NegativeCacheTime=0
            [Limits]
            MaxWatchesPerClient=3
            MaxWatches=30
            [Priorities]
            VPN=1
            Wired=2
            WiFi=3
            Cellular=4
            Bridge=5
            Virtual=6
            Other=7
            Loopback=8
            [Interface]
            Name=wwan*
            Kind=cellular
            Ignore=no
            Metered=yes
            Priority=250
            """)
        #expect(errors == [])
        var expected = Configuration.default
        expected.defaultTimeout = .milliseconds(1500)
        expected.maxConcurrentLookups = 8
        expected.negativeCacheTime = .zero
        expected.maxWatchesPerClient = 3
        expected.maxWatches = 30
        expected.priorities = [
            .vpn: 1, .wired: 2, .wifi: 3, .cellular: 4, .bridge: 5, .virtual: 6, .other: 7, .loopback: 8,
        ]
        expected.rules = [InterfaceRule(pattern: "wwan*", kind: .cellular, ignore: false, metered: true, priority: 250)]
        #expect(configuration == expected)
    }

    @Test func ruleKeysAreOptionalButName() {
        let (configuration, errors) = parsed("[Interface]\nName=docker?\n[Interface]\nName=tun0\nKind=vpn\n")
        #expect(errors == [])
        #expect(configuration.rules == [
            InterfaceRule(pattern: "docker?"), InterfaceRule(pattern: "tun0", kind: .vpn),
        ])
    }

    @Test(arguments: [
        ("yes", true), ("no", false), ("true", true), ("false", false), ("on", true), ("off", false),
        ("1", true), ("0", false), ("YES", true), ("Off", false),
    ])
    func booleanSpellings(text: String, value: Bool) {
        let (configuration, errors) = parsed("[Interface]\nName=eth0\nIgnore=\(text)\nMetered=\(text)\nProbe=\(text)\n")
        #expect(errors == [])
        #expect(configuration.rules == [InterfaceRule(pattern: "eth0", ignore: value, metered: value, probe: value)])
    }

    @Test(arguments: InterfaceKind.allCases)
    func everyKindIsAcceptedInAnyCase(kind: InterfaceKind) {
        let (configuration, errors) = parsed("""
            [Interface]
            Name=a
            Kind=\(kind.rawValue)
            [Interface]
            Name=b
            Kind=\(kind.rawValue.uppercased())
            """)
        #expect(errors == [])
        #expect(configuration.rules.map(\.kind) == [kind, kind])
    }

    @Test func priorityKeysIgnoreCase() {
        let (configuration, errors) = parsed("[Priorities]\nwifi=10\nWIRED=20\nvPn=30\n")
        #expect(errors == [])
        #expect(configuration.priorities[.wifi] == 10)
        #expect(configuration.priorities[.wired] == 20)
        #expect(configuration.priorities[.vpn] == 30)
        #expect(configuration.priorities[.cellular] == 700)
    }

    @Test func boundsAreInclusive() {
        let (low, lowErrors) = parsed(
            "[Checks]\nDefaultTimeout=10ms\nMaxConcurrentLookups=1\n[Limits]\nMaxWatchesPerClient=1\nMaxWatches=1\n[Priorities]\nOther=0\n")
        #expect(lowErrors == [])
        #expect(low.defaultTimeout == .milliseconds(10))
        #expect(low.priorities[.other] == 0)
        let (high, highErrors) = parsed("""
            [Checks]
            DefaultTimeout=5m
            MaxConcurrentLookups=4096
            NegativeCacheTime=1h
            [Limits]
            MaxWatchesPerClient=100000
            MaxWatches=1000000
            [Priorities]
            Other=100000
            """)
        // "1h" is a systemd time span, as DurationText reads them.
        #expect(highErrors == [])
        #expect(high.defaultTimeout == .seconds(300))
        #expect(high.maxConcurrentLookups == 4096)
        #expect(high.negativeCacheTime == .seconds(3600))
        #expect(high.maxWatches == 1_000_000)
        #expect(high.priorities[.other] == 100_000)
    }

    @Test func durationsAreSystemdTimeSpans() {
        let (configuration, errors) = parsed("[Checks]\nDefaultTimeout=1min 30s\nNegativeCacheTime=1h\n[WaitOnline]\nTimeout=2min\n")
        #expect(errors == [])
        #expect(configuration.defaultTimeout == .seconds(90))
        #expect(configuration.negativeCacheTime == .seconds(3600))
        #expect(configuration.waitOnlineTimeout == .seconds(120))
    }

    @Test func laterScalarAssignmentWins() {
        let (configuration, errors) = parsed("[Checks]\nMaxConcurrentLookups=1\n[Limits]\n[Checks]\nMaxConcurrentLookups=2\n")
        #expect(errors == [])
        #expect(configuration.maxConcurrentLookups == 2)
    }

    @Test func applyFillsTheCoreConfiguration() {
        var configuration = Configuration.default
        configuration.maxConcurrentLookups = 7
        configuration.priorities[.wifi] = 90
        configuration.rules = [InterfaceRule(pattern: "wl*", metered: true), InterfaceRule(pattern: "veth*", ignore: true)]
        var monitor = CoreConfiguration()
        monitor.sysfsRoot = "/fake"
        configuration.apply(to: &monitor)
        #expect(monitor.rules == configuration.rules)
        #expect(monitor.priorities == configuration.priorities)
        #expect(monitor.maximumConcurrentLookups == 7)
        #expect(monitor.sysfsRoot == "/fake")  // what configuration does not set stays
    }

    @Test func appliedRulesAndPrioritiesReachTheClassifier() {
        let (configuration, errors) = parsed("[Priorities]\nWiFi=40\n[Interface]\nName=wl*\nMetered=yes\n")
        #expect(errors == [])
        var monitor = CoreConfiguration()
        configuration.apply(to: &monitor)
        let classifier = Classifier(rules: monitor.rules, priorities: monitor.priorities)
        let link = Link(index: 3, name: "wlan0", flags: .up, hardwareType: Link.hardwareEther, operState: .up)
        let classification = classifier.classify(link, device: DeviceFacts(deviceType: "wlan", hasPhy80211: true))
        #expect(classification.kind == .wifi)
        #expect(classification.isMetered)
        #expect(classification.priority == 40)
    }
}

// MARK: - Syntax

@Suite("Configuration syntax")
struct ConfigurationSyntaxTests {
    @Test func commentsBlankLinesAndWhitespace() {
        let (configuration, errors) = parsed(
            "# a comment\n; another\n\n   [Checks]   \n\t# indented comment\n  DefaultTimeout \t=\t 2s  \r\n"
                + "MaxConcurrentLookups=9\r\n\n[Interface]\n  Name = a b  \n")
        #expect(errors == [])
        #expect(configuration.defaultTimeout == .seconds(2))
        #expect(configuration.maxConcurrentLookups == 9)
        #expect(configuration.rules == [InterfaceRule(pattern: "a b")])
    }

    @Test func aHashInsideAValueIsNotAComment() {
        let (configuration, errors) = parsed("[Interface]\nName=eth#1\n")
        #expect(errors == [])
        #expect(configuration.rules.first?.pattern == "eth#1")
    }

    @Test func continuedLinesJoinWithASpace() {
        let (configuration, errors) = parsed("""
            [Checks]
            DefaultTimeout=\\
              250ms
            [Interface]
            Name=x\\
            # a comment between continued lines is skipped
            ; so is this one
            y
            Kind=wifi
            """)
        #expect(errors == [])
        #expect(configuration.defaultTimeout == .milliseconds(250))
        #expect(configuration.rules == [InterfaceRule(pattern: "x y", kind: .wifi)])
    }

    @Test func aContinuationKeepsTheFirstLinesNumberForErrors() {
        let (_, errors) = parsed("[Checks]\n\nDefaultTimeout=\\\n  soon\n")
        #expect(errors == [
            "test.conf:3: [Checks] DefaultTimeout: invalid duration 'soon': it is not a duration; use "
                + DurationText.acceptedForms,
        ])
    }

    @Test func anEscapedBackslashAtTheEndIsNoContinuation() {
        let (configuration, errors) = parsed("[Interface]\nName=wl\\\\\nKind=wifi\n")
        #expect(errors == [])
        #expect(configuration.rules == [InterfaceRule(pattern: "wl\\\\", kind: .wifi)])
    }

    @Test func aContinuationAtTheEndOfTheFileEndsThere() {
        let (configuration, errors) = parsed("[Interface]\nName=eth\\")
        #expect(errors == [])
        #expect(configuration.rules == [InterfaceRule(pattern: "eth")])
    }

    @Test func aBlankLineEndsAContinuation() {
        let (configuration, errors) = parsed("[Interface]\nName=eth0\\\n\nKind=wired\n")
        #expect(errors == [])
        #expect(configuration.rules == [InterfaceRule(pattern: "eth0", kind: .wired)])
    }

    @Test func aByteOrderMarkIsSkipped() {
        let (configuration, errors) = parsed("\u{FEFF}[Limits]\nMaxWatches=5\n")
        #expect(errors == [])
        #expect(configuration.maxWatches == 5)
    }

    @Test func aFileWithoutFinalNewlineParses() {
        let (configuration, errors) = parsed("[Limits]\nMaxWatches=77")
        #expect(errors == [])
        #expect(configuration.maxWatches == 77)
    }
}

// MARK: - Errors

@Suite("Configuration errors")
struct ConfigurationErrorTests {
    static let duration = DurationText.acceptedForms

    /// Each class of error, with the exact line the user sees.
    @Test(arguments: [
        ("[Check]\n", "test.conf:1: unknown section [Check]; did you mean [Checks]?"),
        ("\n[interface]\n", "test.conf:2: unknown section [interface]; did you mean [Interface]?"),
        ("[Network]\n", "test.conf:1: [Network] section without ID=; every [Network] rule needs the network's name"),
        ("[Network]\nID=0123456789ABCDEF\n", "test.conf:2: [Network] ID: '0123456789ABCDEF' is not a network's name; expected 16 hexadecimal digits (lowercase) as reachctl status --verbose shows it"),
        ("[Network]\nID=0123456789abcdef\nMetered=yes\nMetered=no\n", "test.conf:4: [Network] Metered: set twice in one section (first at line 3); each [Network] section is one rule"),
        ("[Network]\nID=0123456789abcdef\n[Network]\nID=0123456789abcdef\n", "test.conf:3: [Network] ID: a rule for network 0123456789abcdef already starts at line 1 of this file; merge the two sections"),
        ("[Checks\n", "test.conf:1: invalid section header '[Checks'; expected [Name]"),
        ("[Checks]\nDefaultTimout=1s\n", "test.conf:2: [Checks] DefaultTimout: unknown key; did you mean 'DefaultTimeout'?"),
        ("[Checks]\ndefaulttimeout=1s\n", "test.conf:2: [Checks] defaulttimeout: unknown key; did you mean 'DefaultTimeout'?"),
        ("[Limits]\nFoo=1\n", "test.conf:2: [Limits] Foo: unknown key; valid keys are MaxWatchesPerClient, MaxWatchesPerUser, MaxWatches, MaxHostChecksPerUser, MaxHostChecks"),
        ("[Priorities]\nWi-Fi=1\n", "test.conf:2: [Priorities] Wi-Fi: unknown key; did you mean 'WiFi'?"),
        ("[Interface]\nName=a\nKnd=wifi\n", "test.conf:3: [Interface] Knd: unknown key; did you mean 'Kind'?"),
        ("DefaultTimeout=1s\n", "test.conf:1: DefaultTimeout: assignment outside any section; put it below a section header such as [Checks]"),
        ("[Checks]\nDefaultTimeout 5s\n", "test.conf:2: [Checks] line without '=': 'DefaultTimeout 5s'; expected Key=Value"),
        ("[Checks]\n = 5s\n", "test.conf:2: [Checks] line '= 5s' has no key before '='"),
        ("[Checks]\nDefaultTimeout=\n", "test.conf:2: [Checks] DefaultTimeout: empty value; give a duration such as 5s or 500ms or remove the line"),
        ("[Limits]\nMaxWatches=  \n", "test.conf:2: [Limits] MaxWatches: empty value; give a whole number or remove the line"),
        ("[Checks]\nDefaultTimeout=soon\n", "test.conf:2: [Checks] DefaultTimeout: invalid duration 'soon': it is not a duration; use \(duration)"),
        ("[Checks]\nDefaultTimeout=5ms\n", "test.conf:2: [Checks] DefaultTimeout: duration '5ms' is out of range: must be from 10ms to 5m"),
        ("[Checks]\nNegativeCacheTime=2m\nNegativeCacheTime=61m\n", "test.conf:3: [Checks] NegativeCacheTime: duration '61m' is out of range: must be from 0s to 60m"),
        ("[Checks]\nMaxConcurrentLookups=lots\n", "test.conf:2: [Checks] MaxConcurrentLookups: invalid number 'lots'; expected a whole number from 1 to 4096"),
        ("[Checks]\nMaxConcurrentLookups=-1\n", "test.conf:2: [Checks] MaxConcurrentLookups: invalid number '-1'; expected a whole number from 1 to 4096"),
        ("[Checks]\nMaxConcurrentLookups=0\n", "test.conf:2: [Checks] MaxConcurrentLookups: number 0 is out of range; expected a whole number from 1 to 4096"),
        ("[Limits]\nMaxHostChecks=0\n", "test.conf:2: [Limits] MaxHostChecks: number 0 is out of range; expected a whole number from 1 to 1000000"),
        ("[Limits]\nMaxHostChecksPerUser=many\n", "test.conf:2: [Limits] MaxHostChecksPerUser: invalid number 'many'; expected a whole number from 1 to 1000000"),
        ("[Limits]\nMaxWatches=99999999999999999999999\n", "test.conf:2: [Limits] MaxWatches: number 99999999999999999999999 is out of range; expected a whole number from 1 to 1000000"),
        ("[Priorities]\nwifi=0x10\n", "test.conf:2: [Priorities] wifi: invalid number '0x10'; expected a whole number from 0 to 100000"),
        ("[Interface]\nName=a\nIgnore=maybe\n", "test.conf:3: [Interface] Ignore: invalid boolean 'maybe'; expected yes, no, true, false, on, off, 1 or 0"),
        ("[Interface]\nName=a\nKind=wlan\n", "test.conf:3: [Interface] Kind: unknown interface kind 'wlan'; expected one of loopback, wired, wifi, cellular, vpn, bridge, virtual, other"),
        ("[Interface]\nName=wl[an\n", "test.conf:2: [Interface] Name: interface pattern \"wl[an\" has a \"[\" without a closing \"]\""),
        ("[Interface]\nName=abcdefghijklmnop\n", "test.conf:2: [Interface] Name: interface pattern \"abcdefghijklmnop\" needs at least 16 bytes but interface names have at most 15"),
        ("[Interface]\nName=a\nPriority=100001\n", "test.conf:3: [Interface] Priority: number 100001 is out of range; expected a whole number from 0 to 100000"),
        ("[Checks]\n[Interface]\nKind=wifi\n", "test.conf:2: [Interface] section without Name=; every rule needs the interface names it applies to"),
        ("[Interface]\nName=a\nKind=wifi\nKind=wired\n", "test.conf:4: [Interface] Kind: set twice in one section (first at line 3); each [Interface] section is one rule"),
        ("[Interface]\nName=a\n\n[Interface]\nName=a\n", "test.conf:4: [Interface] Name: a rule for 'a' already starts at line 1 of this file; merge the two sections"),
    ])
    func errorClass(text: String, expected: String) {
        let (_, errors) = parsed(text)
        #expect(errors == [expected])
    }

    @Test func errorsCarryTheirParts() {
        var configuration = Configuration.default
        let errors = Configuration.parse("[Checks]\nMaxWatches=1\n", file: "/etc/reachd/reachd.conf", into: &configuration)
        #expect(errors == [ConfigurationError(
            file: "/etc/reachd/reachd.conf", line: 2, section: "Checks", key: "MaxWatches",
            message: "unknown key; valid keys are DefaultTimeout, MaxConcurrentLookups, NegativeCacheTime, LookupsPerUserPerSecond, LookupBurstPerUser")])
    }

    @Test func allErrorsOfAFileAreCollectedInLineOrder() {
        let (configuration, errors) = parsed("""
            [Checks]
            DefaultTimeout=soon
            MaxConcurrentLookups=8
            Bogus=1
            [Limits]
            MaxWatches=0
            [Interface]
            Kind=wifi
            [Interface]
            Name=eth0
            Metered=perhaps
            [Priorities]
            WiFi=
            """)
        #expect(errors == [
            "test.conf:2: [Checks] DefaultTimeout: invalid duration 'soon': it is not a duration; use \(Self.duration)",
            "test.conf:4: [Checks] Bogus: unknown key; valid keys are DefaultTimeout, MaxConcurrentLookups, NegativeCacheTime, LookupsPerUserPerSecond, LookupBurstPerUser",
            "test.conf:6: [Limits] MaxWatches: number 0 is out of range; expected a whole number from 1 to 1000000",
            "test.conf:7: [Interface] section without Name=; every rule needs the interface names it applies to",
            "test.conf:11: [Interface] Metered: invalid boolean 'perhaps'; expected yes, no, true, false, on, off, 1 or 0",
            "test.conf:13: [Priorities] WiFi: empty value; give a whole number or remove the line",
        ])
        // The good lines still applied; the bad ones left their defaults.
        #expect(configuration.maxConcurrentLookups == 8)
        #expect(configuration.defaultTimeout == .seconds(5))
        #expect(configuration.maxWatches == 4096)
    }

    @Test func aRuleWithABadLineIsDroppedWhole() {
        let (configuration, errors) = parsed("[Interface]\nName=wl*\nKind=wlan\nIgnore=yes\n[Interface]\nName=eth0\n")
        #expect(errors.count == 1)
        #expect(configuration.rules == [InterfaceRule(pattern: "eth0")])
    }

    @Test func linesAfterAnUnknownSectionAreNotReportedAgain() {
        let (_, errors) = parsed("[Resolve]\nDNS=1.1.1.1\nDomains=~.\n[Checks]\nFoo=1\n")
        #expect(errors == [
            "test.conf:1: unknown section [Resolve]; valid sections are [Checks], [Limits], [Priorities], [Connectivity], [Portal], [WaitOnline], [Compatibility], [Metrics], [Stall], [Units], [Interface], [Network]",
            "test.conf:5: [Checks] Foo: unknown key; valid keys are DefaultTimeout, MaxConcurrentLookups, NegativeCacheTime, LookupsPerUserPerSecond, LookupBurstPerUser",
        ])
    }

    @Test func moreThanTenThousandLinesAreRefused() {
        let fits = String(repeating: "#\n", count: Configuration.maximumLines)
        #expect(parsed(fits).errors == [])
        let (_, errors) = parsed(fits + "[Checks]\nDefaultTimeout=soon\n")
        #expect(errors == ["test.conf:10001: more than 10000 lines; the file is refused"])
    }

    @Test func moreThanAThousandRulesAreRefused() {
        let rules = (0...Configuration.maximumRules).map { "[Interface]\nName=eth\($0)\n" }.joined()
        let (configuration, errors) = parsed(rules)
        #expect(errors == [
            "test.conf:2001: [Interface] more than 1000 rules; merge rules with globs",
        ])
        #expect(configuration.rules.count == Configuration.maximumRules)
    }

    @Test func textOverOneMebibyteIsRefused() {
        let text = "[Checks]\n" + String(repeating: "#", count: Configuration.maximumFileBytes)
        #expect(parsed(text).errors == [
            "test.conf: the file is 1048585 bytes, more than the limit of 1048576 (1 MiB); it is refused",
        ])
    }

    @Test func suggestionsStopAtEditDistanceTwo() {
        #expect(Suggestion.nearest(to: "MaxWatchs", among: ["MaxWatches", "MaxWatchesPerClient"]) == "MaxWatches")
        #expect(Suggestion.nearest(to: "axWatchs", among: ["MaxWatches"]) == "MaxWatches")
        #expect(Suggestion.nearest(to: "xWatchs", among: ["MaxWatches"]) == nil)
        #expect(Suggestion.nearest(to: "MAXWATCHES", among: ["MaxWatches"]) == "MaxWatches")
        #expect(Suggestion.editDistance(Array("kitten".unicodeScalars), Array("sitting".unicodeScalars)) == 3)
    }

    @Test func errorsDescribeWithoutTheMissingParts() {
        #expect(ConfigurationError(file: "/x.conf", line: nil, message: "is a directory, not a file").description
            == "/x.conf: is a directory, not a file")
        #expect(ConfigurationError(file: "/x.conf", line: 4, section: "Checks", message: "m").description
            == "/x.conf:4: [Checks] m")
        #expect(ConfigurationErrors([
            ConfigurationError(file: "a", line: 1, message: "one"), ConfigurationError(file: "b", line: 2, message: "two"),
        ]).description == "a:1: one\nb:2: two")
    }
}

// MARK: - Files

@Suite("Configuration files")
struct ConfigurationFileTests {
    @Test func noFilesMeanTheDefaults() throws {
        try withScratch { scratch in
            #expect(Configuration.load(directories: [scratch.root]) == .success(.default))
            #expect(Configuration.load(directories: [scratch.path("does/not/exist")]) == .success(.default))
            #expect(Configuration.load(directories: []) == .success(.default))
        }
    }

    @Test func dropInsOverrideTheMainFileInLexicalOrder() throws {
        try withScratch { scratch in
            // Written out of order: the directory's order must not matter.
            try scratch.write("reachd.conf.d/20-b.conf", "[Checks]\nDefaultTimeout=3s\n[Interface]\nName=c*\n")
            try scratch.write("reachd.conf.d/10-a.conf", "[Checks]\nDefaultTimeout=2s\n[Limits]\nMaxWatches=10\n[Interface]\nName=b*\n")
            try scratch.write("reachd.conf", "[Checks]\nDefaultTimeout=1s\nMaxConcurrentLookups=5\n[Interface]\nName=a*\n")
            // Not drop-ins: another suffix, a backup, a hidden file.
            try scratch.write("reachd.conf.d/README", "not a configuration file")
            try scratch.write("reachd.conf.d/30-c.conf.bak", "[Checks]\nDefaultTimeout=9s\n")
            try scratch.write("reachd.conf.d/.40-d.conf", "[Checks]\nDefaultTimeout=9s\n")

            let configuration = try loaded([scratch.root])
            #expect(configuration.defaultTimeout == .seconds(3))
            #expect(configuration.maxConcurrentLookups == 5)
            #expect(configuration.maxWatches == 10)
            #expect(configuration.rules.map(\.pattern) == ["a*", "b*", "c*"])
            #expect(configuration.sources == [
                scratch.path("reachd.conf"), scratch.path("reachd.conf.d/10-a.conf"), scratch.path("reachd.conf.d/20-b.conf"),
            ])
        }
    }

    @Test func lexicalOrderIsByteOrder() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf.d/a.conf", "[Limits]\nMaxWatches=1\n")
            try scratch.write("reachd.conf.d/B.conf", "[Limits]\nMaxWatches=2\n")
            try scratch.write("reachd.conf.d/9.conf", "[Limits]\nMaxWatches=3\n")
            let configuration = try loaded([scratch.root])
            let files: [String?] = configuration.sources.map { $0.split(separator: "/").last.map(String.init) }
            #expect(files == ["9.conf", "B.conf", "a.conf"])
            #expect(configuration.maxWatches == 1)
        }
    }

    @Test func aDropInReplacesTheRuleOfTheSameNameInPlace() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf", """
                [Interface]
                Name=wl*
                Kind=wifi
                Metered=yes
                [Interface]
                Name=eth*
                Kind=wired
                """)
            try scratch.write("reachd.conf.d/50-phone.conf", "[Interface]\nName=wl*\nPriority=10\n[Interface]\nName=tun*\nKind=vpn\n")
            let configuration = try loaded([scratch.root])
            #expect(configuration.rules == [
                InterfaceRule(pattern: "wl*", priority: 10),
                InterfaceRule(pattern: "eth*", kind: .wired),
                InterfaceRule(pattern: "tun*", kind: .vpn),
            ])
        }
    }

    @Test func theFirstDirectoryWithAFileWins() throws {
        try withScratch { scratch in
            let etc = scratch.path("etc"), run = scratch.path("run"), lib = scratch.path("lib")
            try scratch.write("run/reachd.conf", "[Limits]\nMaxWatches=2\n")
            try scratch.write("lib/reachd.conf", "[Limits]\nMaxWatches=3\nMaxWatchesPerClient=3\n")
            try scratch.write("etc/reachd.conf.d/10-x.conf", "[Checks]\nMaxConcurrentLookups=10\n")
            try scratch.write("lib/reachd.conf.d/10-x.conf", "[Checks]\nMaxConcurrentLookups=99\n")
            try scratch.write("lib/reachd.conf.d/05-y.conf", "[Checks]\nMaxConcurrentLookups=5\nNegativeCacheTime=1s\n")
            // /dev/null masks the same name in later directories, as in systemd.
            try scratch.write("lib/reachd.conf.d/20-z.conf", "[Checks]\nDefaultTimeout=9s\n")
            try scratch.symlink("run/reachd.conf.d/20-z.conf", to: "/dev/null")

            let configuration = try loaded([etc, run, lib])
            #expect(configuration.maxWatches == 2)  // run's main file; lib's is not read
            #expect(configuration.maxWatchesPerClient == 64)
            #expect(configuration.maxConcurrentLookups == 10)  // etc's 10-x.conf, after lib's 05-y.conf
            #expect(configuration.negativeCacheTime == .seconds(1))
            #expect(configuration.defaultTimeout == .seconds(5))
            #expect(configuration.sources == [
                run + "/reachd.conf", lib + "/reachd.conf.d/05-y.conf", etc + "/reachd.conf.d/10-x.conf",
            ])
        }
    }

    @Test func aDanglingDropInSymlinkIsSkipped() throws {
        try withScratch { scratch in
            try scratch.symlink("reachd.conf.d/10-gone.conf", to: scratch.path("nowhere.conf"))
            var loaded = try Configuration.load(directories: [scratch.root]).get()
            #expect(loaded.warnings.count == 1, "skipped, but said so: \(loaded.warnings)")
            loaded.warnings = []
            #expect(loaded == .default)
        }
    }

    @Test func aDropInDirectoryThatIsAFileIsIgnored() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf.d", "[Checks]\nDefaultTimeout=1s\n")
            #expect(Configuration.load(directories: [scratch.root]) == .success(.default))
        }
    }

    @Test func errorsOfAllFilesAreCollected() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf", "[Checks]\nDefaultTimeout=soon\n")
            try scratch.write("reachd.conf.d/10-a.conf", "[Limits]\nMaxWatches=0\n")
            try scratch.write("reachd.conf.d/20-b.conf", "\n\nOops\n")
            #expect(loadErrors([scratch.root]) == [
                scratch.path("reachd.conf")
                    + ":2: [Checks] DefaultTimeout: invalid duration 'soon': it is not a duration; use \(DurationText.acceptedForms)",
                scratch.path("reachd.conf.d/10-a.conf")
                    + ":2: [Limits] MaxWatches: number 0 is out of range; expected a whole number from 1 to 1000000",
                scratch.path("reachd.conf.d/20-b.conf") + ":3: line without '=': 'Oops'; expected Key=Value",
            ])
        }
    }

    @Test func aMainFileThatIsADirectoryIsAnError() throws {
        try withScratch { scratch in
            try scratch.directory("reachd.conf")
            try scratch.write("reachd.conf.d/10-x.conf.d/ignored", "")
            try scratch.directory("reachd.conf.d/20-dir.conf")
            #expect(loadErrors([scratch.root]) == [
                scratch.path("reachd.conf") + ": is a directory, not a file",
                scratch.path("reachd.conf.d/20-dir.conf") + ": is a directory, not a file",
            ])
        }
    }

    @Test func invalidUTF8IsReportedWithItsLine() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf", bytes: Array("[Checks]\n# caf".utf8) + [0xE9] + Array("\n".utf8))
            try scratch.write("reachd.conf.d/10-bin.conf", bytes: [0x5B, 0x00, 0x01])
            #expect(loadErrors([scratch.root]) == [
                scratch.path("reachd.conf") + ":2: not valid UTF-8; configuration files are UTF-8 text",
                scratch.path("reachd.conf.d/10-bin.conf") + ":1: contains a NUL byte; configuration files are text",
            ])
        }
    }

    @Test func aFileOverOneMebibyteIsRefusedUnread() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf", bytes: [UInt8](repeating: UInt8(ascii: "#"), count: Configuration.maximumFileBytes + 1))
            #expect(loadErrors([scratch.root]) == [
                scratch.path("reachd.conf") + ": the file is 1048577 bytes, more than the limit of 1048576 (1 MiB); it is refused",
            ])
            // Exactly at the limit is fine.
            try scratch.write("reachd.conf", bytes: [UInt8](repeating: UInt8(ascii: "#"), count: Configuration.maximumFileBytes))
            #expect(try loaded([scratch.root]).sources == [scratch.path("reachd.conf")])
        }
    }

    @Test func rulesAreCountedAcrossFiles() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf", (1...600).map { "[Interface]\nName=a\($0)\n" }.joined())
            try scratch.write("reachd.conf.d/10-more.conf", (1...401).map { "[Interface]\nName=b\($0)\n" }.joined())
            #expect(loadErrors([scratch.root]) == [
                scratch.path("reachd.conf.d/10-more.conf") + ":801: [Interface] more than 1000 rules; merge rules with globs",
            ])
        }
    }

    @Test func tooManyDropInsAreRefused() throws {
        try withScratch { scratch in
            for index in 0...Configuration.maximumDropIns {
                try scratch.write("reachd.conf.d/\(index).conf", "")
            }
            #expect(loadErrors([scratch.root]) == [
                scratch.path("reachd.conf.d") + ": 1001 drop-in files, more than the limit of 1000; none is read",
            ])
        }
    }

    /// Root reads any file whatever its mode, so this runs only as another user.
    @Test(.enabled(if: geteuid() != 0, "root bypasses file permissions"))
    func anUnreadableFileIsAnError() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf", "[Checks]\n")
            chmod(scratch.path("reachd.conf"), 0)
            #expect(loadErrors([scratch.root]) == [scratch.path("reachd.conf") + ": cannot open: Permission denied"])
        }
    }

    /// issue 24: a FIFO, a device or a directory where a file belongs is an error naming the
    /// path, never read nor waited for; only /dev/null masks.
    @Test func aFIFOOrADeviceIsAnErrorNamingThePathNeverRead() throws {
        try withScratch { scratch in
            try scratch.directory("reachd.conf.d")
            guard mkfifo(scratch.path("reachd.conf"), 0o644) == 0 else {
                throw SetupFailure(call: "mkfifo", path: scratch.path("reachd.conf"), code: errno)
            }
            try scratch.symlink("reachd.conf.d/10-zero.conf", to: "/dev/zero")
            try scratch.symlink("reachd.conf.d/20-masked.conf", to: "/dev/null")
            let started = ContinuousClock.now
            #expect(loadErrors([scratch.root]) == [
                scratch.path("reachd.conf") + ": is a FIFO, not a regular file; it is not read (a link to /dev/null masks a name)",
                scratch.path("reachd.conf.d/10-zero.conf")
                    + ": is a character device, not a regular file; it is not read (a link to /dev/null masks a name)",
            ])
            #expect(ContinuousClock.now - started < .seconds(1))
        }
    }
}

// MARK: - Merged text and the shipped file

/// issue 16: a bad value is echoed whole, however long; a dangling drop-in link is warned about.
@Suite("Configuration messages")
struct ConfigurationMessageTests {
    @Test(arguments: [
        ("[Checks]\nDefaultTimeout=", "x"), ("[Interface]\nName=eth0\nKind=", "q"), ("[Interface]\nName=eth0\nMetered=", "y"), ("[Interface]\nName=eth0\nProbe=", "maybe"),
        ("[Limits]\nMaxWatchesPerUser=", "9"),
    ])
    func aLongBadValueIsEchoedWhole(_ prefix: String, _ filler: String) throws {
        let value = String(repeating: filler, count: 500)
        try withScratch { scratch in
            try scratch.write("reachd.conf", prefix + value + "\n")
            let errors = loadErrors([scratch.root])
            #expect(errors.count == 1)
            #expect(errors.first?.contains("'\(value)'") == true || errors.first?.contains(" \(value) ") == true, "\(errors)")
        }
    }

    /// Every key of every section, given a 2,000-character bad value: the one error names the
    /// value whole (never cut), whichever check refuses it.
    @Test func everyKeyEchoesALongBadValueWhole() {
        let junk = "x" + String(repeating: "9-", count: 1000)
        for section in ConfigurationSection.allCases {
            // ExpectedBody= takes any text: there is no bad value to echo.
            for key in section.keyNames where key != "ExpectedBody" {
                let prefix = section == .interface && key != "Name" ? "[Interface]\nName=eth0\n"
                    : section == .network && key != "ID" ? "[Network]\nID=0123456789abcdef\n" : "[\(section.name)]\n"
                var configuration = Configuration.default
                let errors = Configuration.parse(prefix + "\(key)=\(junk)\n", file: "reachd.conf", into: &configuration)
                #expect(errors.count == 1, "[\(section.name)] \(key): \(errors)")
                #expect(errors.first?.description.contains(junk) == true, "[\(section.name)] \(key) cut the value: \(errors.first?.description.prefix(200) ?? "")")
            }
        }
        // Lines that are not assignments, and unknown names, are echoed whole too.
        for text in ["[Checks]\n\(junk)\n", "[\(junk)\n", "[Checks]\n=\(junk)\n"] {
            var configuration = Configuration.default
            let errors = Configuration.parse(text, file: "reachd.conf", into: &configuration)
            #expect(errors.first?.description.contains(junk) == true, "\(errors.first?.description.prefix(200) ?? "none")")
        }
    }

    @Test func aDanglingDropInLinkIsAWarningByNameAndTheRestLoads() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf", "[Checks]\nDefaultTimeout=2s\n")
            try scratch.directory("reachd.conf.d")
            try scratch.symlink("reachd.conf.d/10-gone.conf", to: "/nonexistent/10-gone.conf")
            try scratch.write("reachd.conf.d/20-here.conf", "[Limits]\nMaxWatches=10\n")
            let configuration = try Configuration.load(directories: [scratch.root]).get()
            #expect(configuration.defaultTimeout == .seconds(2) && configuration.maxWatches == 10)
            #expect(configuration.warnings.map(\.description) == [
                scratch.path("reachd.conf.d/10-gone.conf") + ": a symbolic link to /nonexistent/10-gone.conf, which does not exist; ignored",
            ])
        }
    }
}

@Suite("Configuration text")
struct ConfigurationTextTests {
    @Test func mergedTextOfTheDefaults() {
        #expect(Configuration.default.mergedText == """
            # The configuration reachd uses, merged from these files in this order (later ones win):
            #   (none: the built-in defaults)

            [Checks]
            DefaultTimeout=5s
            MaxConcurrentLookups=64
            NegativeCacheTime=5s
            LookupsPerUserPerSecond=20
            LookupBurstPerUser=64

            [Limits]
            MaxWatchesPerClient=64
            MaxWatchesPerUser=auto
            MaxWatches=4096
            MaxHostChecksPerUser=1024
            MaxHostChecks=4096

            [Priorities]
            VPN=50
            Wired=100
            WiFi=600
            Cellular=700
            Bridge=800
            Virtual=800
            Other=800
            Loopback=1000

            [Connectivity]
            # URL= not set: the connectivity probe is off

            [Portal]
            EndingLead=1m

            [WaitOnline]
            Timeout=30s

            [Compatibility]
            NetworkManager=no

            [Metrics]
            # TextfileDirectory= not set: no node_exporter textfile
            TextfileInterval=1m

            [Stall]
            Detect=yes
            After=8s
            MinSockets=2
            DNSTimeouts=5
            Interval=20s

            [Units]
            # Watch= not set: no unit's traffic is judged apart

            """)
    }

    /// [Units] Watch=: names add up in order (a bare name is its .service), once each, at most
    /// 32; a name systemd would not take is refused by name; the merged text reads back.
    @Test func watchedUnitsParseAddUpAndAreBounded() {
        var configuration = Configuration.default
        let errors = Configuration.parse("[Units]\nWatch=backup.service web\nWatch=backup\n", file: "reachd.conf", into: &configuration)
        #expect(errors.isEmpty, "\(errors)")
        #expect(configuration.watchedUnits == ["backup.service", "web.service"])
        #expect(configuration.mergedText.contains("[Units]\nWatch=backup.service web.service\n"))
        var again = Configuration.default
        #expect(Configuration.parse(configuration.mergedText, file: "merged", into: &again).isEmpty && again.watchedUnits == configuration.watchedUnits)
        var hostile = Configuration.default
        let refused = Configuration.parse("[Units]\nWatch=ok.service ../etc/passwd\n", file: "reachd.conf", into: &hostile).map(\.description)
        #expect(refused.count == 1 && refused.first?.contains("'../etc/passwd' is not a unit to watch") == true, "\(refused)")
        var many = Configuration.default
        let over = Configuration.parse("[Units]\nWatch=" + (0...32).map { "u\($0)" }.joined(separator: " ") + "\n", file: "reachd.conf", into: &many)
        #expect(over.count == 1 && over.first?.description.contains("more than 32 units to watch: u32.service is one too many") == true, "\(over)")
    }

    /// issue 11: the probe's keys, parsed, merged and read back; its URL refused by reason.
    @Test func connectivityKeysParseMergeAndRefuseByReason() {
        var configuration = Configuration.default
        let errors = Configuration.parse(
            "[Connectivity]\nURL=http://[2001:db8::1]:8080/check?x=1\nExpectedStatus=200\nExpectedBody=NetworkManager is online\nInterval=1m\nTimeout=3s\n",
            file: "reachd.conf", into: &configuration)
        #expect(errors.isEmpty, "\(errors)")
        #expect(configuration.connectivity.url == ProbeURL(host: "2001:db8::1", port: 8080, path: "/check?x=1"))
        #expect(configuration.connectivity.expectation == ProbeExpectation(status: 200, body: "NetworkManager is online"))
        #expect(configuration.connectivity.interval == .seconds(60) && configuration.connectivity.timeout == .seconds(3))
        #expect(configuration.mergedText.contains("""
            [Connectivity]
            URL=http://[2001:db8::1]:8080/check?x=1
            ExpectedStatus=200
            ExpectedBody=NetworkManager is online
            Interval=1m
            Timeout=3s

            """), "\(configuration.mergedText)")
        var again = Configuration.default
        #expect(Configuration.parse(configuration.mergedText, file: "merged", into: &again).isEmpty)
        #expect(again.connectivity == configuration.connectivity)
        // https, its own default port, and back through the merged text as given.
        var secure = Configuration.default
        #expect(Configuration.parse("[Connectivity]\nURL=HTTPS://probe.test/check\n", file: "reachd.conf", into: &secure).isEmpty)
        #expect(secure.connectivity.url == ProbeURL(host: "probe.test", port: 443, path: "/check", isSecure: true))
        #expect(secure.connectivity.url?.description == "https://probe.test/check")
        #expect(ProbeURL(host: "2001:db8::1", port: 8443, path: "/", isSecure: true).description == "https://[2001:db8::1]:8443/")

        for (url, fragment) in [
            ("ftp://example.com/", "expected a URL starting with http:// or https://"),
            ("https://example.com:0/", "port must be a number from 1 to 65535"),
            ("http://example.com:0/", "port must be a number from 1 to 65535"),
            ("http://user:pw@example.com/", "user names and passwords"),
            ("http://exa mple.com/", "spaces"),
            ("http://[192.0.2.1]/", "is not an IPv6 address"),
            ("http://bad_-.com/", "invalid host name"),
            ("http:///path", "names no host"),
        ] {
            var bad = Configuration.default
            let errors = Configuration.parse("[Connectivity]\nURL=\(url)\n", file: "reachd.conf", into: &bad)
            #expect(errors.count == 1 && errors.first?.description.contains(fragment) == true && errors.first?.description.contains(url) == true, "\(url): \(errors)")
        }
    }

    @Test func mergedTextListsSourcesAndRules() {
        var configuration = Configuration.default
        configuration.sources = ["/etc/reachd/reachd.conf", "/etc/reachd/reachd.conf.d/10-a.conf"]
        configuration.rules = [InterfaceRule(pattern: "wl*", kind: .wifi, ignore: false, metered: true, priority: 5)]
        let text = configuration.mergedText
        #expect(text.hasPrefix("""
            # The configuration reachd uses, merged from these files in this order (later ones win):
            #   /etc/reachd/reachd.conf
            #   /etc/reachd/reachd.conf.d/10-a.conf

            """))
        #expect(text.hasSuffix("\n[Interface]\nName=wl*\nKind=wifi\nIgnore=no\nMetered=yes\nPriority=5\n"))
    }

    @Test func mergedTextParsesBackToTheSameConfiguration() throws {
        try withScratch { scratch in
            try scratch.write("reachd.conf", """
                [Checks]
                DefaultTimeout=0.25
                NegativeCacheTime=90s
                [Priorities]
                cellular=900
                [Interface]
                Name=wl[a-z]*
                Kind=wifi
                [Interface]
                Name=x\\\\y
                Ignore=on
                """)
            try scratch.write("reachd.conf.d/10-a.conf", """
                [Checks]
                MaxConcurrentLookups=3
                [Limits]
                MaxWatchesPerClient=2
                MaxWatches=20
                [Interface]
                Name=eth 0
                Metered=no
                Priority=0
                [WaitOnline]
                Timeout=2m
                Target=example.org
                Kind=WiFi
                [Compatibility]
                NetworkManager=on
                """)
            let original = try loaded([scratch.root])
            var reparsed = Configuration.default
            let errors = Configuration.parse(original.mergedText, file: "merged", into: &reparsed)
            #expect(errors == [])
            reparsed.sources = original.sources
            #expect(reparsed == original)
            #expect(original.rules.count == 3)
        }
    }

    @Test func theShippedFileTellsTheTruth() throws {
        let configuration = try loaded([packagingDirectory])
        #expect(configuration.sources == [packagingDirectory + "/reachd.conf"])
        var withoutSources = configuration
        withoutSources.sources = []
        #expect(withoutSources == .default)
    }

    /// Uncommenting every `#Key=value` line of the shipped file changes nothing, and every key is there:
    /// the commented values are the real defaults.
    @Test func theShippedFileShowsEveryKeyWithItsDefault() throws {
        guard case .text(let text) = ConfigurationFileReader.read(packagingDirectory + "/reachd.conf") else {
            Issue.record("cannot read packaging/reachd.conf")
            return
        }
        var keys: Set<String> = []
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            let name = line.dropFirst().prefix(while: \.isLetter)
            guard line.hasPrefix("#"), let equals = line.firstIndex(of: "="), name.endIndex == equals else { return line }
            keys.insert(String(line[line.index(after: line.startIndex)..<equals]))
            return line.dropFirst()
        }.joined(separator: "\n")
        var configuration = Configuration.default
        let errors = Configuration.parse(uncommented, file: "reachd.conf", into: &configuration)
        #expect(errors == [])
        #expect(configuration == .default)
        // [WaitOnline] Target= and Kind= and [Metrics] TextfileDirectory= have no default: the
        // file shows them as examples.
        let scalarKeys = [ConfigurationSection.checks, .limits, .priorities, .compatibility, .stall].flatMap(\.keyNames) + ["Timeout", "TextfileInterval", "EndingLead"]
        #expect(keys == Set(scalarKeys))
    }
}
