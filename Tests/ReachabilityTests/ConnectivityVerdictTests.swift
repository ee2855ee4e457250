import Testing
@testable import Reachability

/// issue 11: how an HTTP answer maps onto Connectivity, rule by rule, beside NetworkManager's and
/// Android's rules. Since issue 45 libcurl reads the answer; the tests write a response as it hands
/// one over (`HTTPResponse`: status, the headers read, the start of the body).
@Suite("Connectivity verdicts")
struct ConnectivityVerdictTests {
    /// "STATUS\nName: value\n...\n\nbody", as libcurl would have read it off the wire.
    static func response(_ text: String) throws -> HTTPResponse {
        let parts = text.split(separator: "\n\n", maxSplits: 1, omittingEmptySubsequences: false)
        var lines = parts[0].split(separator: "\n")
        let status = try #require(Int(lines.removeFirst()))
        var headers: [String: String] = [:]
        for line in lines {
            let pair = line.split(separator: ":", maxSplits: 1)
            headers[pair[0].lowercased()] = String(pair[1].drop { $0 == " " })
        }
        let body = parts.count > 1 ? Array(parts[1].utf8) : []
        return HTTPResponse(
            status: status, headers: headers, body: Array(body.prefix(ProbeExpectation.maximumBody)), isComplete: body.count <= ProbeExpectation.maximumBody)
    }

    static func judge(_ text: String, _ expectation: ProbeExpectation = ProbeExpectation()) throws -> ConnectivityStatus {
        expectation.judge(try response(text))
    }

    @Test func theExpectedAnswersAreFull() throws {
        #expect(try Self.judge("204\n\n").verdict == .full)
        // NetworkManager counts an empty 200 as a 204.
        #expect(try Self.judge("200\n\n").verdict == .full)
        // NetworkManager's header decides, whatever the status and body.
        #expect(try Self.judge("200\nX-NetworkManager-Status: online\n\nanything").verdict == .full)
        let body = ProbeExpectation(status: 200, body: "NetworkManager is online")
        #expect(try Self.judge("200\n\nNetworkManager is online\n", body).verdict == .full)
    }

    @Test func interceptionIsAPortalWithItsLocation() throws {
        let redirect = try Self.judge("302\nLocation: http://login.hotel.example/?from=probe\n\n")
        #expect(redirect == ConnectivityStatus(verdict: .portal, portal: "http://login.hotel.example/?from=probe", detail: "HTTP 302"))
        #expect(redirect.flags == .interventionRequired)
        #expect(try Self.judge("200\n\n<html>login</html>\r\n").verdict == .portal)
        let body = ProbeExpectation(status: 200, body: "NetworkManager is online")
        #expect(try Self.judge("200\n\n<html>please log in</html>", body).verdict == .portal)
    }

    @Test func wrongAnswersAreLimited() throws {
        #expect(try Self.judge("503\n\n").verdict == .limited)
        #expect(try Self.judge("404\n\n").verdict == .limited)
        // Android: a 200 of 4 bytes or fewer is a failure, not a portal.
        #expect(try Self.judge("200\n\nok").verdict == .limited)
        #expect(ProbeExpectation.failed("DNS timeout").verdict == .none)
        #expect(ProbeExpectation.failed("DNS timeout").flags == [])
        #expect(try Self.judge("204\n\n").flags == .validated)
    }

    /// A long page is judged from its start (libcurl's transfer is cut there): a portal.
    @Test func aLongPageIsAPortalJudgedFromItsStart() throws {
        let page = try Self.response("200\nContent-Type: text/html\n\n" + String(repeating: "<p>log in</p>", count: 1000))
        #expect(page.body.count == ProbeExpectation.maximumBody && !page.isComplete)
        let verdict = ProbeExpectation().judge(page)
        #expect(verdict.verdict == .portal && verdict.detail.contains("4096+ bytes"), "\(verdict)")
    }
}
