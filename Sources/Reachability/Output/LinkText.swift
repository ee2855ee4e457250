#if canImport(Glibc)
import Glibc
#endif

/// Per-link questions, as networkctl asks them (`reachctl status eth0`, `reachctl interfaces
/// 'en*'`): which interfaces some names or shell patterns pick, and one link's status in words.

/// The interfaces whose name matches any of `patterns` (shell globs, as fnmatch(3) reads them:
/// `en*`, `wl?0`, `eth[01]`; a plain name matches itself), in the snapshot's order, and the
/// patterns that matched none.
package func selectInterfaces(_ patterns: [String], from interfaces: [InterfaceStatus]) -> (selected: [InterfaceStatus], unmatched: [String]) {
    func matches(_ pattern: String, _ name: String) -> Bool { fnmatch(pattern, name, 0) == 0 }
    let selected = interfaces.filter { interface in patterns.contains { matches($0, interface.name) } }
    let unmatched = patterns.filter { pattern in !interfaces.contains { matches(pattern, $0.name) } }
    return (selected, unmatched)
}

/// `reachctl status IFACE`: one link, in the words of `status`:
/// ```
/// eth0 (wired): ready
/// Addresses: 192.0.2.2/24, fe80::1/64
/// Default route: primary (the host is online via eth0)
/// ```
/// `Default route:` says whether the host's internet path leaves through the link (`primary`),
/// a usable default route does (`available`), or neither (`none`); `Metered: yes (REASON)`
/// follows when the link is metered; `style.verbose` adds `Flags:` and `Network:`.
package func renderLinkStatus(_ interface: InterfaceStatus, host: HostStatus, style: TextStyle = .plain) -> String {
    var lines = ["\(interface.name) (\(interface.kind.rawValue)): \(renderInterfaceState(interface.flags, style))"]
    if style.verbose { lines.append("Flags: " + renderFlags(interface.flags)) }
    lines.append("Addresses: " + (interface.addresses.isEmpty ? "none" : interface.addresses.map(\.description).joined(separator: ", ")))
    let route =
        if host.primaryInterface == interface.name {
            "primary (the host is \(host.state.rawValue) via \(interface.name))"
        } else if host.availableInterfaces.contains(interface.name) {
            "available (the host's path is \(host.primaryInterface.isEmpty ? "none" : host.primaryInterface))"
        } else { "none" }
    lines.append("Default route: " + route)
    if interface.flags.contains(.isExpensive) { lines.append("Metered: yes" + (interface.expensiveReason.map { " (\($0.text))" } ?? "")) }
    if style.verbose, !interface.networkID.isEmpty { lines.append("Network: \(interface.networkID)") }
    return lines.joined(separator: "\n")
}
