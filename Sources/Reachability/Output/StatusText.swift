// Human-readable renderings for reachctl. Pure functions from values to text: the library
// never prints. Results have no trailing newline.

/// One line saying how the host is connected, as sd-notify STATUS= and the status header use it:
/// `online via wlan0 (wifi)`, `online via wg0 (vpn) over wlan0 (wifi)`,
/// `local, default route via eth0 (wired) not ready` (`...: the gateway does not answer ARP/ND`
/// when that is why), `offline`, `offline: wlan0 (wifi, radio off)`
/// when switched-off radios are why (`Reason` radioOff), and when the host's own traffic
/// stopped flowing `online via up0 (wired), but traffic is stalled: 9 sockets waiting for 12 s,
/// nothing received` (the figures when `stall` gives them).
///
/// `interfaces` supplies the primary link's kind; when the primary is not among them the kind is
/// read from the host flags (`isWiFi` -> wifi, ...), and left out when they name none.
public func renderSummary(_ host: HostStatus, interfaces: [InterfaceStatus] = [], stall: StallEvidence? = nil) -> String {
    guard !host.primaryInterface.isEmpty else { return host.state.rawValue + renderRadiosOff(host, interfaces, separator: ": ") }
    var via = host.primaryInterface
    if let kind = primaryKind(host, interfaces: interfaces) { via += " (\(kind.rawValue))" }
    if !host.underlyingInterface.isEmpty {
        via += " over \(host.underlyingInterface)"
        if let kind = interfaces.first(where: { $0.name == host.underlyingInterface })?.kind { via += " (\(kind.rawValue))" }
    }
    if host.state == .online {
        return "online via \(via)" + renderInternet(host.connectivity) + (host.stalled ? renderStall(stall) : "")
    }
    // The link is ready; its gateway is not: say which, not "not ready".
    let problem = host.pathFacts.reason == .gatewayUnreachable ? ": the gateway does not answer ARP/ND" : " not ready"
    return "\(host.state.rawValue), default route via \(via)\(problem)" + renderRadiosOff(host, interfaces, separator: "; ")
}

/// `wlan0 (wifi, radio off), wwan0 (cellular, radio off)` after `separator` when the host's
/// reason is radioOff (`, radio off` when `interfaces` names none of them); empty otherwise.
func renderRadiosOff(_ host: HostStatus, _ interfaces: [InterfaceStatus], separator: String) -> String {
    guard host.pathFacts.reason == .radioOff else { return "" }
    let off = interfaces.filter { $0.flags.contains(.radioOff) }.map { "\($0.name) (\($0.kind.rawValue), radio off)" }
    return off.isEmpty ? ", radio off" : separator + off.joined(separator: ", ")
}

/// `, internet: full`, `, internet: portal at http://login.example/`: the probe's verdict, when
/// there is one (nothing without the probe).
func renderInternet(_ status: ConnectivityStatus) -> String {
    switch status.verdict {
    case .unknown: ""
    case .portal: ", internet: portal" + (status.portal.isEmpty ? "" : " at \(status.portal)")
    case .none, .limited, .full: ", internet: \(status.verdict.rawValue)"
    }
}

/// `, but traffic is stalled: 9 sockets waiting for 12 s, nothing received`, or
/// `..., 5 DNS timeouts in a row` when DNS is the evidence; the figures left out when unknown.
func renderStall(_ evidence: StallEvidence?) -> String {
    var line = ", but traffic is stalled"
    guard let evidence else { return line }
    var figures: [String] = []
    if evidence.socketsFailing > 0 {
        let count = evidence.socketsFailing
        figures.append("\(count) socket\(count == 1 ? "" : "s") waiting for \(evidence.waiting.components.seconds) s, nothing received")
    }
    if evidence.dnsTimeouts > 0 { figures.append("\(evidence.dnsTimeouts) DNS timeouts in a row") }
    if !figures.isEmpty { line += ": " + figures.joined(separator: ", ") }
    return line
}

/// The figures behind the stall verdict for `reachctl status --verbose`:
/// `Traffic: stalled; 14 sockets judged, 9 waiting in retransmission (1 owner) for 12 s,
/// last receive 12 s ago, 0 DNS timeouts in a row` ("nothing ever received" when no judged
/// socket received a segment).
public func renderStallEvidence(stalled: Bool, _ evidence: StallEvidence?) -> String {
    guard let evidence else { return "Traffic: " + (stalled ? "stalled" : "no evidence (no TCP traffic judged)") }
    let owners = evidence.owners == 1 ? "1 owner" : "\(evidence.owners) owners"
    let receipt = evidence.sinceReceive.map { "last receive \($0.components.seconds) s ago" } ?? "nothing ever received"
    return "Traffic: \(stalled ? "stalled" : "flowing"); \(evidence.socketsJudged) sockets judged, "
        + "\(evidence.socketsFailing) waiting in retransmission (\(owners)) for \(evidence.waiting.components.seconds) s, "
        + "\(receipt), \(evidence.dnsTimeouts) DNS timeouts in a row"
}

/// A probe's verdict for people (`reachctl check --validate`): `internet: full (HTTP 204)`,
/// `internet: portal at http://login.example/ (HTTP 302)`; what the probe saw in parentheses.
public func renderValidation(_ status: ConnectivityStatus) -> String {
    var line = "internet: " + status.verdict.rawValue
    if !status.portal.isEmpty { line += " at \(status.portal)" }
    if !status.detail.isEmpty { line += " (\(status.detail))" }
    return line
}

/// The header `reachctl status` prints:
/// ```
/// State: online via wlan0 (wifi)
/// Flags: reachable|isWiFi
/// Available: wlan0, wwan0
/// Generation: 7
/// ```
/// with `Internet via: eth0, wlan0` after Available when the probe found the internet through
/// some of them, `Announced portal: URI` when a router advertised one (RFC 8910), `NAT64: PREFIX
/// (announced by ROUTER on LINK)` when a router announced one (RFC 8781), `Path: IPv4,
/// IPv6 via GATEWAYS` (the families and next hops the internet path carries) and `Reason: R`
/// (why the host is not online).
public func renderStatus(_ snapshot: ReachabilitySnapshot) -> String {
    let host = snapshot.host
    var lines = [
        "State: " + renderSummary(host, interfaces: snapshot.interfaces, stall: snapshot.stallEvidence),
        "Flags: " + (host.flags.isEmpty ? "none" : host.flags.description),
        "Available: " + (host.availableInterfaces.isEmpty ? "none" : renderAvailable(host.availableInterfaces, snapshot.interfaces)),
    ]
    if !host.validatedInterfaces.isEmpty { lines.append("Internet via: " + host.validatedInterfaces.joined(separator: ", ")) }
    if !host.announcedPortal.isEmpty { lines.append("Announced portal: " + host.announcedPortal) }
    if let nat64 = host.nat64Prefix { lines.append("NAT64: \(nat64.prefix) (announced by \(nat64.router) on \(nat64.interfaceName))") }
    let facts = host.pathFacts
    let families = [facts.supportsIPv4 ? "IPv4" : nil, facts.supportsIPv6 ? "IPv6" : nil].compactMap { $0 }
    if !families.isEmpty || !facts.gateways.isEmpty || facts.supportsDNS {
        let via = facts.gateways.isEmpty ? "" : " via " + facts.gateways.map(\.description).joined(separator: ", ")
        let carried = (families.isEmpty ? ["no global address"] : families) + (facts.supportsDNS ? ["DNS"] : [])
        lines.append("Path: " + carried.joined(separator: ", ") + via)
    }
    if let reason = facts.reason { lines.append("Reason: " + reason.rawValue) }
    lines.append("Generation: \(snapshot.generation)")
    return lines.joined(separator: "\n")
}

/// `wlan0 (stalled), wwan0`: the available interfaces, each whose own traffic stopped flowing
/// marked, so a user sees which uplink still carries traffic.
func renderAvailable(_ names: [String], _ interfaces: [InterfaceStatus]) -> String {
    names.map { name in
        interfaces.first { $0.name == name }?.flags.contains(.stalled) == true ? name + " (stalled)" : name
    }.joined(separator: ", ")
}

/// The interface table `reachctl interfaces` prints: columns INDEX NAME KIND FLAGS ADDRESSES,
/// separated by two spaces and aligned on the widest cell, INDEX right-aligned. An interface with
/// several addresses lists the first on its row and each further one on a continuation line under
/// the ADDRESSES column; `-` stands for no flags or no addresses. No line has trailing spaces.
public func renderInterfaces(_ snapshot: ReachabilitySnapshot) -> String {
    renderInterfaceTable(snapshot.interfaces)
}

/// The table of `renderInterfaces` for any list of interfaces, in the order given.
public func renderInterfaceTable(_ interfaces: [InterfaceStatus]) -> String {
    let header = ["INDEX", "NAME", "KIND", "FLAGS", "ADDRESSES"]
    let rows = interfaces.map { interface in
        [
            String(interface.index),
            interface.name,
            interface.kind.rawValue,
            interface.flags.isEmpty ? "-" : interface.flags.description,
        ]
    }
    // Widths of the four fixed columns; ADDRESSES is last and never padded.
    var widths = header.prefix(4).map(\.count)
    for row in rows {
        for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
    }
    let separator = "  "
    func line(_ cells: [String], addresses: String) -> String {
        var text = pad(cells[0], to: widths[0], right: true)
        for column in 1..<4 { text += separator + pad(cells[column], to: widths[column], right: false) }
        return text + separator + addresses
    }
    let indent = String(repeating: " ", count: widths.reduce(0, +) + 4 * separator.count)

    var lines = [line(Array(header.prefix(4)), addresses: header[4])]
    for (row, interface) in zip(rows, interfaces) {
        let addresses = interface.addresses.map(\.description)
        lines.append(line(row, addresses: addresses.first ?? "-"))
        for address in addresses.dropFirst() { lines.append(indent + address) }
    }
    return lines.joined(separator: "\n")
}

/// One line per change for `reachctl monitor`: the generation, the host summary and flags, then
/// each changed interface with its flags and each removed one:
/// `gen 8: online via eth0 (wired) [reachable|isWired]; eth1: connectionRequired|isWired; usb0: removed`.
public func renderChange(_ change: ReachabilityChange) -> String {
    let summary = renderSummary(change.host, interfaces: change.changedInterfaces)
    let hostFlags = change.host.flags.names.joined(separator: "|")
    var parts = ["gen \(change.generation): \(summary) [\(hostFlags)]"]
    for interface in change.changedInterfaces {
        parts.append("\(interface.name): \(interface.flags)")
    }
    for interface in change.removedInterfaces {
        parts.append("\(interface.name): removed")
    }
    return parts.joined(separator: "; ")
}

/// The primary link's kind: from the interface list, else from the host's kind flags.
private func primaryKind(_ host: HostStatus, interfaces: [InterfaceStatus]) -> InterfaceKind? {
    if let interface = interfaces.first(where: { $0.name == host.primaryInterface }) { return interface.kind }
    // Most specific first: a VPN path may also carry the flags of the link beneath it.
    let byFlag: [(ReachabilityFlags, InterfaceKind)] = [
        (.isVPN, .vpn), (.isWWAN, .cellular), (.isWiFi, .wifi), (.isWired, .wired),
    ]
    return byFlag.first { host.flags.contains($0.0) }?.1
}

private func pad(_ text: String, to width: Int, right: Bool) -> String {
    let fill = String(repeating: " ", count: max(0, width - text.count))
    return right ? fill + text : text + fill
}

/// A check's verdict for people: the verdict line, then what it rests on.
///
///     203.0.113.5: reachable via eth0 (gateway 192.0.2.1, source 192.0.2.2) [reachable|isWired]
///     example.test: not reachable: dnsNotFound (no such name)
public func renderCheck(_ result: CheckResult) -> String {
    let verdict = result.isReachable ? "reachable" : "not reachable"
    var line = "\(result.target): \(verdict)"
    if !result.interface.isEmpty { line += " via \(result.interface)" }
    var details: [String] = []
    if let gateway = result.gateway { details.append("gateway \(gateway)") }
    if let source = result.source { details.append("source \(source)") }
    if !details.isEmpty { line += " (" + details.joined(separator: ", ") + ")" }
    if !result.flags.isEmpty { line += " [\(result.flags)]" }
    if let reason = result.reason {
        line += ": \(reason.rawValue)"
        if let message = result.message { line += " (\(message))" }
    }
    let resolved = result.addresses.map(\.description)
    if !resolved.isEmpty, resolved != [result.target] { line += "\n  addresses: " + resolved.joined(separator: ", ") }
    return line
}
