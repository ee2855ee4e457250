/// Where the host's internet traffic leaves from (`HostAddressing`): derived with the host's
/// answer on every publish, from the internet paths (two at most) and the primary link's
/// addresses, never from a pass over every link.
extension NetworkState {
    package func deriveAddressing(primary: String) -> HostAddressing {
        var sources: [IPAddress] = []
        for family in AddressFamily.allCases {
            guard let route = internetRoute(family: family) else { continue }
            let path = evaluate(route: route, family: family)
            guard path.isReachable, let index = path.interfaceIndex, let source = source(of: route, family: family, egress: index)
            else { continue }
            sources.append(source)
        }
        var addressing = HostAddressing(sources: sources, nameservers: nameservers.map(\.address))
        if let entry = linkIndexByName[primary].flatMap({ links[$0] }) {
            let usable = entry.addresses.values.filter(\.isUsableBeyondLink)
            addressing.addresses = usable.map(\.prefix).sorted(by: Self.addressOrder)
            addressing.deprecated = usable.filter { $0.flags.contains(.deprecated) }.map(\.prefix).sorted(by: Self.addressOrder)
        }
        return addressing
    }

    /// The source a new connection along `route` takes: the kernel's own choice when its answer
    /// names one (RTA_PREFSRC, which route lookups carry), else, as the kernel would pick, an
    /// address of the egress link usable beyond it, one not deprecated first, then the lowest
    /// (the same order as `uplinks()`); else one of another ready link's (Linux falls back to
    /// any interface's), the lowest index first.
    private func source(of route: Route, family: AddressFamily, egress: Int32) -> IPAddress? {
        if let preferred = route.preferredSource, preferred.family == family { return preferred }
        func pick(_ index: Int32) -> IPAddress? {
            let usable = links[index]?.addresses.values.filter { $0.address.family == family && $0.isUsableBeyondLink } ?? []
            return usable.min { a, b in
                let (x, y) = (a.flags.contains(.deprecated), b.flags.contains(.deprecated))
                return x != y ? !x : a.address.bytes.lexicographicallyPrecedes(b.address.bytes)
            }?.address
        }
        if let own = pick(egress) { return own }
        return (sourceCapable[family] ?? []).sorted().lazy.compactMap(pick).first
    }
}
