#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Testing
@testable import Reachability

// MARK: - Helpers

/// A link with the fields classification reads; everything else at neutral values.
private func link(
    _ name: String, type: UInt16 = Link.hardwareEther, infoKind: String? = nil, flags: LinkFlags = .up
) -> Link {
    Link(index: 7, name: name, flags: flags, hardwareType: type, operState: .up, infoKind: infoKind)
}

/// The kind and the detection step that decided it, with no configuration.
private func detect(_ link: Link, _ device: DeviceFacts = DeviceFacts()) -> (kind: InterfaceKind, step: String) {
    Classifier.detectKind(link, device: device)
}

// MARK: - Glob matching

@Suite struct InterfaceRuleGlobTests {
    private func matches(_ pattern: String, _ name: String) -> Bool {
        InterfaceRule(pattern: pattern).matches(name)
    }

    @Test func literalMatchesOnlyItself() {
        #expect(matches("wlan0", "wlan0"))
        #expect(!matches("wlan0", "wlan01"))
        #expect(!matches("wlan0", "wlan"))
        #expect(!matches("wlan0", "Wlan0"))
    }

    @Test func starMatchesAnyRunIncludingEmpty() {
        #expect(matches("eth*", "eth"))
        #expect(matches("eth*", "eth0"))
        #expect(matches("eth*", "eth10"))
        #expect(!matches("eth*", "veth0"))
        #expect(matches("*", "x"))
        #expect(matches("*0", "veth0"))
        #expect(!matches("*0", "veth01"))
        #expect(matches("e*h*0", "eth0"))
        #expect(matches("**x**", "x"))
        #expect(matches("*a*b", "xaxbxab"))
        #expect(!matches("*a*b", "xaxbxa"))
    }

    @Test func questionMarkMatchesExactlyOneByte() {
        #expect(matches("eth?", "eth0"))
        #expect(!matches("eth?", "eth"))
        #expect(!matches("eth?", "eth10"))
        #expect(matches("??", "ab"))
        // Byte-wise, like the kernel's names: a two-byte UTF-8 character needs two.
        #expect(!matches("x?", "xé"))
        #expect(matches("x??", "xé"))
    }

    @Test func bracketRangesAndSets() {
        #expect(matches("eth[0-3]", "eth0"))
        #expect(matches("eth[0-3]", "eth3"))
        #expect(!matches("eth[0-3]", "eth4"))
        #expect(!matches("eth[0-3]", "ethA"))
        #expect(matches("en[ox]*", "eno1"))
        #expect(matches("en[ox]*", "enx001122334455"))
        #expect(!matches("en[ox]*", "enp0s3"))
        #expect(matches("wl[a-z0-9]*", "wlp2s0"))
        // A reversed range matches nothing, as in fnmatch.
        #expect(!matches("eth[3-0]", "eth1"))
    }

    @Test func bracketNegation() {
        #expect(matches("wl[!a]*", "wlp2s0"))
        #expect(!matches("wl[!a]*", "wlan0"))
        #expect(matches("[^e]*", "wlan0"))
        #expect(!matches("[^e]*", "eth0"))
        #expect(!matches("eth[!0-9]", "eth5"))
        #expect(matches("eth[!0-9]", "ethx"))
    }

    @Test func bracketAndEscapeEdgeCases() {
        // A "]" right after "[" (or "[!") is literal; a "-" first or last is literal.
        #expect(matches("[]]x", "]x"))
        #expect(matches("[!]]", "a"))
        #expect(!matches("[!]]", "]"))
        #expect(matches("a[-z]", "a-"))
        #expect(matches("a[z-]", "a-"))
        #expect(!matches("a[z-]", "ay"))
        // Backslash takes the next byte literally, inside brackets too.
        #expect(matches(#"a\*"#, "a*"))
        #expect(!matches(#"a\*"#, "ab"))
        #expect(matches(#"[\]]"#, "]"))
    }

    @Test func noMatch() {
        #expect(!matches("docker*", "eth0"))
        #expect(!matches("?", ""))
        #expect(!matches("eth0", ""))
    }

    @Test func malformedPatternsMatchLiterallyWithoutTrapping() {
        #expect(matches("eth[0", "eth[0"))
        #expect(!matches("eth[0", "eth0"))
        #expect(matches(#"eth\"#, #"eth\"#))
    }

    @Test func pathologicalPatternStaysCheap() {
        // Exponential backtracking would take visibly long here; the one-star matcher does ~200 steps.
        let pattern = String(repeating: "*a", count: 30) + "*b"
        let name = String(repeating: "a", count: 15)
        #expect(!matches(pattern, name))
        #expect(matches(pattern, String(repeating: "a", count: 30) + "b"))
    }
}

// MARK: - Pattern validation

@Suite struct InterfaceRuleValidationTests {
    @Test(arguments: ["eth*", "wl[a-z0-9]*", "[]]", "*", "wlan0", "abcdefghijklmno", "[!]]", #"a\*"#])
    func validPatternsPass(_ pattern: String) throws {
        try InterfaceRule.validate(pattern: pattern)
    }

    @Test func emptyPatternRejected() {
        let error = #expect(throws: InterfaceRuleError.emptyPattern) {
            try InterfaceRule.validate(pattern: "")
        }
        #expect(error?.description == #"interface pattern "" is empty"#)
    }

    @Test func overlongPatternRejectedByName() {
        let pattern = "eth" + String(repeating: "*", count: 62)
        #expect(pattern.utf8.count == 65)
        let error = #expect(throws: InterfaceRuleError.patternTooLong(pattern: pattern, length: 65)) {
            try InterfaceRule.validate(pattern: pattern)
        }
        #expect(error?.description.contains("\"\(pattern)\"") == true)
        // 64 bytes is still allowed.
        try? InterfaceRule.validate(pattern: String(pattern.dropLast()))
        #expect(throws: Never.self) { try InterfaceRule.validate(pattern: String(pattern.dropLast())) }
    }

    @Test(arguments: ["eth[0", "[", "[]", "[!]", "a[b-", #"a[\]"#])
    func unbalancedBracketRejectedByName(_ pattern: String) {
        let error = #expect(throws: InterfaceRuleError.unbalancedBracket(pattern: pattern)) {
            try InterfaceRule.validate(pattern: pattern)
        }
        #expect(error?.description.contains("\"\(pattern)\"") == true)
        #expect(error?.pattern == pattern)
    }

    @Test func danglingEscapeRejectedByName() {
        let error = #expect(throws: InterfaceRuleError.danglingEscape(pattern: #"eth\"#)) {
            try InterfaceRule.validate(pattern: #"eth\"#)
        }
        #expect(error?.description.contains(#""eth\""#) == true)
    }

    @Test func patternLongerThanAnyNameRejected() {
        let pattern = "abcdefghijklmnop"  // 16 bytes: IFNAMSIZ - 1 is 15
        let error = #expect(throws: InterfaceRuleError.patternNeverMatches(pattern: pattern, minimumLength: 16)) {
            try InterfaceRule.validate(pattern: pattern)
        }
        #expect(error?.description.contains("\"\(pattern)\"") == true)
        // Brackets count as one byte each: 16 of them can never match either.
        let brackets = String(repeating: "[ab]", count: 16)
        #expect(throws: InterfaceRuleError.patternNeverMatches(pattern: brackets, minimumLength: 16)) {
            try InterfaceRule.validate(pattern: brackets)
        }
    }

    @Test func instanceValidateChecksOwnPattern() {
        #expect(throws: InterfaceRuleError.unbalancedBracket(pattern: "x[")) {
            try InterfaceRule(pattern: "x[", kind: .wifi).validate()
        }
    }
}

// MARK: - Classifier: configuration rules

@Suite struct ClassifierRuleTests {
    @Test func noRulesGivesDetectedKindAndDefaults() {
        let result = Classifier().classify(link("eth0"), device: DeviceFacts())
        #expect(result == Classification(kind: .wired, isIgnored: false, isMetered: false, priority: 100))
    }

    @Test func ruleKindBeatsInfoKind() {
        let classifier = Classifier(rules: [InterfaceRule(pattern: "vw*", kind: .wifi)])
        let result = classifier.classify(link("vw0", infoKind: "veth"), device: DeviceFacts(deviceType: "wwan"))
        #expect(result.kind == .wifi)
        #expect(result.priority == 600)
    }

    @Test func ruleKindBeatsLoopback() {
        let classifier = Classifier(rules: [InterfaceRule(pattern: "lo", kind: .other)])
        #expect(classifier.classify(link("lo", type: Link.hardwareLoopback), device: DeviceFacts()).kind == .other)
    }

    @Test func nonMatchingRuleHasNoEffect() {
        let classifier = Classifier(rules: [InterfaceRule(pattern: "wl*", kind: .cellular, ignore: true, metered: true, priority: 1)])
        let result = classifier.classify(link("eth0"), device: DeviceFacts())
        #expect(result == Classification(kind: .wired, isIgnored: false, isMetered: false, priority: 100))
    }

    @Test func firstRuleSettingEachPropertyWins() {
        let classifier = Classifier(rules: [
            InterfaceRule(pattern: "eth*", metered: true),
            InterfaceRule(pattern: "eth0", kind: .cellular, metered: false, priority: 5),
            InterfaceRule(pattern: "*", kind: .wifi, ignore: true, priority: 9),
            InterfaceRule(pattern: "*", ignore: false),
        ])
        let result = classifier.classify(link("eth0"), device: DeviceFacts())
        #expect(result == Classification(kind: .cellular, isIgnored: true, isMetered: true, priority: 5))
        // A name only the catch-all rules match gets only their properties.
        let other = classifier.classify(link("eth1"), device: DeviceFacts())
        #expect(other == Classification(kind: .wifi, isIgnored: true, isMetered: true, priority: 9))
    }

    @Test func priorityFromRuleThenConfigThenKindDefault() {
        let priorities: [InterfaceKind: Int] = [.wired: 20]
        let withRule = Classifier(rules: [InterfaceRule(pattern: "eth0", priority: 3)], priorities: priorities)
        #expect(withRule.classify(link("eth0"), device: DeviceFacts()).priority == 3)
        #expect(withRule.classify(link("eth1"), device: DeviceFacts()).priority == 20)
        #expect(withRule.classify(link("wlan0"), device: DeviceFacts()).priority == 600)
    }

    @Test func configuredPriorityFollowsRuleKind() {
        // The kind a rule sets is the one whose configured priority applies.
        let classifier = Classifier(rules: [InterfaceRule(pattern: "eth0", kind: .vpn)], priorities: [.vpn: 7, .wired: 20])
        #expect(classifier.classify(link("eth0"), device: DeviceFacts()) == Classification(kind: .vpn, priority: 7))
    }

    @Test func cellularIsNotMeteredUnlessConfigured() {
        let modem = link("wwan0", type: Link.hardwareNone)
        let device = DeviceFacts(deviceType: "wwan", driver: "qmi_wwan")
        let plain = Classifier().classify(modem, device: device)
        #expect(plain.kind == .cellular)
        #expect(!plain.isMetered)
        let configured = Classifier(rules: [InterfaceRule(pattern: "ww*", metered: true)]).classify(modem, device: device)
        #expect(configured.isMetered)
        #expect(configured.kind == .cellular)
    }

    @Test func ignoreFromRule() {
        let classifier = Classifier(rules: [InterfaceRule(pattern: "docker*", ignore: true)])
        let result = classifier.classify(link("docker0", infoKind: "bridge"), device: DeviceFacts(deviceType: "bridge"))
        #expect(result == Classification(kind: .bridge, isIgnored: true, isMetered: false, priority: 800))
    }
}

// MARK: - Classifier: detection order

@Suite struct ClassifierDetectionTests {
    @Test func stepOrderIsTheDesignOrder() {
        #expect(Classifier.kindSteps.map(\.name) == [
            "infoKind", "hardwareType", "deviceType", "phy80211", "driver", "name", "ethernet",
        ])
    }

    // 1. IFLA_INFO_KIND

    @Test(arguments: [
        ("veth", InterfaceKind.virtual), ("bridge", .bridge),
        ("wireguard", .vpn), ("ipip", .vpn), ("gre", .vpn), ("ip6gre", .vpn), ("sit", .vpn), ("ip6tnl", .vpn),
        ("vti", .vpn), ("vti6", .vpn), ("ipsec", .vpn), ("xfrm", .vpn), ("openvpn", .vpn), ("ovpn", .vpn),
        ("wwan", .cellular),
        ("vxlan", .virtual), ("geneve", .virtual), ("macvlan", .virtual), ("macvtap", .virtual),
        ("ipvlan", .virtual), ("ipvtap", .virtual), ("dummy", .virtual), ("ifb", .virtual), ("vcan", .virtual),
        ("nlmon", .virtual), ("netkit", .virtual),
        ("bond", .wired), ("team", .wired), ("vlan", .wired), ("macsec", .wired),
    ])
    func infoKindDecides(_ infoKind: String, _ expected: InterfaceKind) {
        let result = detect(link("x0", infoKind: infoKind))
        #expect(result.kind == expected)
        #expect(result.step == "infoKind")
    }

    @Test func tunWithoutHeadersIsVPN() {
        #expect(detect(link("tun0", type: Link.hardwareNone, infoKind: "tun")) == (.vpn, "infoKind"))
    }

    @Test func tapIsVirtual() {
        #expect(detect(link("tap0", type: Link.hardwareEther, infoKind: "tun")) == (.virtual, "infoKind"))
    }

    @Test func infoKindBeatsDeviceType() {
        #expect(detect(link("v0", infoKind: "veth"), DeviceFacts(deviceType: "wlan")).kind == .virtual)
        #expect(detect(link("wg0", type: Link.hardwareNone, infoKind: "wireguard"), DeviceFacts(deviceType: "wwan")).kind == .vpn)
    }

    @Test func wlNameOnVethIsStillVirtual() {
        // Inside a container the veth end is often renamed; the driver says what it is.
        #expect(detect(link("wlan0", infoKind: "veth")) == (.virtual, "infoKind"))
        #expect(detect(link("wwan0", infoKind: "veth"), DeviceFacts(driver: "qmi_wwan")) == (.virtual, "infoKind"))
    }

    @Test func vlanTakesRadioDeviceType() {
        #expect(detect(link("v.5", infoKind: "vlan"), DeviceFacts(deviceType: "wwan")).kind == .cellular)
        #expect(detect(link("v.5", infoKind: "vlan"), DeviceFacts(deviceType: "vlan")).kind == .wired)
    }

    @Test func unknownInfoKindFallsThrough() {
        #expect(detect(link("f0", infoKind: "frobnicate"), DeviceFacts(deviceType: "wlan")) == (.wifi, "deviceType"))
        #expect(detect(link("f0", infoKind: "frobnicate")) == (.wired, "ethernet"))
    }

    // 2. ARPHRD

    @Test func loopbackByHardwareType() {
        #expect(detect(link("lo", type: Link.hardwareLoopback)) == (.loopback, "hardwareType"))
    }

    @Test func loopbackByFlag() {
        #expect(detect(link("lo9", type: Link.hardwareEther, flags: [.up, .loopback])) == (.loopback, "hardwareType"))
    }

    @Test func pppWithoutHintsIsOther() {
        // PPPoE on a router's uplink: not cellular.
        #expect(detect(link("ppp0", type: Link.hardwarePPP)) == (.other, "hardwareType"))
        #expect(detect(link("ppp0", type: Link.hardwarePPP), DeviceFacts(driver: "cdc_ether")) == (.other, "hardwareType"))
    }

    @Test func pppWithModemHintsIsCellular() {
        #expect(detect(link("ppp0", type: Link.hardwarePPP), DeviceFacts(deviceType: "wwan")) == (.cellular, "hardwareType"))
        #expect(detect(link("ppp0", type: Link.hardwarePPP), DeviceFacts(driver: "option")) == (.cellular, "hardwareType"))
        #expect(detect(link("wwan1", type: Link.hardwarePPP)) == (.cellular, "hardwareType"))
    }

    @Test func hardwareTypeBeatsDeviceType() {
        #expect(detect(link("ppp0", type: Link.hardwarePPP), DeviceFacts(deviceType: "wlan", hasPhy80211: true)) == (.other, "hardwareType"))
    }

    @Test(arguments: [Link.hardwareNone, Link.hardwareRawIP])
    func rawIPNeedsModemHints(_ type: UInt16) {
        #expect(detect(link("ip0", type: type)) == (.other, "hardwareType"))
        #expect(detect(link("ip0", type: type), DeviceFacts(deviceType: "wwan")) == (.cellular, "hardwareType"))
        #expect(detect(link("ip0", type: type), DeviceFacts(driver: "qmi_wwan")) == (.cellular, "hardwareType"))
        #expect(detect(link("rmnet_data0", type: type)) == (.cellular, "hardwareType"))
        #expect(detect(link("ccmni0", type: type)) == (.cellular, "hardwareType"))
        #expect(detect(link("wwan0", type: type)) == (.cellular, "hardwareType"))
        // A wl* name is not a modem hint.
        #expect(detect(link("wlan0", type: type)) == (.other, "hardwareType"))
    }

    // 3. uevent DEVTYPE

    @Test(arguments: [("wlan", InterfaceKind.wifi), ("wwan", .cellular), ("bridge", .bridge)])
    func deviceTypeDecides(_ deviceType: String, _ expected: InterfaceKind) {
        #expect(detect(link("eth0"), DeviceFacts(deviceType: deviceType)) == (expected, "deviceType"))
    }

    @Test func unknownDeviceTypeFallsThrough() {
        #expect(detect(link("usb0"), DeviceFacts(deviceType: "gadget")) == (.wired, "ethernet"))
    }

    @Test func deviceTypeBeatsPhy80211AndDriverAndName() {
        #expect(detect(link("eth0"), DeviceFacts(deviceType: "wwan", hasPhy80211: true)) == (.cellular, "deviceType"))
        #expect(detect(link("eth0"), DeviceFacts(deviceType: "wlan", driver: "qmi_wwan")) == (.wifi, "deviceType"))
        #expect(detect(link("wwan0"), DeviceFacts(deviceType: "wlan")) == (.wifi, "deviceType"))
    }

    // 4. phy80211

    @Test func phy80211IsWiFi() {
        #expect(detect(link("eth1"), DeviceFacts(hasPhy80211: true)) == (.wifi, "phy80211"))
    }

    @Test func phy80211BeatsDriverAndName() {
        #expect(detect(link("wwan0"), DeviceFacts(hasPhy80211: true, driver: "qmi_wwan")) == (.wifi, "phy80211"))
    }

    // 5. driver hints

    @Test(arguments: ["qmi_wwan", "cdc_mbim", "huawei_cdc_ncm", "sierra_net", "option", "rmnet", "ipa", "mhi_net", "ccmni"])
    func modemDriverIsCellular(_ driver: String) {
        #expect(detect(link("eth2"), DeviceFacts(driver: driver)) == (.cellular, "driver"))
    }

    @Test(arguments: ["cdc_ncm", "cdc_ether", "r8152", "e1000e"])
    func ethernetDriversAreNotModemHints(_ driver: String) {
        // cdc_ncm and cdc_ether also drive USB Ethernet adapters and docks.
        #expect(detect(link("eth2"), DeviceFacts(driver: driver)) == (.wired, "ethernet"))
    }

    @Test func driverBeatsName() {
        #expect(detect(link("wlan0"), DeviceFacts(driver: "qmi_wwan")) == (.cellular, "driver"))
    }

    // 6. name hints

    @Test(arguments: ["rmnet_data0", "rmnet_ipa0", "ccmni1", "wwan0", "wwp0s20u4"])
    func cellularNames(_ name: String) {
        #expect(detect(link(name)) == (.cellular, "name"))
    }

    @Test(arguments: ["wlan0", "wlp2s0"])
    func wifiNames(_ name: String) {
        #expect(detect(link(name)) == (.wifi, "name"))
    }

    @Test func nameBeatsEthernet() {
        #expect(detect(link("wlx001122334455", type: Link.hardwareEther)).kind == .wifi)
    }

    // 7. ARPHRD_ETHER, then other

    @Test(arguments: ["eth0", "enp0s31f6", "eno1", "usb0"])
    func ethernetIsWired(_ name: String) {
        #expect(detect(link(name)) == (.wired, "ethernet"))
    }

    @Test func anythingElseIsOther() {
        // ARPHRD_INFINIBAND (32), ARPHRD_CAN (280): nothing claims them.
        #expect(detect(link("ib0", type: 32)) == (.other, "fallback"))
        #expect(detect(link("can0", type: 280)) == (.other, "fallback"))
    }

    @Test func classifyUsesDetectedKindPriority() {
        let result = Classifier().classify(link("tun0", type: Link.hardwareNone, infoKind: "tun"), device: DeviceFacts())
        #expect(result == Classification(kind: .vpn, isIgnored: false, isMetered: false, priority: 50))
    }
}

// MARK: - SysfsReader against fake trees

/// A throwaway sysfs tree under /tmp, removed by `withFakeSysfs`.
private struct FakeSysfs {
    let root: String

    /// Creates every missing directory of `relativePath`.
    func makeDirectories(_ relativePath: String) throws {
        var path = root
        for component in relativePath.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) != 0, errno != EEXIST {
                throw SetupFailure(call: "mkdir", path: path, code: errno)
            }
        }
    }

    func write(_ relativePath: String, _ contents: String) throws {
        try makeDirectories(parent(relativePath))
        let path = root + "/" + relativePath
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SetupFailure(call: "open", path: path, code: errno) }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw SetupFailure(call: "write", path: path, code: errno) }
    }

    func symlink(_ relativePath: String, to target: String) throws {
        try makeDirectories(parent(relativePath))
        let path = root + "/" + relativePath
        guard Glibc.symlink(target, path) == 0 else { throw SetupFailure(call: "symlink", path: path, code: errno) }
    }

    func fifo(_ relativePath: String) throws {
        try makeDirectories(parent(relativePath))
        let path = root + "/" + relativePath
        guard mkfifo(path, 0o644) == 0 else { throw SetupFailure(call: "mkfifo", path: path, code: errno) }
    }

    private func parent(_ relativePath: String) -> String {
        String(relativePath.split(separator: "/").dropLast().joined(separator: "/"))
    }

    /// A wlan0 as iwlwifi registers it.
    func addWiFi(_ name: String) throws {
        try write("class/net/\(name)/uevent", "DEVTYPE=wlan\nINTERFACE=\(name)\nIFINDEX=3\n")
        try makeDirectories("devices/pci0000:00/ieee80211/phy0")
        try symlink("class/net/\(name)/phy80211", to: "../../../devices/pci0000:00/ieee80211/phy0")
        try symlink("class/net/\(name)/device/driver", to: "../../../bus/pci/drivers/iwlwifi")
    }
}

private func withFakeSysfs(_ body: (FakeSysfs) throws -> Void) throws {
    let fake = FakeSysfs(root: try makeScratchDirectory("reachd-sysfs"))
    defer { removeTree(fake.root) }
    try body(fake)
}


@Suite struct SysfsReaderTests {
    @Test func wifiDevice() throws {
        try withFakeSysfs { fake in
            try fake.addWiFi("wlan0")
            let facts = SysfsReader(root: fake.root).deviceFacts(forInterface: "wlan0")
            #expect(facts == DeviceFacts(deviceType: "wlan", hasPhy80211: true, driver: "iwlwifi"))
            #expect(Classifier().classify(link("wlan0"), device: facts).kind == .wifi)
        }
    }

    @Test func modemDevice() throws {
        try withFakeSysfs { fake in
            try fake.write("class/net/wwan0/uevent", "INTERFACE=wwan0\nIFINDEX=5\nDEVTYPE=wwan\n")
            try fake.symlink("class/net/wwan0/device/driver", to: "../../../../bus/usb/drivers/qmi_wwan")
            let facts = SysfsReader(root: fake.root).deviceFacts(forInterface: "wwan0")
            #expect(facts == DeviceFacts(deviceType: "wwan", hasPhy80211: false, driver: "qmi_wwan"))
            #expect(Classifier().classify(link("wwan0", type: Link.hardwareRawIP), device: facts).kind == .cellular)
        }
    }

    @Test func wiredDeviceWithoutDeviceType() throws {
        try withFakeSysfs { fake in
            try fake.write("class/net/eth0/uevent", "INTERFACE=eth0\nIFINDEX=2\n")
            try fake.symlink("class/net/eth0/device/driver", to: "../../../bus/pci/drivers/e1000e/")
            let facts = SysfsReader(root: fake.root).deviceFacts(forInterface: "eth0")
            #expect(facts == DeviceFacts(deviceType: nil, hasPhy80211: false, driver: "e1000e"))
        }
    }

    @Test func missingInterfaceHasNoFacts() throws {
        try withFakeSysfs { fake in
            try fake.addWiFi("wlan0")
            #expect(SysfsReader(root: fake.root).deviceFacts(forInterface: "wlan1") == DeviceFacts())
        }
    }

    @Test func missingRootHasNoFacts() {
        #expect(SysfsReader(root: "/nonexistent/reachd-sysfs").deviceFacts(forInterface: "wlan0") == DeviceFacts())
    }

    @Test func deviceTypeLineParsing() throws {
        try withFakeSysfs { fake in
            try fake.write("class/net/a0/uevent", "XDEVTYPE=wlan\nDEVTYPE=bridge")  // no final newline
            try fake.write("class/net/b0/uevent", "DEVTYPE=\nINTERFACE=b0\n")
            try fake.write("class/net/c0/uevent", "")
            let reader = SysfsReader(root: fake.root)
            #expect(reader.deviceFacts(forInterface: "a0").deviceType == "bridge")
            #expect(reader.deviceFacts(forInterface: "b0").deviceType == nil)
            #expect(reader.deviceFacts(forInterface: "c0").deviceType == nil)
        }
    }

    @Test func ueventReadIsBounded() throws {
        try withFakeSysfs { fake in
            let filler = "X=" + String(repeating: "y", count: 4100) + "\n"
            try fake.write("class/net/late0/uevent", filler + "DEVTYPE=wlan\n")
            try fake.write("class/net/early0/uevent", "DEVTYPE=wwan\n" + filler)
            let reader = SysfsReader(root: fake.root)
            #expect(reader.deviceFacts(forInterface: "late0").deviceType == nil)
            #expect(reader.deviceFacts(forInterface: "early0").deviceType == "wwan")
        }
    }

    @Test func fifoInsteadOfUeventDoesNotHang() throws {
        try withFakeSysfs { fake in
            try fake.fifo("class/net/f0/uevent")
            #expect(SysfsReader(root: fake.root).deviceFacts(forInterface: "f0") == DeviceFacts())
        }
    }

    @Test func driverThatIsNotASymlinkIsIgnored() throws {
        try withFakeSysfs { fake in
            try fake.write("class/net/eth0/device/driver", "iwlwifi")
            try fake.makeDirectories("class/net/eth0/phy80211")  // a plain directory still exists
            let facts = SysfsReader(root: fake.root).deviceFacts(forInterface: "eth0")
            #expect(facts == DeviceFacts(deviceType: nil, hasPhy80211: true, driver: nil))
        }
    }

    @Test func hostileNamesCannotLeaveTheRoot() throws {
        try withFakeSysfs { fake in
            // Every target below exists and would read as a Wi-Fi device if the name were used as a path.
            try fake.addWiFi("wlan0")
            try fake.write("class/x/uevent", "DEVTYPE=wlan\n")  // class/net/../x
            try fake.symlink("class/x/device/driver", to: "../drivers/evil")
            try fake.write("class/net/uevent", "DEVTYPE=wlan\n")  // class/net/.
            try fake.write("class/uevent", "DEVTYPE=wlan\n")  // class/net/..
            try fake.write("class/net/wlan0/sub/uevent", "DEVTYPE=wlan\n")  // class/net/wlan0/sub
            let reader = SysfsReader(root: fake.root)
            for name in ["../x", ".", "..", "", "wlan0/sub", "wlan0/..", "wlan0\0/../x", "abcdefghijklmnop"] {
                #expect(reader.deviceFacts(forInterface: name) == DeviceFacts(), "name \(name.debugDescription)")
            }
            // The same tree answers for a legitimate name, so the empty answers above are rejections.
            #expect(reader.deviceFacts(forInterface: "wlan0").deviceType == "wlan")
        }
    }
}

@Suite struct DeviceFactsNeedTests {
    @Test(arguments: [
        ("veth", Link.hardwareEther, false), ("bridge", Link.hardwareEther, false), ("tun", Link.hardwareNone, false),
        ("wireguard", Link.hardwareNone, false), ("vlan", Link.hardwareEther, true), ("macsec", Link.hardwareEther, true),
        ("something-new", Link.hardwareEther, true),
    ])
    func infoKindsThatDecideNeedNoSysfs(infoKind: String, hardware: UInt16, needed: Bool) {
        let link = Link(index: 5, name: "x0", flags: .up, hardwareType: hardware, infoKind: infoKind)
        #expect(Classifier.needsDeviceFacts(link) == needed)
    }

    @Test func physicalLinksNeedSysfs() {
        #expect(Classifier.needsDeviceFacts(Link(index: 2, name: "eth0", flags: .up)))
    }
}
