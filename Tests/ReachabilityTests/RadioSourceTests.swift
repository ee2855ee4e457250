import Foundation
import Testing
@testable import Reachability
@testable import ReachabilityNetlink

/// A sysfs tree laid out as the kernel lays out a Wi-Fi radio: the phy with its rfkill switch
/// (`class/ieee80211/phyP/rfkillN/{type,name,soft,hard}`), the link's `phy80211` link to the
/// phy, and `class/rfkill/rfkillN` to the switch. `block` writes the switch's state.
struct FakeRadioTree {
    let root: String

    init(_ prefix: String = "reachd-radio") throws { root = try makeScratchDirectory(prefix) }

    /// Gives link `name` a phy with switch `rfkillN`; a cellular link's switch sits on its device.
    func addRadio(link name: String, switch index: UInt32, kind: InterfaceKind = .wifi, block: RadioBlock = []) throws {
        let files = FileManager.default
        let net = root + "/class/net/" + name
        try files.createDirectory(atPath: net, withIntermediateDirectories: true)
        let parent: String
        if kind == .wifi {
            parent = root + "/class/ieee80211/phy\(index)"
            try files.createDirectory(atPath: parent, withIntermediateDirectories: true)
            try files.createSymbolicLink(atPath: net + "/phy80211", withDestinationPath: "../../ieee80211/phy\(index)")
        } else {
            parent = net + "/device"
        }
        let device = parent + "/rfkill\(index)"
        try files.createDirectory(atPath: device, withIntermediateDirectories: true)
        try (kind == .wifi ? "wlan\n" : "wwan\n").write(toFile: device + "/type", atomically: false, encoding: .utf8)
        try files.createDirectory(atPath: root + "/class/rfkill", withIntermediateDirectories: true)
        try files.createSymbolicLink(atPath: root + "/class/rfkill/rfkill\(index)", withDestinationPath: device)
        try self.block(index, block)
    }

    /// Writes switch `rfkillN`'s `soft` and `hard`, as the kernel shows them.
    func block(_ index: UInt32, _ block: RadioBlock) throws {
        let device = root + "/class/rfkill/rfkill\(index)"
        try (block.contains(.soft) ? "1\n" : "0\n").write(toFile: device + "/soft", atomically: false, encoding: .utf8)
        try (block.contains(.hard) ? "1\n" : "0\n").write(toFile: device + "/hard", atomically: false, encoding: .utf8)
    }

    func remove() { removeTree(root) }
}

/// The adapter's halves without a kernel rfkill (this machine has none): the /dev/rfkill record
/// decoder fed valid, truncated and garbage bytes, and the sysfs reading through a fake tree.
struct RadioSourceTests {
    static func decode(_ bytes: [UInt8]) -> RfkillEvent? {
        bytes.withUnsafeBytes { RfkillEvent(record: $0) }
    }

    /// idx 7 (host byte order: the test machines are little-endian), WLAN, CHANGE, soft 1, hard 0.
    static let softBlocked: [UInt8] = [0x07, 0x00, 0x00, 0x00, 0x01, 0x02, 0x01, 0x00]

    @Test func aVersionOneRecordDecodes() throws {
        let event = try #require(Self.decode(Self.softBlocked))
        #expect(event == RfkillEvent(index: 7, type: RfkillEvent.typeWLAN, operation: .change, block: .soft))
        #expect(event.isNetworkRadio)
        let add = try #require(Self.decode([0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x01]))
        #expect(add == RfkillEvent(index: 256, type: RfkillEvent.typeWWAN, operation: .add, block: [.soft, .hard]))
        let bluetooth = try #require(Self.decode([0x02, 0x00, 0x00, 0x00, 0x02, 0x01, 0x00, 0x00]))
        #expect(bluetooth.operation == .remove && !bluetooth.isNetworkRadio)
    }

    @Test func aLargerRecordOfANewerKernelDecodesItsFirstEightBytes() {
        // struct rfkill_event_ext adds hard_block_reasons (one byte), and later kernels may add more.
        #expect(Self.decode(Self.softBlocked + [0x01]) == Self.decode(Self.softBlocked))
        #expect(Self.decode(Self.softBlocked + [UInt8](repeating: 0xFF, count: 56)) == Self.decode(Self.softBlocked))
    }

    @Test func truncatedRecordsAndImpossibleFieldsAreRefused() {
        for length in 0..<RfkillEvent.sizeV1 { #expect(Self.decode(Array(Self.softBlocked.prefix(length))) == nil, "\(length) bytes") }
        var record = Self.softBlocked
        for op: UInt8 in [3, 4, 0xFF] {
            record[5] = op
            #expect(Self.decode(record) == nil, "op \(op)")
        }
        record = Self.softBlocked
        record[6] = 2
        #expect(Self.decode(record) == nil, "soft 2")
        record = Self.softBlocked
        record[7] = 0x80
        #expect(Self.decode(record) == nil, "hard 0x80")
    }

    @Test func garbageNeverTrapsAndDecodesOnlyWhatTheKernelCouldSend() {
        var generator = SystemRandomNumberGenerator()
        var decoded = 0
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...24, using: &generator)).map { _ in UInt8.random(in: 0...3, using: &generator) }
            guard let event = Self.decode(bytes) else { continue }
            decoded += 1
            #expect(bytes.count >= RfkillEvent.sizeV1)
            #expect(bytes[5] <= 2 && bytes[6] <= 1 && bytes[7] <= 1)
            #expect(event.block.contains(.soft) == (bytes[6] == 1) && event.block.contains(.hard) == (bytes[7] == 1))
        }
        #expect(decoded > 0, "small byte values decode now and then: the check above ran")
    }

    @Test func rfkillNamesAreReadStrictly() {
        #expect(SysfsReader.rfkillIndex("rfkill0") == 0)
        #expect(SysfsReader.rfkillIndex("rfkill4294967295") == UInt32.max)
        for name in ["rfkill", "rfkill4294967296", "rfkill-1", "rfkill1a", "xrfkill1", "rfkill٣", "subsystem", "."] {
            #expect(SysfsReader.rfkillIndex(name) == nil, "\(name)")
        }
    }

    @Test func aWiFiLinksSwitchIsFoundThroughItsPhy_aModemsThroughItsDevice() throws {
        let tree = try FakeRadioTree()
        defer { tree.remove() }
        try tree.addRadio(link: "wlan0", switch: 3, block: .soft)
        try tree.addRadio(link: "wwan0", switch: 5, kind: .cellular, block: .hard)
        let sysfs = SysfsReader(root: tree.root)
        #expect(sysfs.radioSwitches(forInterface: "wlan0", kind: .wifi) == [.init(index: 3, block: .soft)])
        #expect(sysfs.radioSwitches(forInterface: "wwan0", kind: .cellular) == [.init(index: 5, block: .hard)])
        #expect(sysfs.radioSwitches(forInterface: "wlan0", kind: .wired).isEmpty, "only radios are read")
        #expect(sysfs.radioSwitches(forInterface: "../wlan0", kind: .wifi).isEmpty)
        #expect(sysfs.radioSwitches(forInterface: "eth9", kind: .wifi).isEmpty, "no folder: no switch")
        // A value the kernel never writes counts as on.
        try "yes\n".write(toFile: tree.root + "/class/rfkill/rfkill3/soft", atomically: false, encoding: .utf8)
        #expect(sysfs.radioSwitches(forInterface: "wlan0", kind: .wifi) == [.init(index: 3, block: [])])
    }

    @Test func theFollowerReadsSysfsOnLinkEvents_andAppliesDeviceRecordsToTheirLinks() throws {
        let tree = try FakeRadioTree()
        defer { tree.remove() }
        try tree.addRadio(link: "wlan0", switch: 3, block: .soft)
        let follower = RadioFollower(sysfs: SysfsReader(root: tree.root), devicePath: tree.root + "/no-rfkill")
        #expect(follower.descriptor == nil)
        #expect(follower.source.description == "\(tree.root)/no-rfkill absent, reading sysfs on link events")
        let wlan = StallStateTests.link(3, "wlan0")
        #expect(follower.events(for: wlan, kind: .wifi) == [.radio(index: 3, .soft)])
        #expect(follower.events(for: StallStateTests.link(2, "eth0"), kind: .wired).isEmpty)
        try tree.block(3, [])
        #expect(follower.events(for: wlan, kind: .wifi) == [.radio(index: 3, [])], "read again on each event")

        // Records as /dev/rfkill would hand them: only the switch's links hear of them.
        #expect(follower.apply([RfkillEvent(index: 3, type: RfkillEvent.typeWLAN, operation: .change, block: .hard)]) == [.radio(index: 3, .hard)])
        #expect(follower.apply([RfkillEvent(index: 8, type: RfkillEvent.typeWLAN, operation: .change, block: .soft)]).isEmpty)
        #expect(follower.apply([RfkillEvent(index: 3, type: RfkillEvent.typeWLAN, operation: .remove, block: [])]) == [.radio(index: 3, [])])
        // A switch that appears after its link (a driver loaded late) is found by reading the
        // radio links again.
        let files = FileManager.default
        let phy = tree.root + "/class/ieee80211/phy9"
        try files.createDirectory(atPath: phy, withIntermediateDirectories: true)
        try files.createDirectory(atPath: tree.root + "/class/net/wlan1", withIntermediateDirectories: true)
        try files.createSymbolicLink(atPath: tree.root + "/class/net/wlan1/phy80211", withDestinationPath: "../../ieee80211/phy9")
        let wlan1 = StallStateTests.link(4, "wlan1")
        #expect(follower.events(for: wlan1, kind: .wifi) == [.radio(index: 4, [])])
        try files.createDirectory(atPath: phy + "/rfkill9", withIntermediateDirectories: true)
        try "1\n".write(toFile: phy + "/rfkill9/soft", atomically: false, encoding: .utf8)
        try "0\n".write(toFile: phy + "/rfkill9/hard", atomically: false, encoding: .utf8)
        #expect(follower.apply([RfkillEvent(index: 9, type: RfkillEvent.typeWLAN, operation: .add, block: .soft)]).contains(.radio(index: 4, .soft)))
        // A link that is no radio any more (a rule changed its kind) says so once.
        #expect(follower.events(for: wlan, kind: .wired) == [.radio(index: 3, [])])
        #expect(follower.events(for: wlan, kind: .wired).isEmpty)
    }
}
