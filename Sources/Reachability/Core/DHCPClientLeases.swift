#if canImport(Glibc)
import Glibc
#endif

/// The captive-portal URIs (RFC 8910: DHCPv4 option 114, DHCPv6 option 103) that ISC dhclient,
/// Debian's DHCP client under ifupdown, records in its lease files (`/var/lib/dhcp/dhclient*.leases`)
/// once asked for them (`also request default-url;` in dhclient.conf, docs/admins.md):
///
///     lease {
///       interface "eth0";
///       option default-url "https://portal.example/api";
///       ...
///     }
///
/// dhclient appends each lease it gets to the file (and rewrites it now and then), so the last
/// `lease` (DHCPv4) or `lease6` (DHCPv6) block of an interface is its current one: a renewal
/// without the option takes the portal away. systemd-networkd 252 (Debian 12) records no portal
/// in its leases. Values are validated as a router's option is (`AnnouncedPortal`); a refusal
/// is a journal line naming the interface and the value.
package enum DHCPClientLeases {
    /// A lease file holds the leases of a few interfaces over a few renewals: far less than this.
    package static let fileLimit = 256 << 10
    /// More lease files than any host has.
    package static let filesRead = 64
    /// How dhclient 4.4 names the options in its leases: option 114 is `default-url` in its
    /// table (`v4-captive-portal` when dhclient.conf defines that name for code 114), option
    /// 103 `dhcp6.v6-captive-portal`.
    private static let optionNames = ["option default-url ", "option v4-captive-portal ", "option dhcp6.v6-captive-portal "].map { Array($0.utf8) }

    /// The portals in the lease files of `directory`, with the refusals for the journal.
    package static func portals(in directory: String) -> (portals: [DHCPPortal], refusals: [String]) {
        let names = (try? DirectoryNames.list(directory, limit: filesRead) { $0.hasPrefix("dhclient") && $0.hasSuffix(".leases") }.get()) ?? []
        var found: [String: DHCPPortal] = [:]
        var refusals: [String] = []
        // In name order, so that two files naming one interface give the same answer each time.
        for name in names.sorted() {
            guard case let .success(text) = UntrustedFile.contents(of: directory + "/" + name, limit: fileLimit) else { continue }
            let read = portals(inLeaseFile: text)
            for portal in read.portals { found["\(portal.interfaceName) \(portal.source)"] = portal }
            refusals += read.refusals.map { "\(directory)/\(name): \($0)" }
        }
        return (found.keys.sorted().compactMap { found[$0] }, refusals)
    }

    /// The portal of each interface's last lease of each family in one file's text.
    package static func portals(inLeaseFile text: [UInt8]) -> (portals: [DHCPPortal], refusals: [String]) {
        // The latest lease per interface and family; nil where it carries no portal.
        var latest: [String: (portal: DHCPPortal?, refusal: String?)] = [:]
        var order: [String] = []
        var block: (source: PortalSource, interface: String?, uri: [UInt8]?)?
        var depth = 0
        for rawLine in text.split(separator: UInt8(ascii: "\n")) {
            let line = rawLine.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            if depth == 0, line.starts(with: Array("lease {".utf8)) || line.starts(with: Array("lease6 {".utf8)) {
                block = (line.starts(with: Array("lease6".utf8)) ? .dhcpv6 : .dhcpv4, nil, nil)
            } else if depth == 1, block != nil {
                if line.starts(with: Array("interface ".utf8)) { block?.interface = quoted(line).map { String(decoding: $0, as: UTF8.self) } }
                if optionNames.contains(where: { line.starts(with: $0) }) { block?.uri = quoted(line).map(Array.init) }
            }
            depth = max(0, depth + line.count { $0 == UInt8(ascii: "{") } - line.count { $0 == UInt8(ascii: "}") })
            guard depth == 0, let ended = block else { continue }
            block = nil
            guard let interface = ended.interface, !interface.isEmpty, interface.utf8.count <= 15 else { continue }
            let key = "\(interface) \(ended.source)"
            if latest[key] == nil { order.append(key) }
            latest[key] = (nil, nil)
            guard let value = ended.uri else { continue }
            switch AnnouncedPortal.uri(fromOptionValue: value) {
            case let .success(uri): latest[key] = (DHCPPortal(interfaceName: interface, uri: uri, source: ended.source), nil)
            case let .failure(refused):
                let option = ended.source == .dhcpv4 ? "DHCPv4 option 114" : "DHCPv6 option 103"
                let shown = String(decoding: value, as: UTF8.self).inertExcerpt()
                latest[key] = (nil, "\(option) of \(interface.inertExcerpt()) refused: \(refused.reason) (\(shown))")
            }
        }
        return (order.compactMap { latest[$0]?.portal }, order.compactMap { latest[$0]?.refusal })
    }

    /// The text between a line's first and last double quote (dhclient escapes quotes and
    /// backslashes inside, which no URI holds), or nil.
    private static func quoted(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard let first = line.firstIndex(of: UInt8(ascii: "\"")), let last = line.lastIndex(of: UInt8(ascii: "\"")), first < last else {
            return nil
        }
        return line[(first + 1)..<last]
    }
}
