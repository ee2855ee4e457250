/// Renderings of a `Path` (`reachctl status --kind`, `reachctl monitor --kind`): the same
/// whether reachd or the library in-process derived it.
extension Path.Restriction {
    /// `kind wifi, not cellular|vpn`; `any kind` unrestricted.
    public var text: String {
        var parts: [String] = []
        if let required = requiredInterfaceType { parts.append("kind \(required.rawValue)") }
        if !prohibitedInterfaceTypes.isEmpty { parts.append("not " + prohibitedInOrder.map(\.rawValue).joined(separator: "|")) }
        return parts.isEmpty ? "any kind" : parts.joined(separator: ", ")
    }
}

/// One line: `kind wifi: satisfied via pw0 (wifi), IPv4 via 198.51.100.1`, or
/// `kind wifi: unsatisfied (local): linkDown`; `style.verbose` adds Apple's flags after the
/// interfaces or the state (`[reachable|isWiFi]`, `[none]`), `style.colour` paints the status.
public func renderPath(_ path: Path, _ restriction: Path.Restriction, style: TextStyle = .plain) -> String {
    let tone: TextStyle.Tone = path.status == .satisfied ? .good : .bad
    var line = "\(restriction.text): \(style.paint(path.status.rawValue, tone))"
    guard path.status == .satisfied else {
        line += " (\(path.state.rawValue))"
        if style.verbose { line += " [\(renderFlags(path.flags))]" }
        if let reason = path.unsatisfiedReason { line += ": \(reason.rawValue)" }
        return line
    }
    line += " via " + path.availableInterfaces.map { "\($0.name) (\($0.kind.rawValue))" }.joined(separator: ", ")
    if style.verbose { line += " [\(renderFlags(path.flags))]" }
    let families = [path.supportsIPv4 ? "IPv4" : nil, path.supportsIPv6 ? "IPv6" : nil].compactMap { $0 }
    line += ", " + (families.isEmpty ? "no global address" : families.joined(separator: " "))
    if !path.gateways.isEmpty { line += " via " + path.gateways.map(\.description).joined(separator: " ") }
    if path.isExpensive { line += ", expensive" }
    return line
}

extension Path {
    /// The path's JSON, the WatchPath object's properties in lowerCamelCase (the restriction as
    /// `requiredKind` and `prohibitedKinds`).
    public func json(_ restriction: Restriction) -> JSONValue {
        .object([
            ("status", .string(status.rawValue)),
            ("state", .string(state.rawValue)),
            ("flags", flags.json),
            ("primaryInterface", .string(primaryInterface)),
            ("availableInterfaces", .array(availableInterfaces.map { .string($0.name) })),
            ("interfaces", .array(availableInterfaces.map {
                .object([("index", .int(Int64($0.index))), ("name", .string($0.name)), ("kind", .string($0.kind.rawValue))])
            })),
            ("isExpensive", .bool(isExpensive)),
            ("supportsIPv4", .bool(supportsIPv4)),
            ("supportsIPv6", .bool(supportsIPv6)),
            ("gateways", .array(gateways.map { .string($0.description) })),
            ("reason", .string(unsatisfiedReason?.rawValue ?? "")),
            ("requiredKind", .string(restriction.requiredInterfaceType?.rawValue ?? "")),
            ("prohibitedKinds", .array(restriction.prohibitedInOrder.map { .string($0.rawValue) })),
        ])
    }
}
