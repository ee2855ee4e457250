#if canImport(Glibc)
import Glibc
#endif

/// The rfkill switches of one link, as sysfs shows them. cfg80211 registers each Wi-Fi phy's
/// switch as a child of the phy (`/sys/class/net/NAME/phy80211/rfkillN`); a modem driver that
/// has one registers it on the device the link hangs from (`/sys/class/net/NAME/device/rfkillN`,
/// or in that device's `rfkill/` class folder). Each holds `soft` and `hard` ("0" or "1").
/// Reading them takes a few small reads of one link's own folders: never a pass over all links.
extension SysfsReader {
    /// One switch: its index (`rfkillN`, the `idx` of /dev/rfkill's events) and its state.
    package struct RadioSwitch: Hashable, Sendable {
        package var index: UInt32
        package var block: RadioBlock
    }

    /// Switches beyond this many under one device are not read (a real device has one).
    package static let radioSwitchLimit = 8

    /// The switches of a Wi-Fi or cellular link named `name`; empty for other kinds, or when
    /// sysfs shows none (a switch that cannot be read counts as on).
    package func radioSwitches(forInterface name: String, kind: InterfaceKind) -> [RadioSwitch] {
        guard Self.isPlausibleInterfaceName(name) else { return [] }
        let directory = root + "/class/net/" + name
        let parents: [String]
        switch kind {
        case .wifi: parents = [directory + "/phy80211"]
        case .cellular: parents = [directory + "/device", directory + "/device/rfkill"]
        default: return []
        }
        var switches: [RadioSwitch] = []
        for parent in parents {
            for (index, entry) in Self.rfkillEntries(in: parent) where switches.count < Self.radioSwitchLimit {
                switches.append(RadioSwitch(index: index, block: Self.radioBlock(parent + "/" + entry)))
            }
        }
        return switches
    }

    /// The state of switch `rfkillN` (`ROOT/class/rfkill/rfkillN`), for a switch /dev/rfkill
    /// has not told of.
    package func radioBlock(rfkill index: UInt32) -> RadioBlock {
        Self.radioBlock(root + "/class/rfkill/rfkill\(index)")
    }

    package static func radioBlock(_ directory: String) -> RadioBlock {
        var block: RadioBlock = []
        if readFlag(directory + "/soft") { block.insert(.soft) }
        if readFlag(directory + "/hard") { block.insert(.hard) }
        return block
    }

    /// A sysfs boolean: "1" (and a newline) is true, anything else, or nothing, false.
    package static func readFlag(_ path: String) -> Bool {
        guard let bytes = readUevent(path) else { return false }
        return bytes.first == UInt8(ascii: "1") && bytes.dropFirst().allSatisfy { $0 == UInt8(ascii: "\n") }
    }

    /// The `rfkillN` entries of a folder with their N, at most `radioSwitchLimit`.
    package static func rfkillEntries(in directory: String) -> [(UInt32, String)] {
        let names = (try? DirectoryNames.list(directory, limit: radioSwitchLimit) { rfkillIndex($0) != nil }.get()) ?? []
        return names.compactMap { name in rfkillIndex(name).map { ($0, name) } }.sorted { $0.0 < $1.0 }
    }

    /// N of a name `rfkillN` (decimal, as the kernel names them); nil for any other name.
    package static func rfkillIndex(_ name: String) -> UInt32? {
        let prefix = "rfkill"
        guard name.hasPrefix(prefix) else { return nil }
        let digits = name.dropFirst(prefix.count)
        guard !digits.isEmpty, digits.count <= 10, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
        return UInt32(digits)
    }
}
