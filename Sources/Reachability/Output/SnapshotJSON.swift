// The JSON shapes of reachctl (reachctl(1), --json; docs/admins.md): the D-Bus names in
// lowerCamelCase, keys in a fixed order (flags first), flags as arrays of names in the order of `ReachabilityFlags.named`.

extension ReachabilityFlags {
    /// The set flags' names, in documented order: `["reachable", "isDirect", "isWiFi"]`.
    package var json: JSONValue { .array(names.map(JSONValue.string)) }
}

extension InterfaceStatus {
    /// `{"index":3,"name":"wlan0","kind":"wifi","state":"ready","flags":["reachable","isWiFi"],"addresses":["192.0.2.5/24"],"stalled":false,"expensiveReason":"","networkID":""}`
    /// (`state`: the text's STATE in one word, `ready`, `not ready`, `radio off` or `down`;
    /// `stalled`: the link's own TCP traffic stopped flowing; the `stalled` flag too;
    /// `expensiveReason`: why `isExpensive` is among its flags, or empty; `networkID`: the name of
    /// the network it is attached to, or empty).
    package var json: JSONValue {
        .object([
            ("index", .int(Int64(index))),
            ("name", .string(name)),
            ("kind", .string(kind.rawValue)),
            ("state", .string(interfaceStateWords(flags)[0].word)),
            ("flags", flags.json),
            ("addresses", .array(addresses.map { .string($0.description) })),
            ("stalled", .bool(flags.contains(.stalled))),
            ("expensiveReason", .string(expensiveReason?.rawValue ?? "")),
            ("networkID", .string(networkID)),
            ("portal", .string(portal)),
            ("portalSource", .string(portalSource?.rawValue ?? "")),
        ])
    }
}

extension HostStatus {
    /// The host members shared by snapshots and changes, in documented order:
    /// `flags`, `state`, `primaryInterface`, `availableInterfaces`, `underlyingInterface`,
    /// `connectivity` (the probe's verdict: `unknown` without it), `portal` (where the probe was
    /// redirected, or empty), `announcedPortal` (the RFC 8910 URI a router or DHCP announced, or
    /// empty), `portalSession` (what that URI's RFC 8908 API said: `PortalSession.json`),
    /// `nat64Prefix`, `nat64Router`, `nat64Interface` (the NAT64 prefix a router announced, RFC
    /// 8781, which router and on which link; each empty when none is),
    /// `validatedInterfaces` (the available interfaces the probe found the internet through),
    /// `stalled` (the host's own traffic through its path stopped flowing), `expensiveReason`
    /// (why `isExpensive` is in the flags, or empty: `ExpensiveReason`), and the path facts:
    /// `supportsIPv4`, `supportsIPv6`, `supportsDNS`, `gateways`, `reason` ("" when online).
    package var jsonMembers: [(String, JSONValue)] {
        [
            ("flags", flags.json),
            ("state", .string(state.rawValue)),
            ("primaryInterface", .string(primaryInterface)),
            ("availableInterfaces", .array(availableInterfaces.map(JSONValue.string))),
            ("underlyingInterface", .string(underlyingInterface)),
            ("connectivity", .string(connectivity.verdict.rawValue)),
            ("portal", .string(connectivity.portal)),
            ("announcedPortal", .string(announcedPortal)),
            ("portalSession", portalSession.json),
            ("nat64Prefix", .string(nat64Prefix?.prefix.description ?? "")),
            ("nat64Router", .string(nat64Prefix?.router.description ?? "")),
            ("nat64Interface", .string(nat64Prefix?.interfaceName ?? "")),
            ("validatedInterfaces", .array(validatedInterfaces.map(JSONValue.string))),
            ("stalled", .bool(stalled)),
            ("expensiveReason", .string(expensiveReason?.rawValue ?? "")),
            ("networkID", .string(networkID)),
            ("supportsIPv4", .bool(pathFacts.supportsIPv4)),
            ("supportsIPv6", .bool(pathFacts.supportsIPv6)),
            ("supportsDNS", .bool(pathFacts.supportsDNS)),
            ("nameservers", .array(pathFacts.nameservers.map { server in
                .object([("address", .string(server.description)), ("routable", .bool(pathFacts.routableNameservers.contains(server)))])
            })),
            ("gateways", .array(pathFacts.gateways.map { .string($0.description) })),
            ("reason", .string(pathFacts.reason?.rawValue ?? "")),
        ]
    }
}

extension ReachabilitySnapshot {
    /// `{"flags":[...],"state":"online","primaryInterface":"wlan0","availableInterfaces":[...],
    /// "generation":7,"interfaces":[...]}`
    package var json: JSONValue {
        .object(
            host.jsonMembers + [
                ("generation", .uint(generation)),
                ("interfaces", .array(interfaces.map(\.json))),
            ])
    }
}

extension ReachabilityChange {
    /// The host members and `generation` as in a snapshot, then `changedInterfaces` (full interface
    /// objects) and `removedInterfaces` (names only), then what the host change changed
    /// (`changed`, `HostChange.Aspect`'s words, empty when the host's answer did not change) and
    /// whether sockets must be rebound (`rebind`).
    package var json: JSONValue {
        .object(
            host.jsonMembers + [
                ("generation", .uint(generation)),
                ("changedInterfaces", .array(changedInterfaces.map(\.json))),
                ("removedInterfaces", .array(removedInterfaces.map { .string($0.name) })),
                ("changed", .array((hostChange?.changedNames ?? []).map { .string($0) })),
                ("rebind", .bool(hostChange?.rebind ?? false)),
            ])
    }
}

extension StallEvidence {
    /// `{"sockets":14,"socketsFailing":9,"owners":1,"secondsWaiting":12,"secondsSinceReceive":12,
    /// "dnsTimeouts":0,"nameserverSilent":false}`: the figures behind `stalled` (`reachctl status
    /// --verbose --json`, as `stallEvidence`); `secondsSinceReceive` is null when no judged socket
    /// ever received.
    package var json: JSONValue {
        .object([
            ("sockets", .int(Int64(socketsJudged))),
            ("socketsFailing", .int(Int64(socketsFailing))),
            ("owners", .int(Int64(owners))),
            ("secondsWaiting", .int(waiting.components.seconds)),
            ("secondsSinceReceive", sinceReceive.map { .int($0.components.seconds) } ?? .null),
            ("dnsTimeouts", .int(Int64(dnsTimeouts))),
            ("nameserverSilent", .bool(nameserverSilent)),
        ])
    }
}

extension ConnectivityStatus {
    /// `{"connectivity":"portal","portal":"http://login.example/","detail":"HTTP 302"}`: the
    /// Validate reply in lowerCamelCase (`reachctl check --validate --json`).
    package var json: JSONValue {
        .object([("connectivity", .string(verdict.rawValue)), ("portal", .string(portal)), ("detail", .string(detail))])
    }
}

extension CheckResult {
    /// `{"target":"example.org","flags":[...],"interface":"wlan0","addresses":[...],"reason":"",...}`:
    /// the CheckAddress/CheckHost reply in lowerCamelCase. `reason` is "" when reachable, as on
    /// D-Bus; `gateway`, `source` and `message` appear only when known.
    package var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("target", .string(target)),
            ("flags", flags.json),
            ("interface", .string(interface)),
            ("addresses", .array(addresses.map { .string($0.description) })),
            ("reason", .string(reason?.rawValue ?? "")),
        ]
        if let gateway { members.append(("gateway", .string(gateway.description))) }
        if let source { members.append(("source", .string(source.description))) }
        if let message { members.append(("message", .string(message))) }
        return .object(members)
    }
}

extension PortalSession {
    /// `{"captive":false,"loginURL":"","venueURL":"","ends":0,"bytesRemaining":-1,"canExtend":false,"ending":false}`:
    /// `ends` in microseconds since the epoch (0: not said), `bytesRemaining` -1 when not said.
    package var json: JSONValue {
        .object([
            ("captive", .bool(captive)),
            ("loginURL", .string(loginURL)),
            ("venueURL", .string(venueURL)),
            ("ends", .uint(ends)),
            ("bytesRemaining", .int(bytesRemaining)),
            ("canExtend", .bool(canExtend)),
            ("ending", .bool(ending)),
        ])
    }
}
