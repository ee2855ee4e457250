/// The captive-portal URIs (RFC 8910: DHCPv4 option 114, DHCPv6 option 103) in dhcpcd's lease
/// files, /var/lib/dhcpcd/IFNAME.lease and IFNAME.lease6 (IFNAME-SSID.lease* on a wireless link):
/// each the server's last reply as it came off the wire, which dhcpcd writes anew on each lease
/// and removes when the lease goes. Parsed from bytes with every length checked against what is
/// there (no pointer), and validated as a router's option is (`AnnouncedPortal`). dhcpcd asks for
/// option 114 only when told to (`option captive_portal_uri` in dhcpcd.conf, docs/admins.md).
package enum DhcpcdLeases {
    /// A DHCP message fits in a few KiB (dhcpcd keeps at most 64 KiB of one).
    package static let fileLimit = 64 << 10
    /// More lease files than any host has.
    package static let filesRead = 64

    /// Why a lease file's bytes are not a DHCP message a portal can be read from.
    package struct Malformed: Error, Equatable { var reason: String }

    /// The portals in the lease files of `directory`, with the refusals for the journal.
    package static func portals(in directory: String) -> (portals: [DHCPPortal], refusals: [String]) {
        let names = (try? DirectoryNames.list(directory, limit: filesRead) { $0.hasSuffix(".lease") || $0.hasSuffix(".lease6") }.get()) ?? []
        var portals: [DHCPPortal] = []
        var refusals: [String] = []
        for name in names.sorted() {
            let source: PortalSource = name.hasSuffix("6") ? .dhcpv6 : .dhcpv4
            let stem = String(name.dropLast(source == .dhcpv6 ? 7 : 6))
            guard let interface = interfaceName(stem) else { continue }
            let path = directory + "/" + name
            guard case let .success(bytes) = UntrustedFile.contents(of: path, limit: fileLimit), !bytes.isEmpty else { continue }
            let option = source == .dhcpv6 ? "DHCPv6 option 103" : "DHCPv4 option 114"
            switch source == .dhcpv6 ? portalOption(dhcpv6: bytes) : portalOption(dhcpv4: bytes) {
            case .success(nil): continue
            case let .success(value?):
                switch AnnouncedPortal.uri(fromOptionValue: value) {
                case let .success(uri): portals.append(DHCPPortal(interfaceName: interface, uri: uri, source: source))
                case let .failure(refused):
                    let shown = String(decoding: value, as: UTF8.self).inertExcerpt()
                    refusals.append("\(path): \(option) of \(interface.inertExcerpt()) refused: \(refused.reason) (\(shown))")
                }
            case let .failure(malformed): refusals.append("\(path): no DHCP message (\(malformed.reason))")
            }
        }
        return (portals, refusals)
    }

    /// The interface a lease file's name stands for: the whole stem, or, for IFNAME-SSID, the
    /// longest part before a dash that names a link now (names and SSIDs may both hold dashes);
    /// nil for a name no interface can have.
    package static func interfaceName(_ stem: String) -> String? {
        guard !stem.isEmpty, !stem.hasPrefix("-") else { return nil }
        let fits = { (name: Substring) in name.utf8.count <= 15 && !name.isEmpty }
        guard stem.contains("-"), !InterfaceNames.exists(stem) else { return fits(Substring(stem)) ? stem : nil }
        let dashes = stem.indices.filter { stem[$0] == "-" }.reversed()
        for dash in dashes where fits(stem[..<dash]) && InterfaceNames.exists(String(stem[..<dash])) { return String(stem[..<dash]) }
        return fits(Substring(stem)) ? stem : nil
    }

    /// Option 114 of a DHCPv4 message (RFC 2131: a 236-byte header, the magic cookie, options;
    /// option 52 may overload the `file` and `sname` fields with more), its instances joined as
    /// RFC 3396 says; nil when the message has none.
    package static func portalOption(dhcpv4 message: [UInt8]) -> Result<[UInt8]?, Malformed> {
        let header = 236, cookie: [UInt8] = [99, 130, 83, 99]
        guard message.count >= header + cookie.count else { return .failure(Malformed(reason: "\(message.count) bytes, shorter than a DHCP header")) }
        guard message[header..<(header + 4)].elementsEqual(cookie) else { return .failure(Malformed(reason: "no DHCP magic cookie")) }
        var found: [UInt8]?
        var overload: UInt8 = 0
        // The options field first, then `file` (108..<236), then `sname` (44..<108), as RFC 2131 orders them.
        var areas = [(header + 4)..<message.count]
        var area = 0
        while area < areas.count {
            var at = areas[area].lowerBound
            let end = areas[area].upperBound
            scan: while at < end {
                let code = message[at]
                switch code {
                case 0: at += 1
                case 255: break scan
                default:
                    guard at + 1 < end else { return .failure(Malformed(reason: "option \(code) cut at its length")) }
                    let length = Int(message[at + 1])
                    guard at + 2 + length <= end else {
                        return .failure(Malformed(reason: "option \(code) claims \(length) bytes, \(end - at - 2) left"))
                    }
                    let value = message[(at + 2)..<(at + 2 + length)]
                    if code == 114 { found = (found ?? []) + value }
                    if code == 52, area == 0, length == 1 { overload = value.first ?? 0 }
                    at += 2 + length
                }
            }
            if area == 0 {
                if overload & 1 != 0 { areas.append(108..<236) }
                if overload & 2 != 0 { areas.append(44..<108) }
            }
            area += 1
        }
        return .success(found)
    }

    /// Option 103 of a DHCPv6 message (RFC 8415: a type, a transaction id, then options of a
    /// 2-byte code and a 2-byte length); nil when the message has none.
    package static func portalOption(dhcpv6 message: [UInt8]) -> Result<[UInt8]?, Malformed> {
        guard message.count >= 4 else { return .failure(Malformed(reason: "\(message.count) bytes, shorter than a DHCPv6 header")) }
        var at = 4
        var found: [UInt8]?
        while at < message.count {
            guard at + 4 <= message.count else { return .failure(Malformed(reason: "an option cut in its header")) }
            let code = Int(message[at]) << 8 | Int(message[at + 1])
            let length = Int(message[at + 2]) << 8 | Int(message[at + 3])
            guard at + 4 + length <= message.count else {
                return .failure(Malformed(reason: "option \(code) claims \(length) bytes, \(message.count - at - 4) left"))
            }
            if code == 103, found == nil { found = Array(message[(at + 4)..<(at + 4 + length)]) }
            at += 4 + length
        }
        return .success(found)
    }
}
