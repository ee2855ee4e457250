#if canImport(Glibc)
import Glibc
#endif

/// What the host's DHCP client recorded of each link's lease: whether the server sent option 43
/// (vendor-specific information) carrying `ANDROID_METERED`, the hint Android's hotspots give
/// (NetworkManager honours it the same way), and the captive-portal URI of options 114 and 103
/// (and a router's 37, where networkd takes router advertisements) from whichever client runs:
/// ISC dhclient's lease files (`DHCPClientLeases`), dhcpcd's (`DhcpcdLeases`) and
/// systemd-networkd's link state files (`NetworkdLinks`). networkd writes each link's lease to
/// /run/systemd/netif/leases/IFINDEX as KEY=VALUE lines, the option as `VENDOR_SPECIFIC=` in
/// hexadecimal, and writes the file anew on each renewal. The directories are followed with
/// inotify (any event reads them again: they hold a few small files), and each file is read
/// without trust (`UntrustedFile`: a regular file of at most `fileLimit` bytes, at most
/// `filesRead` of them). A directory that is absent (no networkd, no dhclient) is not read.
/// Loop-thread only.
package final class DHCPLeases {
    package let directory: String?
    /// Where dhclient keeps its leases (`/var/lib/dhcp`); nil: not read.
    package let clientDirectory: String?
    /// Where networkd keeps each link's state (`/run/systemd/netif/links`); nil: not read.
    package let linksDirectory: String?
    /// Where dhcpcd keeps its leases (`/var/lib/dhcpcd`); nil: not read.
    package let dhcpcdDirectory: String?
    private var watch: DirectoryWatch?
    private var source: (any LoopSource)?
    /// The links said metered at the last read.
    private var metered: Set<Int32> = []
    /// The portals the client recorded at the last read, and the refusals told.
    private var portals: [DHCPPortal] = []
    private var refused: Set<String> = []

    /// networkd's leases hold a few hundred bytes; far more is no lease.
    package static let fileLimit = 64 << 10
    /// More links with a DHCP lease than any host has.
    package static let filesRead = 256
    package static let hint = Array("ANDROID_METERED".utf8)
    private static let key = Array("VENDOR_SPECIFIC=".utf8)

    /// The records `configuration` names; nil when it names none.
    package init?(_ configuration: CoreConfiguration) {
        directory = configuration.dhcpLeasesDirectory
        clientDirectory = configuration.dhcpClientLeasesDirectory
        linksDirectory = configuration.networkdLinksDirectory
        dhcpcdDirectory = configuration.dhcpcdLeasesDirectory
        if [directory, clientDirectory, linksDirectory, dhcpcdDirectory].allSatisfy({ $0 == nil }) { return nil }
    }

    /// What moved since the last read, as facts, and the refusals not told before (one journal
    /// line each: a refused value is told again only after it went away).
    package func changes() -> (events: [NetworkEvent], refusals: [String]) {
        let now = directory.map(Self.meteredLinks) ?? []
        defer { metered = now }
        var events: [NetworkEvent] = now.subtracting(metered).sorted().map { .dhcpMetered(index: $0, true) }
            + metered.subtracting(now).sorted().map { .dhcpMetered(index: $0, false) }
        // One client per host in practice; were there several, networkd's word is taken last.
        let reads = [clientDirectory.map(DHCPClientLeases.portals), dhcpcdDirectory.map(DhcpcdLeases.portals), linksDirectory.map(NetworkdLinks.portals)]
        let read = reads.compactMap { $0 }.reduce(into: (portals: [DHCPPortal](), refusals: [String]())) {
            $0.portals += $1.portals
            $0.refusals += $1.refusals
        }
        if read.portals != portals { events.append(.dhcpPortals(read.portals)) }
        portals = read.portals
        let new = read.refusals.filter { !refused.contains($0) }
        refused = Set(read.refusals)
        return (events, new)
    }

    /// Follows the directories on `loop`; `changed` runs after anything in them changed. A
    /// missing directory is not followed, and is no error.
    package func start(on loop: any EventLoopProtocol, changed: @escaping () -> Void) throws(SystemError) {
        // dhclient appends to its files and dhcpcd writes its own in place: their writes count.
        let present = [(directory, false), (clientDirectory, true), (linksDirectory, false), (dhcpcdDirectory, true)].compactMap { path, appends in
            path.flatMap { access($0, F_OK) == 0 ? ($0, appends) : nil }
        }
        guard !present.isEmpty else { return }
        let watch = try DirectoryWatch()
        for (directory, appends) in present { try watch.watch(directory, appends: appends) }
        self.watch = watch
        source = try loop.addWatch(fd: watch.fd, events: .readable) { [watch] _ in
            _ = watch.drain()
            changed()
        }
    }

    /// The links (by index: the files' names) whose lease carries the hint.
    package static func meteredLinks(in directory: String) -> Set<Int32> {
        let names = (try? DirectoryNames.list(directory, limit: filesRead) { Int32($0).map { $0 > 0 } ?? false }.get()) ?? []
        var found: Set<Int32> = []
        for name in names {
            guard let index = Int32(name), case let .success(text) = UntrustedFile.contents(of: directory + "/" + name, limit: fileLimit),
                saysMetered(text)
            else { continue }
            found.insert(index)
        }
        return found
    }

    /// Whether a lease's `VENDOR_SPECIFIC=` value, decoded from hexadecimal, holds the hint.
    package static func saysMetered(_ lease: [UInt8]) -> Bool {
        for line in lease.split(separator: UInt8(ascii: "\n")) where line.starts(with: key) {
            let digits = Array(line.dropFirst(key.count))
            guard digits.count % 2 == 0 else { return false }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(digits.count / 2)
            for pair in stride(from: 0, to: digits.count, by: 2) {
                guard let high = hexValue(digits[pair]), let low = hexValue(digits[pair + 1]) else { return false }
                bytes.append(high << 4 | low)
            }
            return bytes.count >= hint.count && (0...(bytes.count - hint.count)).contains { bytes[$0..<($0 + hint.count)].elementsEqual(hint) }
        }
        return false
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
