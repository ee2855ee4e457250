import Testing
@testable import Reachability

/// issue 11: how an HTTP answer (parsed from untrusted bytes) maps onto Connectivity, rule by
/// rule, beside NetworkManager's and Android's rules.
@Suite("Connectivity verdicts")
struct ConnectivityVerdictTests {
    static func response(_ text: String) throws -> HTTPResponse {
        var reader = HTTPResponseReader()
        if let response = try reader.feed(Array(text.utf8)) { return response }
        return try reader.finish()
    }

    static func judge(_ text: String, _ expectation: ProbeExpectation = ProbeExpectation()) throws -> ConnectivityStatus {
        expectation.judge(try response(text))
    }

    @Test func theExpectedAnswersAreFull() throws {
        #expect(try Self.judge("HTTP/1.1 204 No Content\r\n\r\n").verdict == .full)
        // NetworkManager counts an empty 200 as a 204.
        #expect(try Self.judge("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").verdict == .full)
        // NetworkManager's header decides, whatever the status and body.
        #expect(try Self.judge("HTTP/1.0 200 OK\r\nX-NetworkManager-Status: online\r\n\r\nanything").verdict == .full)
        let body = ProbeExpectation(status: 200, body: "NetworkManager is online")
        #expect(try Self.judge("HTTP/1.1 200 OK\r\nContent-Length: 25\r\n\r\nNetworkManager is online\n", body).verdict == .full)
    }

    @Test func interceptionIsAPortalWithItsLocation() throws {
        let redirect = try Self.judge("HTTP/1.1 302 Found\r\nLocation: http://login.hotel.example/?from=probe\r\n\r\n")
        #expect(redirect == ConnectivityStatus(verdict: .portal, portal: "http://login.hotel.example/?from=probe", detail: "HTTP 302"))
        #expect(redirect.flags == .interventionRequired)
        #expect(try Self.judge("HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n<html>login</html>\r\n").verdict == .portal)
        let body = ProbeExpectation(status: 200, body: "NetworkManager is online")
        #expect(try Self.judge("HTTP/1.1 200 OK\r\n\r\n<html>please log in</html>", body).verdict == .portal)
    }

    @Test func wrongAnswersAreLimited() throws {
        #expect(try Self.judge("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n").verdict == .limited)
        #expect(try Self.judge("HTTP/1.1 404 Not Found\r\n\r\n").verdict == .limited)
        // Android: a 200 of 4 bytes or fewer is a failure, not a portal.
        #expect(try Self.judge("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").verdict == .limited)
        #expect(ProbeExpectation.failed("DNS timeout").verdict == .none)
        #expect(ProbeExpectation.failed("DNS timeout").flags == [])
        #expect(try Self.judge("HTTP/1.1 204 No Content\r\n\r\n").flags == .validated)
    }

    @Test func theReaderWaitsForTheBodyAndBoundsIt() throws {
        var reader = HTTPResponseReader()
        #expect(try reader.feed(Array("HTTP/1.1 200 OK\r\nContent-Le".utf8)) == nil)
        #expect(try reader.feed(Array("ngth: 10\r\n\r\n12345".utf8)) == nil)
        let done = try #require(try reader.feed(Array("67890trailing".utf8)))
        #expect(done.body == Array("1234567890".utf8) && done.isComplete)
        // A body without a length ends with the connection; only the first 4 KiB are kept.
        var endless = HTTPResponseReader()
        #expect(try endless.feed(Array("HTTP/1.1 200 OK\n\n".utf8)) == nil)
        let big = try #require(try endless.feed([UInt8](repeating: 0x41, count: 10_000)))
        #expect(big.body.count == HTTPResponse.maximumBody && !big.isComplete)
    }

    @Test(arguments: [
        ("", "the server closed the connection without answering"),
        ("SSH-2.0-OpenSSH_9.2\r\n\r\n", "not an HTTP/1.x status line"),
        ("HTTP/1.1 2000 OK\r\n\r\n", "not an HTTP/1.x status line"),
        ("HTTP/1.1 204", "the connection closed in the middle of the response head"),
        ("HTTP/2 204\r\n\r\n", "not an HTTP/1.x status line"),
    ])
    func garbageIsAnErrorThatSaysWhat(text: String, fragment: String) {
        var reader = HTTPResponseReader()
        do {
            if try reader.feed(Array(text.utf8)) == nil { _ = try reader.finish() }
            Issue.record("'\(text)' was accepted")
        } catch {
            #expect(error.description.contains(fragment), "\(error)")
        }
    }

    @Test func anEndlessHeadIsRefused() {
        var reader = HTTPResponseReader()
        do {
            _ = try reader.feed(Array("HTTP/1.1 200 OK\r\n".utf8))
            for _ in 0..<2000 { _ = try reader.feed(Array("X-Junk: aaaaaaaaaaaaaaaaaaaa\r\n".utf8)) }
            Issue.record("a head of 60 KB was accepted")
        } catch {
            #expect(error.description.contains("longer than \(HTTPResponse.maximumHead) bytes"))
        }
    }

    @Test func randomBytesNeverCrashTheReader() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var reader = HTTPResponseReader()
            let prefix = Bool.random(using: &generator) ? Array("HTTP/1.1 ".utf8) : []
            let bytes = prefix + (0..<Int.random(in: 0..<300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? reader.feed(bytes)
            _ = try? reader.finish()
        }
    }
}
