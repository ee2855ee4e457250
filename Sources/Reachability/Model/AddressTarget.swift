import ReachabilitySystem  // String.inertExcerpt

/// An address as a caller may write it: `192.0.2.1`, `2001:db8::1`, `[2001:db8::1]`,
/// `fe80::1%eth0` (scoped link-local, by name or index), or `::ffff:192.0.2.1` (taken as IPv4).
package struct AddressTarget: Hashable, Sendable {
    public var address: IPAddress
    /// The interface named by a `%scope` suffix.
    public var scope: Scope?

    public enum Scope: Hashable, Sendable {
        case name(String)
        case index(Int32)
    }

    public init(address: IPAddress, scope: Scope? = nil) {
        self.address = address
        self.scope = scope
    }

    /// The longest text worth parsing: a full IPv6 address, a scope of IFNAMSIZ, brackets.
    package static let maximumLength = 64

    public enum ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        case empty
        case tooLong(length: Int)
        case invalidScope(String)
        case notAnAddress(String)

        public var description: String {
            switch self {
            case .empty: "empty target"
            case let .tooLong(length): "target is \(length) characters long; an address has at most \(AddressTarget.maximumLength)"
            case let .invalidScope(text): "invalid scope in \(text.inertExcerpt()): write an interface name or index after '%', as in fe80::1%eth0"
            case let .notAnAddress(text) where HostName.isNumericForm(text.hasSuffix(".") ? String(text.dropLast()) : text):
                "\(text.inertExcerpt()) is a short, octal or single-number IPv4 form (as inet_aton reads it; 0x parts are "
                    + "hexadecimal), which reachd does not guess at: write the four decimal parts, as in 127.0.0.1"
            case let .notAnAddress(text) where !text.contains(":") && text.contains(where: \.isLetter):
                // Letters, but a numeric last label (host.123): the host name error says why it is neither.
                HostName.numericTopLabel(text).map { HostNameError(name: text, problem: .numericTopLevelLabel($0)).description }
                    ?? "\(text.inertExcerpt()) is not an IPv4 or IPv6 address"
            case let .notAnAddress(text): "\(text.inertExcerpt()) is not an IPv4 or IPv6 address"
            }
        }
    }

    /// Parses `text`; nil-free: every failure names what was wrong.
    public static func parse(_ text: String) -> Result<AddressTarget, ParseError> {
        guard !text.isEmpty else { return .failure(.empty) }
        guard text.utf8.count <= maximumLength else { return .failure(.tooLong(length: text.utf8.count)) }
        var body = Substring(text)
        if body.hasPrefix("["), body.hasSuffix("]") { body = body.dropFirst().dropLast() }
        var scope: Scope?
        if let percent = body.firstIndex(of: "%") {
            let name = body[body.index(after: percent)...]
            body = body[..<percent]
            guard isInterfaceName(name), body.contains(":") else {
                return .failure(.invalidScope(text))
            }
            if let index = Int32(name), index > 0 { scope = .index(index) } else { scope = .name(String(name)) }
        }
        guard var address = IPAddress(String(body)) else { return .failure(.notAnAddress(text)) }
        if let v4 = address.unmappedV4 { address = v4 }
        return .success(AddressTarget(address: address, scope: scope))
    }

    /// Whether the kernel could have given a link this name (net/core/dev.c, dev_valid_name): 1 to 15
    /// bytes (IFNAMSIZ - 1), not `.` or `..`, and no `/`, `:`, whitespace or NUL. Anything else in a
    /// scope is a typo or an attack, refused as such rather than looked up.
    package static func isInterfaceName(_ name: Substring) -> Bool {
        guard (1...15).contains(name.utf8.count), name != ".", name != ".." else { return false }
        // isspace() in the C locale: space, \t, \n, \v, \f, \r.
        return !name.utf8.contains { $0 == 0 || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ":") || $0 == 0x20 || (0x09...0x0D).contains($0) }
    }

    /// Whether `text` is to be read as an address rather than a host name: it has a colon, or it
    /// cannot be a host name because its last label is all digits (`192.0.2.1`, `127.1`,
    /// `192.0.2.999`, `host.123`) or it is one of inet_aton's numeric forms (`0x7f.0.0.1`,
    /// `0x7f000001`). Every entry point (CheckAddress, CheckHost, Watch, reachctl, in-process)
    /// decides with this, so such a text is answered, or refused by `parse` with a reason, the
    /// same way everywhere, and never sent to DNS.
    public static func looksLikeAddress(_ text: String) -> Bool {
        text.contains(":") || HostName.numericTopLabel(text) != nil || HostName.isNumericForm(text)
    }
}
