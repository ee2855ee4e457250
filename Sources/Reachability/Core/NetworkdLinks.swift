/// The captive-portal URI systemd-networkd (254 and later) keeps for each link it manages: a line
/// `CAPTIVE_PORTAL=URI` in the link's state file, /run/systemd/netif/links/IFINDEX (KEY=VALUE
/// lines, the value as received, unquoted). networkd writes the one it chose of DHCPv4 option 114,
/// DHCPv6 option 103 and a router's option 37, in that order, and the file does not say which:
/// the source is `networkd`. Where networkd runs it takes router advertisements in userspace and
/// the kernel passes reachd no option 37, so this line is where a router's portal is read then.
/// networkd writes each file anew (a temporary file renamed over it) on each change of the link;
/// networkd 252 (Debian 12) writes no such line. Files are read without trust (`UntrustedFile`);
/// the portal is kept by the link's name at the read (the file is named by its index), as the
/// other DHCP clients' portals are. A value is validated as a router's option is.
package enum NetworkdLinks {
    /// A link's state file lists its DNS servers, domains and NTP servers: a few KiB at most.
    package static let fileLimit = 64 << 10
    /// More links than any host has networkd manage.
    package static let filesRead = 256
    private static let key = Array("CAPTIVE_PORTAL=".utf8)

    /// The portals networkd recorded in `directory`, with the refusals for the journal.
    package static func portals(in directory: String) -> (portals: [DHCPPortal], refusals: [String]) {
        let names = (try? DirectoryNames.list(directory, limit: filesRead) { Int32($0).map { $0 > 0 } ?? false }.get()) ?? []
        var portals: [DHCPPortal] = []
        var refusals: [String] = []
        for index in names.compactMap(Int32.init).sorted() {
            let path = directory + "/\(index)"
            let text: [UInt8]
            switch UntrustedFile.contents(of: path, limit: fileLimit) {
            case let .success(read): text = read
            case .failure(.missing): continue  // the link went meanwhile
            case let .failure(refusal):
                refusals.append("networkd's state of link \(index) refused: \(refusal)")
                continue
            }
            // A link gone since networkd wrote its file has no name to hold a portal.
            guard let value = portalValue(text), let name = InterfaceNames.name(of: index) else { continue }
            switch AnnouncedPortal.uri(fromOptionValue: Array(value)) {
            case let .success(uri): portals.append(DHCPPortal(interfaceName: name, uri: uri, source: .networkd))
            case let .failure(refused):
                let shown = String(decoding: value, as: UTF8.self).inertExcerpt()
                refusals.append("\(path): the captive portal networkd recorded for \(name.inertExcerpt()) refused: \(refused.reason) (\(shown))")
            }
        }
        return (portals, refusals)
    }

    /// The value of a state file's `CAPTIVE_PORTAL=` line (the last, should there be several);
    /// nil when it has none.
    package static func portalValue(_ file: [UInt8]) -> ArraySlice<UInt8>? {
        var found: ArraySlice<UInt8>?
        for line in file.split(separator: UInt8(ascii: "\n")) where line.starts(with: key) {
            found = line.dropFirst(key.count)
        }
        return found
    }
}
