/// A fresh dump (the first sync, or a resync after an overrun) as the events that turn the state
/// into it (`NetworkState.replace`).
extension NetworkState {
    /// The events that turn the current state into `dump`: removals for what the dump lacks,
    /// then everything the dump holds (applying a known fact again changes nothing).
    package func reconcilingEvents(with dump: NetworkDump) -> [NetworkEvent] {
        var events: [NetworkEvent] = []
        let dumpLinks = Set(dump.links.map(\.0.index))
        for index in links.keys where !dumpLinks.contains(index) { events.append(.linkRemoved(index: index)) }
        events += dump.links.map { .link($0.0, device: $0.1) }
        let dumpAddresses = Set(dump.addresses.map(\.key))
        for entry in links.values {
            for (key, address) in entry.addresses where !dumpAddresses.contains(key) {
                events.append(.addressRemoved(address))
            }
        }
        events += dump.addresses.map { .address($0) }
        let dumpRoutes = Set(dump.routes.map(\.key))
        for (key, route) in routes where !dumpRoutes.contains(key) { events.append(.routeRemoved(route)) }
        events += dump.routes.map { .route($0, replace: false) }
        events += dump.internetPaths.map { .internetPath(family: $0.family, route: $0.route) }
        events += dump.radios.map { .radio(index: $0.index, $0.block) }
        events += reconcilingEvents(withNeighbours: dump.neighbours)
        return events
    }
}
