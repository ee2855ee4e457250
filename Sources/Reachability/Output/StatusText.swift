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
package func renderSummary(_ host: HostStatus, interfaces: [InterfaceStatus] = [], stall: StallEvidence? = nil) -> String {
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
package func renderRadiosOff(_ host: HostStatus, _ interfaces: [InterfaceStatus], separator: String) -> String {
    guard host.pathFacts.reason == .radioOff else { return "" }
    let off = interfaces.filter { $0.flags.contains(.radioOff) }.map { "\($0.name) (\($0.kind.rawValue), radio off)" }
    return off.isEmpty ? ", radio off" : separator + off.joined(separator: ", ")
}

/// `, internet: full`, `, internet: portal at http://login.example/`: the probe's verdict, when
/// there is one (nothing without the probe).
package func renderInternet(_ status: ConnectivityStatus) -> String {
    switch status.verdict {
    case .unknown: ""
    case .portal: ", internet: portal" + (status.portal.isEmpty ? "" : " at \(status.portal)")
    case .none, .limited, .full: ", internet: \(status.verdict.rawValue)"
    }
}

/// `, but traffic is stalled: 9 sockets waiting for 12 s, nothing received`, or
/// `..., 5 DNS timeouts in a row` when DNS is the evidence; the figures left out when unknown.
package func renderStall(_ evidence: StallEvidence?) -> String {
    var line = ", but traffic is stalled"
    guard let evidence else { return line }
    var figures: [String] = []
    if evidence.socketsFailing > 0 {
        let count = evidence.socketsFailing
        figures.append("\(count) socket\(count == 1 ? "" : "s") waiting for \(evidence.waiting.components.seconds) s, nothing received")
    }
    if evidence.dnsTimeouts > 0 { figures.append("\(evidence.dnsTimeouts) DNS timeouts in a row") }
    if evidence.nameserverSilent { figures.append("the nameserver beyond the link silent too") }
    if !figures.isEmpty { line += ": " + figures.joined(separator: ", ") }
    return line
}

/// The figures behind the stall verdict for `reachctl status --verbose`:
/// `Traffic: stalled; 14 sockets judged, 9 waiting in retransmission (1 owner) for 12 s,
/// last receive 12 s ago, 0 DNS timeouts in a row` ("nothing ever received" when no judged
/// socket received a segment).
package func renderStallEvidence(stalled: Bool, _ evidence: StallEvidence?) -> String {
    guard let evidence else { return "Traffic: " + (stalled ? "stalled" : "no evidence (no TCP traffic judged)") }
    let owners = evidence.owners == 1 ? "1 owner" : "\(evidence.owners) owners"
    let receipt = evidence.sinceReceive.map { "last receive \($0.components.seconds) s ago" } ?? "nothing ever received"
    return "Traffic: \(stalled ? "stalled" : "flowing"); \(evidence.socketsJudged) sockets judged, "
        + "\(evidence.socketsFailing) waiting in retransmission (\(owners)) for \(evidence.waiting.components.seconds) s, "
        + "\(receipt), \(evidence.dnsTimeouts) DNS timeouts in a row"
        + (evidence.nameserverSilent ? ", the nameserver beyond the link silent" : "")
}

/// A probe's verdict for people (`reachctl check --validate`): `internet: full (HTTP 204)`,
/// `internet: portal at http://login.example/ (HTTP 302)`; what the probe saw in parentheses.
package func renderValidation(_ status: ConnectivityStatus) -> String {
    var line = "internet: " + status.verdict.rawValue
    if !status.portal.isEmpty { line += " at \(status.portal)" }
    if !status.detail.isEmpty { line += " (\(status.detail))" }
    return line
}

/// The header `reachctl status` prints, in an admin's words:
/// ```
/// State: online via wlan0 (wifi)
/// Available: wlan0, wwan0
/// Path: IPv4, IPv6 via 192.0.2.1, fe80::1
/// DNS: a nameserver is routable
/// ```
/// with `Internet via: eth0, wlan0` after Available when the probe found the internet through
/// some of them, `Announced portal: URI` when a router advertised one (RFC 8910), `NAT64: PREFIX
/// (announced by ROUTER on LINK)` when a router announced one (RFC 8781), `Path:` the families
/// and next hops the internet path carries, `DNS:` whether a configured nameserver can be
/// reached (SupportsDNS: its own line, so that it never reads as DNS through the gateway) and
/// `Reason: R` (why the host is not online), `Address: only link-local IPv4 (...)` when every IPv4
/// address held is link-local and the host is not online. `style.verbose` adds `Flags:` (Apple's names, after
/// State) and `Generation:` (last); `style.colour` paints the state.
package func renderStatus(_ snapshot: ReachabilitySnapshot, style: TextStyle = .plain) -> String {
    let host = snapshot.host
    var lines = ["State: " + renderSummary(host, interfaces: snapshot.interfaces, stall: snapshot.stallEvidence, style: style)]
    if style.verbose { lines.append("Flags: " + renderFlags(host.flags)) }
    lines.append("Available: " + (host.availableInterfaces.isEmpty ? "none" : renderAvailable(host.availableInterfaces, snapshot.interfaces)))
    if !host.validatedInterfaces.isEmpty { lines.append("Internet via: " + host.validatedInterfaces.joined(separator: ", ")) }
    if host.flags.contains(.isExpensive) { lines.append("Metered: yes" + (host.expensiveReason.map { " (\($0.text))" } ?? "")) }
    if !host.announcedPortal.isEmpty { lines.append("Announced portal: " + host.announcedPortal) }
    if let portal = renderPortalSession(host.portalSession) { lines.append("Portal session: " + portal) }
    if let nat64 = host.nat64Prefix { lines.append("NAT64: \(nat64.prefix) (announced by \(nat64.router) on \(nat64.interfaceName))") }
    let facts = host.pathFacts
    let families = [facts.supportsIPv4 ? "IPv4" : nil, facts.supportsIPv6 ? "IPv6" : nil].compactMap { $0 }
    if !families.isEmpty || !facts.gateways.isEmpty {
        let via = facts.gateways.isEmpty ? "" : " via " + facts.gateways.map(\.description).joined(separator: ", ")
        lines.append("Path: " + (families.isEmpty ? "no global address" : families.joined(separator: ", ")) + via)
    }
    lines.append("DNS: " + renderDNS(facts, snapshot.stallEvidence, style: style))
    if let reason = facts.reason { lines.append("Reason: " + reason.rawValue) }
    if host.state != .online, let only = renderLinkLocalOnly(snapshot.interfaces) { lines.append("Address: " + only) }
    if style.verbose, !host.networkID.isEmpty { lines.append("Network: \(host.networkID)") }
    if style.verbose { lines.append("Generation: \(snapshot.generation)") }
    return lines.joined(separator: "\n")
}

/// `only link-local IPv4 (169.254.23.7/16 on up0): it reaches that link's neighbours, not the
/// internet; no DHCP server answered` when IPv4 addresses are held and every one is link-local
/// (RFC 3927: what a host gives itself without a lease); nil otherwise.
package func renderLinkLocalOnly(_ interfaces: [InterfaceStatus]) -> String? {
    let held = interfaces.flatMap { interface in
        interface.addresses.filter { $0.address.family == .ipv4 && !$0.address.isLoopback }.map { (interface.name, $0) }
    }
    guard let first = held.first, held.allSatisfy({ $0.1.address.isLinkLocal }) else { return nil }
    return "only link-local IPv4 (\(first.1) on \(first.0)): it reaches that link's neighbours, not the internet; "
        + "no DHCP server answered"
}

/// The `DNS:` line in one vocabulary with the stall's figures, naming the servers and what is
/// known of each: `192.0.2.53 routable` (a ready path leads to it; nothing was asked of it),
/// `10.0.0.9 not routable`, then `, but 5 lookups in a row timed out` when the system's lookups
/// say they do not answer and `, and reachd's own queries went unanswered` when the stall's
/// question did. `no nameserver routable` when none is configured; an older reachd that names
/// none gets `a nameserver is routable`.
package func renderDNS(_ facts: PathFacts, _ stall: StallEvidence?, style: TextStyle = .plain) -> String {
    let timeouts = stall?.dnsTimeouts ?? 0
    var servers: String
    if facts.nameservers.isEmpty {
        guard facts.supportsDNS else { return style.paint("no nameserver routable", .bad) }
        servers = "a nameserver is routable"
    } else {
        let routable = facts.nameservers.filter(facts.routableNameservers.contains)
        let unroutable = facts.nameservers.filter { !facts.routableNameservers.contains($0) }
        servers = [routable.isEmpty ? nil : spokenList(routable) + " routable", unroutable.isEmpty ? nil : spokenList(unroutable) + " not routable"]
            .compactMap { $0 }.joined(separator: "; ")
    }
    let tone: TextStyle.Tone = !facts.supportsDNS ? .bad : timeouts > 0 || stall?.nameserverSilent == true ? .degraded : .good
    var line = style.paint(servers, tone)
    if timeouts > 0 { line += ", but \(timeouts) lookup\(timeouts == 1 ? "" : "s") in a row timed out" }
    if stall?.nameserverSilent == true { line += (timeouts > 0 ? ", and" : ", but") + " reachd's own queries went unanswered" }
    return line
}

/// `a`, `a and b`, `a, b and c`.
private func spokenList(_ addresses: [IPAddress]) -> String {
    let words = addresses.map(\.description)
    guard words.count > 1 else { return words.first ?? "" }
    return words.dropLast().joined(separator: ", ") + " and " + words[words.count - 1]
}

/// Flags as Apple names them, `none` when there are none: the one spelling of empty flags in
/// status, interfaces and monitor.
public func renderFlags(_ flags: ReachabilityFlags) -> String {
    flags.isEmpty ? "none" : flags.description
}

/// `wlan0 (stalled), wwan0`: the available interfaces, each whose own traffic stopped flowing
/// marked, so a user sees which uplink still carries traffic.
package func renderAvailable(_ names: [String], _ interfaces: [InterfaceStatus]) -> String {
    names.map { name in
        interfaces.first { $0.name == name }?.flags.contains(.stalled) == true ? name + " (stalled)" : name
    }.joined(separator: ", ")
}

/// The interface table `reachctl interfaces` prints: columns INDEX NAME KIND STATE ADDRESSES
/// (STATE in words: `interfaceStateWords`), separated by two spaces and aligned on the widest
/// cell, INDEX right-aligned. An interface with several addresses lists the first on its row
/// and each further one on a continuation line under the ADDRESSES column; `-` stands for no
/// addresses. No line has trailing spaces.
package func renderInterfaces(_ snapshot: ReachabilitySnapshot, style: TextStyle = .plain, legend: Bool = true) -> String {
    renderInterfaceTable(snapshot.interfaces, style: style, legend: legend)
}

/// The table of `renderInterfaces` for any list of interfaces, in the order given. `legend`:
/// the header line (`--no-legend` drops it, as systemctl's does); `style.verbose` adds a FLAGS
/// column with Apple's names (`none` for none) and a NETWORK column (the network's name, `-`); `style.colour` paints the states, which never
/// moves a column: widths are measured on the words.
package func renderInterfaceTable(_ interfaces: [InterfaceStatus], style: TextStyle = .plain, legend: Bool = true) -> String {
    var header = ["INDEX", "NAME", "KIND", "STATE"]
    if style.verbose { header += ["FLAGS", "NETWORK"] }
    let fixed = header.count
    header.append("ADDRESSES")
    let rows = interfaces.map { interface in
        [String(interface.index), interface.name, interface.kind.rawValue, renderInterfaceState(interface.flags, .plain)]
            + (style.verbose ? [renderFlags(interface.flags), interface.networkID.isEmpty ? "-" : interface.networkID] : [])
    }
    // Widths of the fixed columns; ADDRESSES is last and never padded.
    var widths = header.prefix(fixed).map(\.count)
    for row in rows {
        for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
    }
    let separator = "  "
    let stateColumn = 3
    func line(_ cells: [String], addresses: String, flags: ReachabilityFlags?) -> String {
        var text = pad(cells[0], to: widths[0], right: true)
        for column in 1..<fixed {
            var cell = pad(cells[column], to: widths[column], right: false)
            if column == stateColumn, let flags, style.colour {
                cell = renderInterfaceState(flags, style) + String(repeating: " ", count: widths[column] - cells[column].count)
            }
            text += separator + cell
        }
        return text + separator + addresses
    }
    let indent = String(repeating: " ", count: widths.reduce(0, +) + fixed * separator.count)

    var lines = legend ? [line(Array(header.prefix(fixed)), addresses: header[fixed], flags: nil)] : []
    for (row, interface) in zip(rows, interfaces) {
        let addresses = interface.addresses.map(\.description)
        lines.append(line(row, addresses: addresses.first ?? "-", flags: interface.flags))
        for address in addresses.dropFirst() { lines.append(indent + address) }
    }
    return lines.joined(separator: "\n")
}

/// One line per change for `reachctl monitor`, every line of one shape: the host summary (with
/// the reason when it is not online, unless the summary says it in words already: `local:
/// noRoute`, `local, default route via eth0 (wired) not ready: linkDown`), then each interface
/// that changed with its kind and state, and each removed one:
/// `online via eth0 (wired); eth1 (wired): not ready; usb0 (cellular): removed`.
/// `style.verbose` puts the generation first and Apple's flags after the host and each
/// interface (`none` when empty, as status prints them):
/// `gen 8: online via eth0 (wired) [reachable|isWired]; eth1 (wired): not ready [connectionRequired|isWired]; usb0 (cellular): removed`.
/// `known`: the interfaces seen so far, so the primary's kind is named even when it did not change.
package func renderChange(_ change: ReachabilityChange, known: [InterfaceStatus] = [], style: TextStyle = .plain) -> String {
    let interfaces = change.changedInterfaces + known.filter { old in !change.changedInterfaces.contains { $0.index == old.index } }
    var host = renderSummary(change.host, interfaces: interfaces, style: style)
    let summary = renderSummary(change.host, interfaces: interfaces)
    if change.host.state != .online, !summary.contains(": "), let reason = change.host.pathFacts.reason { host += ": \(reason.rawValue)" }
    if style.verbose { host += " [\(renderFlags(change.host.flags))]" }
    // A source address went away or was replaced: what a client must act on, said always; the
    // aspects that moved, with --verbose.
    if change.hostChange?.rebind == true { host += " (rebind)" }
    if style.verbose, let described = change.hostChange, !described.changed.isEmpty {
        host += " {\(described.changedNames.joined(separator: ","))}"
    }
    var parts = [(style.verbose ? "gen \(change.generation): " : "") + host]
    for interface in change.changedInterfaces {
        var part = "\(interface.name) (\(interface.kind.rawValue)): \(renderInterfaceState(interface.flags, style))"
        if style.verbose { part += " [\(renderFlags(interface.flags))]" }
        parts.append(part)
    }
    for interface in change.removedInterfaces {
        parts.append("\(interface.name) (\(interface.kind.rawValue)): removed")
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
///     203.0.113.5: reachable via eth0 (gateway 192.0.2.1, source 192.0.2.2)
///     example.test: not reachable: dnsNotFound (no such name)
///
/// `style.verbose` adds Apple's flags after the details (`[reachable|isWired]`); `style.colour`
/// paints the verdict.
package func renderCheck(_ result: CheckResult, style: TextStyle = .plain) -> String {
    let verdict = result.isReachable ? style.paint("reachable", .good) : style.paint("not reachable", .bad)
    var line = "\(result.target): \(verdict)"
    if !result.interface.isEmpty { line += " via \(result.interface)" }
    var details: [String] = []
    if let gateway = result.gateway { details.append("gateway \(gateway)") }
    if let source = result.source { details.append("source \(source)") }
    if !details.isEmpty { line += " (" + details.joined(separator: ", ") + ")" }
    if style.verbose { line += " [\(renderFlags(result.flags))]" }
    if let reason = result.reason {
        line += ": \(reason.rawValue)"
        if let message = result.message { line += " (\(message))" }
    }
    let resolved = result.addresses.map(\.description)
    if !resolved.isEmpty, resolved != [result.target] { line += "\n  addresses: " + resolved.joined(separator: ", ") }
    return line
}

/// What the network's portal API said, in a line: captive or not, the login page, the end (local
/// time), the bytes left, ending; nil when no API answered.
package func renderPortalSession(_ session: PortalSession) -> String? {
    guard session != .none else { return nil }
    var words = [session.captive ? "captive" : "logged in"]
    if !session.loginURL.isEmpty { words.append("login at " + session.loginURL.escapingControlCharacters()) }
    if session.ends > 0 { words.append("ends " + HistoryOutput.timestamp(session.ends)) }
    if session.bytesRemaining >= 0 { words.append("\(session.bytesRemaining) bytes left") }
    if session.ending { words.append("ending soon") }
    return words.joined(separator: ", ")
}
