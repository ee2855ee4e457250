import Foundation
import Testing
@testable import Reachability

/// reachd's own question to a suspect link's nameserver: the query's bytes, what counts as an
/// answer (garbage never does), and real sockets on loopback: a closed port answers (the
/// server's port unreachable), a server that reads and never replies does not, one that
/// replies does.
@Suite(rootOnly, .serialized)
struct NameserverCheckTests {
    @Test func theQueryIsTheRootsSOAWithRecursionDesired() {
        let query = NameserverCheck.query(identifier: 0xBEEF)
        #expect(query == [0xBE, 0xEF, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1])
    }

    @Test func onlyAResponseCarryingOneOfOurIdentifiersIsAnAnswer() {
        let ids: Set<UInt16> = [0x1234]
        var response = NameserverCheck.query(identifier: 0x1234)
        response[2] |= 0x80
        #expect(NameserverCheck.isAnswer(response[...], to: ids))
        response[3] = 0x05  // REFUSED: still the server's answer
        #expect(NameserverCheck.isAnswer(response[...], to: ids))
        #expect(!NameserverCheck.isAnswer(NameserverCheck.query(identifier: 0x1234)[...], to: ids), "a query (QR clear) is no answer")
        #expect(!NameserverCheck.isAnswer(response[...], to: [0x4321]), "someone else's id")
        #expect(!NameserverCheck.isAnswer(response[0..<11], to: ids), "shorter than a header")
        #expect(!NameserverCheck.isAnswer(response[5...], to: ids), "a slice is read from its own start")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let count = Int.random(in: 0...40, using: &generator)
            let garbage = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let identifier = garbage.count >= 2 ? UInt16(garbage[0]) << 8 | UInt16(garbage[1]) : 0
            let expected = garbage.count >= 12 && garbage[2] & 0x80 != 0 && ids.contains(identifier)
            #expect(NameserverCheck.isAnswer(garbage[...], to: ids) == expected)
        }
    }

    /// A UDP server on 127.0.0.1:`port` that reads and, when `replies`, sends each datagram back
    /// with QR set.
    final class LoopbackServer {
        let fd: Int32
        let port: UInt16
        private var thread: Thread?

        init(replies: Bool) throws {
            let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            fd = descriptor
            port = UInt16(bigEndian: address.sin_port)
            guard bound == 0 else { throw SystemError("bind") }
            guard replies else { return }
            let fd = self.fd
            thread = Thread {
                var buffer = [UInt8](repeating: 0, count: 512)
                var peer = sockaddr_storage()
                while true {
                    var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
                    let count = withUnsafeMutablePointer(to: &peer) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &peerLength) }
                    }
                    guard count > 2 else { return }
                    buffer[2] |= 0x80
                    _ = withUnsafePointer(to: &peer) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, buffer, count, 0, $0, peerLength) }
                    }
                }
            }
            thread?.start()
        }

        deinit { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
    }

    /// What a check to 127.0.0.1:`port` comes to, read after 200 ms.
    static func outcome(port: UInt16) async throws -> Bool {
        let check = try #require(NameserverCheck(interfaceIndex: 1, server: IPAddress("127.0.0.1")!, at: .zero, port: port))
        check.ask()
        try await Task.sleep(for: .milliseconds(200))
        return check.answered()
    }

    @Test func realSockets_aReplyOrTheServersPortUnreachableAnswer_silenceDoesNot() async throws {
        let replying = try LoopbackServer(replies: true)
        #expect(try await Self.outcome(port: replying.port), "a reply with our id")
        let silent = try LoopbackServer(replies: false)
        #expect(try await !Self.outcome(port: silent.port), "read, never answered")
        // A port nothing listens on: the kernel's port unreachable (ECONNREFUSED).
        #expect(try await Self.outcome(port: Self.freePort()), "a closed port is the server's own answer")
    }

    /// A UDP port nothing is bound to on loopback (bound once, then released).
    static func freePort() throws -> UInt16 {
        let server = try LoopbackServer(replies: false)
        return server.port
    }
}

extension NameserverCheckTests {
    /// Issue 51: a question's first poll sends 16 queries, each later poll 4: a stall of any
    /// length costs at most 2 queries a second after its first 16.
    @Test func laterPollsOfAnUnansweredQuestionSendFewerQueries() throws {
        let silent = try LoopbackServer(replies: false)
        let check = try #require(NameserverCheck(interfaceIndex: 1, server: IPAddress("127.0.0.1")!, at: .zero, port: silent.port))
        func received() -> Int {
            var count = 0
            var buffer = [UInt8](repeating: 0, count: 512)
            while recv(silent.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { count += 1 }
            return count
        }
        check.ask()
        #expect(received() == NameserverCheck.queriesPerPoll)
        for _ in 0..<5 {
            check.ask()
            #expect(received() == NameserverCheck.queriesPerLaterPoll)
        }
        #expect(NameserverCheck.queriesPerLaterPoll == 4)
    }
}
