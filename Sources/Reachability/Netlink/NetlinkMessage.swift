/// `struct nlmsghdr`, decoded.
package struct NetlinkHeader: Hashable, Sendable {
    package var length: UInt32
    package var type: UInt16
    package var flags: UInt16
    package var sequence: UInt32
    package var portID: UInt32

    package static let size = 16

    /// NLM_F_DUMP_INTR: the dump was interrupted by a change and must be redone.
    package var isDumpInterrupted: Bool { flags & RT.flagDumpInterrupted != 0 }
    /// NLM_F_REPLACE on RTM_NEWROUTE.
    package var isReplace: Bool { flags & RT.flagReplace != 0 }
}

/// The ways a datagram's framing can be broken, as each decoder's error type spells them.
package protocol NetlinkFramingError: Error {
    static func truncatedHeader(offset: Int, available: Int) -> Self
    static func invalidMessageLength(offset: Int, declared: Int, available: Int) -> Self
    static func truncatedPayload(messageType: UInt16, needed: Int, available: Int) -> Self
}

extension NetlinkHeader {
    /// Calls `body` with each message's header and payload, in order, and returns the broken
    /// framing that ended the walk early, if any: past a bad length nothing can be trusted to
    /// start a message. Both decoders (rtnetlink, sock_diag) frame through here.
    package static func forEachMessage<Failure: NetlinkFramingError>(
        in reader: ByteReader, failing: Failure.Type, _ body: (NetlinkHeader, ByteReader) -> Void
    ) -> Failure? {
        var offset = 0
        while offset < reader.count {
            let available = reader.count - offset
            guard available >= size,
                let length = reader.integer(at: offset, as: UInt32.self),
                let type = reader.integer(at: offset + 4, as: UInt16.self),
                let flags = reader.integer(at: offset + 6, as: UInt16.self),
                let sequence = reader.integer(at: offset + 8, as: UInt32.self),
                let portID = reader.integer(at: offset + 12, as: UInt32.self)
            else { return .truncatedHeader(offset: offset, available: available) }
            guard Int(length) >= size, Int(length) <= available,
                let payload = reader.slice(at: offset + size, length: Int(length) - size)
            else { return .invalidMessageLength(offset: offset, declared: Int(length), available: available) }
            body(NetlinkHeader(length: length, type: type, flags: flags, sequence: sequence, portID: portID), payload)
            offset += netlinkAlign(Int(length))
        }
        return nil
    }

    /// Walks `struct rtattr`s / `struct nlattr`s (len u16, type u16, value, padded to 4) from
    /// `start` to the end of `container`, with the type's top two bits (NLA_F_NESTED,
    /// NLA_F_NET_BYTEORDER) cleared. A length below the header or past the end ends the walk
    /// with `invalid(attribute, declared, available)`; fewer than 4 trailing bytes are padding.
    package static func forEachAttribute<Failure: Error>(
        in container: ByteReader, from start: Int, _ body: (UInt16, ByteReader) throws(Failure) -> Void,
        invalid: (_ attribute: UInt16, _ declared: Int, _ available: Int) -> Failure
    ) throws(Failure) {
        var offset = start
        while offset < container.count {
            let available = container.count - offset
            guard available >= 4,
                let length = container.integer(at: offset, as: UInt16.self),
                let rawType = container.integer(at: offset + 2, as: UInt16.self)
            else { return }
            let attribute = rawType & 0x3FFF
            guard Int(length) >= 4, Int(length) <= available,
                let value = container.slice(at: offset + 4, length: Int(length) - 4)
            else { throw invalid(attribute, Int(length), available) }
            try body(attribute, value)
            offset += netlinkAlign(Int(length))
        }
    }

    /// NLMSG_ERROR's errno (negative, as the kernel sends it; 0 for an acknowledgement), the same
    /// in every netlink protocol.
    package static func errorCode<Failure: NetlinkFramingError>(_ payload: ByteReader, failing: Failure.Type) throws(Failure) -> Int32 {
        guard let code = payload.integer(at: 0, as: Int32.self) else {
            throw .truncatedPayload(messageType: RT.error, needed: 4, available: payload.count)
        }
        return code
    }
}

extension NetlinkDecodingError: NetlinkFramingError {}

/// One rtnetlink message, decoded into the Model's terms.
package enum RoutingMessage: Hashable, Sendable {
    case link(Link)
    case linkRemoved(Link)
    case address(Address)
    case addressRemoved(Address)
    case route(Route)
    case routeRemoved(Route)
    /// RTM_NEWRULE or RTM_DELRULE: the policy rules changed. Their content is not kept: the
    /// kernel is asked for the paths they select (see `KernelSource`).
    case ruleChanged
    /// RTM_NEWNEIGH / RTM_DELNEIGH of an IPv4 or IPv6 neighbour (bridge forwarding entries and
    /// proxy entries are `ignored`).
    case neighbour(Neighbour)
    case neighbourRemoved(Neighbour)
    /// RTM_NEWNDUSEROPT carrying option 37 of a router advertisement: the captive-portal URI the
    /// network announced (RFC 8910). The kernel's other user options (RDNSS, DNSSL, prefix
    /// information) are `ignored`.
    case announcedPortal(AnnouncedPortal)
    /// RTM_NEWNDUSEROPT carrying option 38 (PREF64, RFC 8781): a NAT64 prefix and its lifetime.
    case nat64Prefix(AnnouncedNat64Prefix)
    /// Option 37 with a URI no client may be given (not a strict https URI): dropped, and said
    /// once per router (`KernelSource`).
    case refusedAnnouncement(RefusedAnnouncement)
    /// NLMSG_DONE: the end of a dump.
    case done
    /// NLMSG_ERROR: an errno (negative, as the kernel sends it) or 0 for an acknowledgement.
    case error(Int32)
    /// A message of no interest (other families, cloned routes, NLMSG_NOOP, unknown types).
    case ignored(type: UInt16)
}

package struct DecodedMessage: Hashable, Sendable {
    package var header: NetlinkHeader
    package var message: RoutingMessage
}

/// What was wrong with bytes that claimed to be netlink. Each names where and what.
package enum NetlinkDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Fewer bytes than a `nlmsghdr` at `offset`.
    case truncatedHeader(offset: Int, available: Int)
    /// `nlmsg_len` smaller than the header or larger than what is left.
    case invalidMessageLength(offset: Int, declared: Int, available: Int)
    /// The fixed part after the header (`ifinfomsg`, `ifaddrmsg`, `rtmsg`, ...) does not fit.
    case truncatedPayload(messageType: UInt16, needed: Int, available: Int)
    /// An attribute's `rta_len` is below its header size or runs past its container.
    case invalidAttributeLength(messageType: UInt16, attribute: UInt16, declared: Int, available: Int)
    /// An attribute has a length its type cannot have (an address that is not 4 or 16 bytes, ...).
    case invalidAttributeValue(messageType: UInt16, attribute: UInt16, length: Int)
    /// A message the kernel must send with a field it lacks (a link with no name).
    case missingAttribute(messageType: UInt16, attribute: UInt16)
    /// A neighbour discovery option (in RTM_NEWNDUSEROPT) of length 0 or running past its message.
    case invalidOption(messageType: UInt16, option: UInt8, declared: Int, available: Int)

    package var description: String {
        switch self {
        case let .truncatedHeader(offset, available):
            "truncated netlink header at offset \(offset): \(available) bytes left, 16 needed"
        case let .invalidMessageLength(offset, declared, available):
            "netlink message at offset \(offset) declares length \(declared) with \(available) bytes left"
        case let .truncatedPayload(type, needed, available):
            "netlink message type \(type) has \(available) payload bytes, \(needed) needed"
        case let .invalidAttributeLength(type, attribute, declared, available):
            "attribute \(attribute) of message type \(type) declares length \(declared) with \(available) bytes left"
        case let .invalidAttributeValue(type, attribute, length):
            "attribute \(attribute) of message type \(type) has invalid length \(length)"
        case let .missingAttribute(type, attribute):
            "message type \(type) lacks required attribute \(attribute)"
        case let .invalidOption(type, option, declared, available):
            "ND option \(option) of message type \(type) declares length \(declared) with \(available) bytes left"
        }
    }
}
