#if canImport(Glibc)
import Glibc
#endif

/// What reachd takes from a resolv.conf, parsed by reachd itself so that c-ares is never handed
/// a path to read (it would fopen(3) a FIFO and block the loop, or read /dev/zero forever
/// looking for the end of a line): the nameservers, the search list, `ndots` and `rotate`.
/// `timeout:` and `attempts:` are not taken: every lookup's tries are fitted to its own deadline.
package struct ResolverConfiguration: Equatable, Sendable {
    /// Nameservers kept, in order: glibc's MAXNS. A program resolving through glibc asks the
    /// first 3 and never the rest, so a fourth cannot make its DNS work and reachd, judging DNS
    /// as those programs meet it, has no use for one. Each kept server is routed on every network
    /// change (supportsDNS): 10,000 lines made every kernel event cost ~42 ms, 8 still cost
    /// several times what 3 do. resolved rewrites its upstream list when a link's servers go.
    package static let maximumNameservers = 3
    /// glibc's MAXDNSRCH: each domain is one more round of queries for a short name.
    package static let maximumSearchDomains = 6
    /// glibc's cap on `ndots`.
    package static let maximumNdots = 15
    /// A resolv.conf is a few hundred bytes; 64 KiB is far past any real one (resolved's own
    /// runs to a few KiB with long search lists), and read on the loop, it costs well under a
    /// millisecond. What is larger is no resolv.conf.
    package static let fileLimit = 64 << 10

    package var nameservers: [IPAddress] = []
    /// `nameserver` lines past `maximumNameservers` (and unparsable ones), for the journal.
    package var droppedNameservers = 0
    package var searchDomains: [String] = []
    package var ndots: Int32 = 1
    package var rotate = false
    /// The file has a `search` or `domain` line; without one, glibc and c-ares search the
    /// domain of the host's name (`searchList`).
    package var namesSearchList = false

    package init() {}

    /// The domains a short name is tried in: the file's, or the host name's domain (what
    /// follows its first dot), as glibc and c-ares take it when the file names none.
    package var searchList: [String] {
        if namesSearchList { return searchDomains }
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return [] }
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let dot = host.firstIndex(of: "."), host.index(after: dot) < host.endIndex else { return [] }
        return [String(host[host.index(after: dot)...])]
    }

    /// Parses resolv.conf(5) as glibc does: a keyword at the start of a line, `#` and `;`
    /// comments, the last `search` or `domain` line wins.
    package init<Bytes: Collection>(parsing bytes: Bytes) where Bytes.Element == UInt8 {
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let words = line.split(whereSeparator: { $0 == 32 || $0 == 9 || $0 == 13 })
                .prefix { $0.first != UInt8(ascii: "#") && $0.first != UInt8(ascii: ";") }
                .map { String(decoding: $0, as: UTF8.self) }
            guard let keyword = words.first else { continue }
            let arguments = words.dropFirst()
            switch keyword {
            case "nameserver":
                if nameservers.count < Self.maximumNameservers, let text = arguments.first, let server = IPAddress(text) {
                    nameservers.append(server)
                } else {
                    droppedNameservers += 1
                }
            case "search", "domain":
                namesSearchList = true
                searchDomains = Array(arguments.filter { $0 != "." }.prefix(Self.maximumSearchDomains))
            case "options":
                for option in arguments {
                    if option == "rotate" { rotate = true }
                    if option.hasPrefix("ndots:"), let value = Int32(option.dropFirst(6)), value >= 0 {
                        ndots = min(value, Int32(Self.maximumNdots))
                    }
                }
            default:
                continue
            }
        }
    }
}

/// /etc/hosts, parsed by reachd: c-ares 1.18 would fopen(3) it on the loop at every lookup
/// (`lookups "f"`), which a FIFO blocks and /dev/zero never ends. Names are matched as glibc
/// and c-ares do, ignoring case and a trailing dot.
package struct HostsFile: Equatable {
    /// Blocklist hosts files run to a few MiB; 16 MiB holds the largest in use, and is parsed
    /// once per change of the file (c-ares read the whole file at every lookup).
    package static let fileLimit = 16 << 20

    private var addresses: [String: [IPAddress]] = [:]

    package init() {}

    package init<Bytes: Collection>(parsing bytes: Bytes) where Bytes.Element == UInt8 {
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let words = line.split(whereSeparator: { $0 == 32 || $0 == 9 || $0 == 13 })
                .prefix { $0.first != UInt8(ascii: "#") }
            guard words.count >= 2, let address = IPAddress(String(decoding: words[words.startIndex], as: UTF8.self)) else {
                continue
            }
            for name in words.dropFirst() {
                let key = Self.key(String(decoding: name, as: UTF8.self))
                if addresses[key]?.contains(address) != true { addresses[key, default: []].append(address) }
            }
        }
    }

    /// The addresses the file gives `name`, IPv4 first; empty when it does not name it.
    package func addresses(of name: String) -> [IPAddress] {
        let found = addresses[Self.key(name)] ?? []
        return found.filter { if case .v4 = $0 { true } else { false } } + found.filter { if case .v6 = $0 { true } else { false } }
    }

    private static func key(_ name: String) -> String {
        let lowered = name.lowercased()
        return lowered.hasSuffix(".") ? String(lowered.dropLast()) : lowered
    }
}
