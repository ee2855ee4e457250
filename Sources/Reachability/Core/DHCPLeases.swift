#if canImport(Glibc)
import Glibc
#endif

/// What the host's DHCP client recorded of each link's lease: whether the server sent option 43
/// (vendor-specific information) carrying `ANDROID_METERED`, the hint Android's hotspots give
/// (NetworkManager honours it the same way), and the captive-portal URI of options 114 and 103
/// (`DHCPClientLeases`: ISC dhclient's lease files). systemd-networkd writes each link's lease to
/// /run/systemd/netif/leases/IFINDEX as KEY=VALUE lines, the option as `VENDOR_SPECIFIC=` in
/// hexadecimal, and writes the file anew on each renewal. The directories are followed with
/// inotify (any event reads them again: they hold a few small files), and each file is read
/// without trust (`UntrustedFile`: a regular file of at most `fileLimit` bytes, at most
/// `filesRead` of them). A directory that is absent (no networkd, no dhclient) is not read.
/// Loop-thread only.
final class DHCPLeases {
    let directory: String?
    /// Where dhclient keeps its leases (`/var/lib/dhcp`); nil: not read.
    let clientDirectory: String?
    private var watch: DirectoryWatch?
    private var source: (any LoopSource)?
    /// The links said metered at the last read.
    private var metered: Set<Int32> = []
    /// The portals the client recorded at the last read, and the refusals told.
    private var portals: [DHCPPortal] = []
    private var refused: Set<String> = []

    /// networkd's leases hold a few hundred bytes; far more is no lease.
    static let fileLimit = 64 << 10
    /// More links with a DHCP lease than any host has.
    static let filesRead = 256
    static let hint = Array("ANDROID_METERED".utf8)
    private static let key = Array("VENDOR_SPECIFIC=".utf8)

    init(directory: String?, clientDirectory: String?) {
        self.directory = directory
        self.clientDirectory = clientDirectory
    }

    /// What moved since the last read, as facts, and the refusals not told before (one journal
    /// line each: a refused value is told again only after it went away).
    func changes() -> (events: [NetworkEvent], refusals: [String]) {
        let now = directory.map(Self.meteredLinks) ?? []
        defer { metered = now }
        var events: [NetworkEvent] = now.subtracting(metered).sorted().map { .dhcpMetered(index: $0, true) }
            + metered.subtracting(now).sorted().map { .dhcpMetered(index: $0, false) }
        let read = clientDirectory.map { DHCPClientLeases.portals(in: $0) } ?? (portals: [], refusals: [])
        if read.portals != portals { events.append(.dhcpPortals(read.portals)) }
        portals = read.portals
        let new = read.refusals.filter { !refused.contains($0) }
        refused = Set(read.refusals)
        return (events, new)
    }

    /// Follows the directories on `loop`; `changed` runs after anything in them changed. A
    /// missing directory is not followed, and is no error.
    func start(on loop: any EventLoopProtocol, changed: @escaping () -> Void) throws(SystemError) {
        let present = [(directory, false), (clientDirectory, true)].compactMap { path, appends in
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
    static func meteredLinks(in directory: String) -> Set<Int32> {
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
    static func saysMetered(_ lease: [UInt8]) -> Bool {
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
