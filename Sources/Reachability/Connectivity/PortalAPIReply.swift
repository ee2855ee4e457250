/// What a network's captive-portal API answered (RFC 8908 section 5), checked member by member:
/// `captive` must be a boolean (the one member the RFC requires), the URLs https URIs by RFC
/// 3986's grammar (`HTTPSURI`, as the announcement's own) of at most `maximumURLBytes`, the
/// counts whole numbers of at most `maximumCount`, `can-extend-session` a boolean. A member of
/// another type refuses the whole answer: a server that says `"captive": "no"` is not believed
/// halfway. Members the RFC does not name are skipped.
package struct PortalAPIReply: Equatable, Sendable {
    package var captive: Bool
    package var userPortalURL = ""
    package var venueInfoURL = ""
    package var secondsRemaining: Int64?
    package var bytesRemaining: Int64?
    package var canExtendSession = false

    /// A login URL carries a session token or two; far more is no login URL.
    package static let maximumURLBytes = 2048
    /// Past any session (a century of seconds, an exabyte), and far from overflowing an instant.
    package static let maximumCount: Int64 = 1 << 62

    /// The reply in `body`, or why it was refused (naming the member and an excerpt of its value).
    package static func parse(_ body: [UInt8]) -> Result<PortalAPIReply, PortalAPIRefusal> {
        let members: [String: CaptiveJSON.Value]
        switch CaptiveJSON.members(body) {
        case let .success(read): members = read
        case let .failure(refusal): return .failure(PortalAPIRefusal("not JSON: \(refusal.reason)"))
        }
        guard case let .bool(captive) = members["captive"] else {
            return .failure(PortalAPIRefusal(members["captive"] == nil ? "no \"captive\"" : "\"captive\" is not a boolean"))
        }
        var reply = PortalAPIReply(captive: captive)
        do throws(PortalAPIRefusal) {
            reply.userPortalURL = try url(members, "user-portal-url")
            reply.venueInfoURL = try url(members, "venue-info-url")
            reply.secondsRemaining = try count(members, "seconds-remaining")
            reply.bytesRemaining = try count(members, "bytes-remaining")
            switch members["can-extend-session"] {
            case nil: break
            case let .bool(value)?: reply.canExtendSession = value
            default: throw PortalAPIRefusal("\"can-extend-session\" is not a boolean")
            }
        } catch {
            return .failure(error)
        }
        return .success(reply)
    }

    private static func url(_ members: [String: CaptiveJSON.Value], _ key: String) throws(PortalAPIRefusal) -> String {
        guard let value = members[key] else { return "" }
        guard case let .string(text) = value else { throw PortalAPIRefusal("\"\(key)\" is not a string") }
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumURLBytes else { throw PortalAPIRefusal("\"\(key)\" is longer than \(maximumURLBytes) bytes") }
        guard bytes.allSatisfy({ 0x21...0x7E ~= $0 }) else {
            throw PortalAPIRefusal("\"\(key)\" has a byte that is not printable ASCII: \(text.inertExcerpt())")
        }
        if let problem = HTTPSURI.refusal(bytes[...]) { throw PortalAPIRefusal("\"\(key)\" is \(problem): \(text.inertExcerpt())") }
        return text
    }

    private static func count(_ members: [String: CaptiveJSON.Value], _ key: String) throws(PortalAPIRefusal) -> Int64? {
        guard let value = members[key] else { return nil }
        guard case let .number(text) = value, let count = Int64(text), count >= 0, count <= maximumCount else {
            throw PortalAPIRefusal("\"\(key)\" is not a whole number from 0 to 2^62")
        }
        return count
    }
}

/// Why an API's answer, or the asking, was refused: one journal line, nothing published.
package struct PortalAPIRefusal: Error, Equatable, Sendable {
    package let reason: String
    package init(_ reason: String) { self.reason = reason }
}
