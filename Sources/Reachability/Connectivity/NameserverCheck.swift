import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// reachd's own question to one of a suspect link's nameservers beyond its gateway, while that
/// link's traffic is suspected or ahead of a second look at a stopped download
/// (`StallReport.nameserverChecks`, `StallNameserverQuestions`): DNS queries for the root zone's
/// SOA (17 bytes each, the answer is in every resolver's cache), sent again at each poll and read
/// at the next one, never waited for: no watch, no timer. Anything from the server counts as an
/// answer, a refusal or its port unreachable too; silence, or a router's "unreachable", does not.
///
/// Why a nameserver: it is a destination no caller chose (one user's connections to a black hole
/// must not make it fail) that every host already trusts and talks to, beyond the gateway (a
/// server on the link's own subnet would answer while the uplink behind it is dead).
package final class NameserverCheck {
    package let interfaceIndex: Int32
    /// When its first queries went, on the stall evaluator's clock.
    package let since: Duration
    private let descriptor: Descriptor
    /// The ids of the queries sent so far: an answer must carry one of them.
    private var identifiers: Set<UInt16> = []
    /// A send failed with the server's port unreachable (a nearby server's ICMP error can come
    /// back before the next query goes, and the kernel hands it to that send).
    private var refused = false
    private var random = SystemRandomNumberGenerator()
    /// Polls that asked so far: the first asks `queriesPerPoll`, the later ones fewer.
    private var rounds = 0

    /// Queries sent at each poll. Random loss takes each one independently: at 40% each way one
    /// round trip in three gets through, and 16 lost together is about one in a thousand.
    /// About 700 bytes out and 16 small answers back per 2 s poll, only while a link is suspected
    /// or asked ahead of a look (a link at most once every 30 s).
    package static let queriesPerPoll = 16

    /// Queries sent at each later poll while the question stays unanswered. Its patience was
    /// judged on the first 16; what follows only has to see the server answer again when the
    /// path returns (at 40% loss each way, 4 all lost is one chance in six: a poll later). So a
    /// stall of any length costs at most 2 queries a second after its first 16 (issue 51: the
    /// check went on at 8 a second for as long as one account's failing connections lasted).
    package static let queriesPerLaterPoll = 4

    /// nil when no socket can be made or connected (no route, say): nothing to ask.
    package init?(interfaceIndex: Int32, server: IPAddress, at since: Duration, port: UInt16 = 53) {
        let family = server.family == .ipv4 ? AF_INET : AF_INET6
        let fd = Glibc.socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        descriptor = Descriptor(fd)
        self.interfaceIndex = interfaceIndex
        self.since = since
        // Connected: the kernel routes it as any of the host's queries, and hands back only the
        // server's datagrams and the ICMP errors about them.
        guard server.withSocketAddress(port: port, { connect(fd, $0, $1) }) == 0 else { return nil }
    }

    /// Sends this poll's queries (a full socket buffer loses some: the next poll sends more).
    package func ask() {
        let count = rounds == 0 ? Self.queriesPerPoll : Self.queriesPerLaterPoll
        rounds += 1
        for _ in 0..<count {
            let identifier = UInt16.random(in: .min ... .max, using: &random)
            identifiers.insert(identifier)
            let query = Self.query(identifier: identifier)
            let sent = query.withUnsafeBytes { send(descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if sent < 0, errno == ECONNREFUSED { refused = true }
        }
    }

    /// Whether anything of the server's arrived since the first queries; reads what is queued.
    package func answered() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 512)
        var answered = refused
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 {
                switch errno {
                case EINTR: continue
                // The server's own port unreachable: it is there, the path works.
                case ECONNREFUSED: answered = true; continue
                // A router's unreachable (EHOSTUNREACH, ENETUNREACH) is no answer; EAGAIN: all read.
                case EHOSTUNREACH, ENETUNREACH: continue
                default: return answered
                }
            }
            if Self.isAnswer(buffer[0..<min(count, buffer.count)], to: identifiers) { answered = true }
        }
    }

    /// A DNS query (RFC 1035 4.1) with recursion desired: `.` SOA IN.
    package static func query(identifier: UInt16) -> [UInt8] {
        [UInt8(identifier >> 8), UInt8(identifier & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1]
    }

    /// Whether `datagram` is a DNS response (QR set) to one of `identifiers`; any return code.
    package static func isAnswer(_ datagram: ArraySlice<UInt8>, to identifiers: Set<UInt16>) -> Bool {
        guard datagram.count >= 12 else { return false }
        let start = datagram.startIndex
        let identifier = UInt16(datagram[start]) << 8 | UInt16(datagram[start + 1])
        return datagram[start + 2] & 0x80 != 0 && identifiers.contains(identifier)
    }
}
