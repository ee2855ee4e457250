extension Explanation {
    /// `reachctl why --json`, and the same keys for every client: `target` ("" for the host),
    /// `uid` (null when the lookup was the system's), `brokenLayer` (the first broken layer's
    /// name, "" when none is), for a unit's (`why --unit`) `unit` and `trafficScope` ("unit" when
    /// the traffic layer is the unit's own sockets', else "host") before it, `layers` (each `layer`, `status`: ok, broken or unknown,
    /// `evidence`: strings, `fix`: "" unless broken), every layer in order.
    package var json: JSONValue {
        .object([
            ("target", .string(target)),
            ("uid", uid.map { .uint(UInt64($0)) } ?? .null),
        ] + (unit.map { [("unit", JSONValue.string($0)), ("trafficScope", JSONValue.string(trafficScope.rawValue))] } ?? []) + [
            ("brokenLayer", .string(brokenLayer?.rawValue ?? "")),
            ("layers", .array(layers.map { layer in
                .object([
                    ("layer", .string(layer.name.rawValue)),
                    ("status", .string(layer.status.rawValue)),
                    ("evidence", .array(layer.evidence.map { .string($0) })),
                    ("fix", .string(layer.fix)),
                ])
            })),
        ])
    }
}

/// `reachctl why`: a verdict line, one line per layer (name, status, the first fact; more facts
/// on lines of their own below it), then what would fix the first broken layer. Read at a glance:
/// the broken layer's status is upper case.
package func renderExplanation(_ explanation: Explanation) -> String {
    var subject = explanation.target.isEmpty ? "this host" : explanation.target
    if let unit = explanation.unit { subject = "\(unit) to \(explanation.target.isEmpty ? "the internet" : explanation.target)" }
    let whose = explanation.uid.map { " (as uid \($0))" } ?? ""
    var lines: [String] = []
    if let broken = explanation.brokenLayer {
        lines.append("\(subject)\(whose): broken at the \(broken.rawValue) layer")
    } else {
        lines.append("\(subject)\(whose): nothing broken")
    }
    let nameWidth = Explanation.LayerName.allCases.map(\.rawValue.count).max() ?? 8
    let statusWidth = 7
    for layer in explanation.layers {
        let name = layer.name.rawValue.padded(to: nameWidth)
        let status = (layer.status == .broken ? "BROKEN" : layer.status.rawValue).padded(to: statusWidth)
        let facts = layer.evidence.isEmpty ? [""] : layer.evidence
        lines.append("  \(name)  \(status)  \(facts[0])".trimmingTrailingSpaces)
        let indent = String(repeating: " ", count: 2 + nameWidth + 2 + statusWidth + 2)
        for fact in facts.dropFirst() { lines.append(indent + fact) }
    }
    if let broken = explanation.brokenLayer, let layer = explanation[broken], !layer.fix.isEmpty {
        lines.append("Fix: \(layer.fix)")
    }
    return lines.joined(separator: "\n")
}

extension String {
    fileprivate func padded(to width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }

    fileprivate var trimmingTrailingSpaces: String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
