/// One question to a link's captive-portal API: the URI it announced, asked bound to the link.
package struct PortalQuestion: Hashable, Sendable {
    package var interfaceIndex: Int32
    package var interfaceName: String
    package var api: String
    /// When it was asked: `seconds-remaining` counts from here (the answer is younger).
    package var asked: ContinuousClock.Instant

    package init(interfaceIndex: Int32, interfaceName: String, api: String, asked: ContinuousClock.Instant) {
        self.interfaceIndex = interfaceIndex
        self.interfaceName = interfaceName
        self.api = api
        self.asked = asked
    }
}

/// The captive-portal APIs (RFC 8908), asked over HTTPS on `ExchangeThread`: what a question
/// to one is, and how its answer is read.
///
/// Each question is bounded: the link (SO_BINDTODEVICE, so the answer is that link's network's),
/// https only, also after a redirect, at most `maximumRedirects`, `timeout` in all, a body of at
/// most `maximumBody` bytes, `Content-Type: application/captive+json` and status 200, the
/// system's trust store (or `caFile`), no proxy, no cookies.
package enum PortalAPI {
    package static let maximumBody = 64 << 10
    package static let maximumRedirects = 3
    package static let timeout: Duration = .seconds(5)
    package static let contentType = "application/captive+json"

    /// The exchange that asks `question`'s API.
    package static func exchange(_ question: PortalQuestion) -> HTTPQuestion {
        HTTPQuestion(
            url: question.api, binding: .link(question.interfaceName), protocols: "https", redirects: maximumRedirects,
            timeout: timeout, maximumBody: maximumBody, headers: ["Accept: " + contentType])
    }

    /// Status 200 and the API's content type, then the body's members.
    package static func read(_ answer: Result<HTTPResponse, HTTPFailure>) -> Result<PortalAPIReply, PortalAPIRefusal> {
        let response: HTTPResponse
        switch answer {
        case let .failure(failure): return .failure(PortalAPIRefusal(failure.description))
        case let .success(got): response = got
        }
        guard response.isComplete else { return .failure(PortalAPIRefusal("an answer longer than \(maximumBody) bytes")) }
        guard response.status == 200 else { return .failure(PortalAPIRefusal("HTTP status \(response.status), not 200")) }
        let mediaType = response.headers["content-type"] ?? ""
        let essence = mediaType.prefix { $0 != ";" }.trimmingSpaces.lowercased()
        guard essence == contentType else {
            return .failure(PortalAPIRefusal("Content-Type \(mediaType.inertExcerpt()), not \(contentType)"))
        }
        return PortalAPIReply.parse(response.body)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        let trimmed = drop { $0 == " " || $0 == "\t" }
        return trimmed.prefix(trimmed.count - (trimmed.reversed().prefix { $0 == " " || $0 == "\t" }.count))
    }
}
