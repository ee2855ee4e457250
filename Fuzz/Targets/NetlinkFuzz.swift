// libFuzzer target: one rtnetlink datagram, as NetlinkSocket hands it to KernelSource and
// RouteQuery, through the decoder and on into the Engine and the output layer.
//
// The decoder reads bytes from the kernel (or, on a socket handed over by someone else, from
// whoever wrote them), so it must turn any bytes into messages or errors, never a trap. What it
// accepts then reaches the pure Engine, which must take any combination of well-formed messages
// (names of any bytes, indexes of any value, routes through links it never saw): that is fuzzed
// here too, because a datagram the decoder accepts is exactly what the Engine is given.
//
// Besides "no crash", two oracles: decoding is a pure function (the same bytes decode the same
// way twice), and a resync from a dump of the Engine's own facts changes nothing a user sees
// (KernelSource relies on that after every overrun).
@testable import Reachability

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNetlink(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let datagram = UnsafeRawBufferPointer(start: data, count: size)
    // One receive time for both: lifetimes become deadlines from it (`Route.expiry`).
    let received = ContinuousClock.now
    let monitorBatch = NetlinkDecoder.decode(datagram, received: received)
    let again = NetlinkDecoder.decode(datagram, received: received)
    require(
        monitorBatch.messages == again.messages && monitorBatch.errors == again.errors,
        "decoding the same bytes twice gave different results")
    // RouteQuery decodes its replies with cloned routes accepted.
    let lookupBatch = NetlinkDecoder.decode(datagram, acceptClonedRoutes: true)
    for error in monitorBatch.errors + lookupBatch.errors { _ = error.description }

    var state = NetworkState(classifier: fuzzClassifier)
    // KernelSource drops a datagram with any error; the Engine is fed what decoded anyway, since
    // a clean datagram can carry the same messages.
    let events = monitorBatch.messages.compactMap(event)
    _ = state.apply(events)
    // RouteQuery's answer for the internet destinations, as the mirror feeds it after a batch.
    let lookups = lookupBatch.messages.compactMap { decoded -> Route? in
        if case let .route(route) = decoded.message { return route }
        return nil
    }
    if let path = lookups.first {
        _ = state.apply([.internetPath(family: path.destination.address.family, route: path)])
    }

    // Checks answered from the kernel's route for each destination the datagram named.
    for route in lookups.prefix(8) {
        let address = route.destination.address
        _ = renderCheck(state.evaluate(lookup: .route(route), for: address, target: "\(address)"))
    }
    _ = state.evaluate(lookup: .failed(errno: 101), for: .anyV4, target: "0.0.0.0")
    _ = state.evaluate(lookup: .failed(errno: 0), for: .anyV6, target: "::")

    let snapshot = state.snapshot
    _ = snapshot.json.serialized()
    _ = renderStatus(snapshot)
    _ = renderInterfaces(snapshot)
    for status in snapshot.interfaces.prefix(4) {
        require(state.interface(named: status.name) != nil, "a listed interface cannot be found by its name")
    }

    // A resync from the Engine's own facts: nothing a user sees may change.
    var dump = NetworkDump()
    for entry in state.links.values.sorted(by: { $0.link.index < $1.link.index }) {
        dump.links.append((entry.link, entry.device))
        dump.addresses += entry.addresses.values
    }
    dump.routes = Array(state.routes.values)
    dump.internetPaths = state.internetPaths.map { (family: $0.key, route: $0.value) }
    let before = state.snapshot
    if let change = state.replace(with: dump) {
        require(
            change.changedInterfaces.isEmpty && change.removedInterfaces.isEmpty && !change.hostChanged,
            "a resync from the Engine's own facts changed what a user sees: \(change)")
    }
    require(state.snapshot.host == before.host && state.snapshot.interfaces == before.interfaces,
                 "a resync from the Engine's own facts changed the snapshot")
    return 0
}

/// KernelSource's mapping of decoded messages to Engine facts, with sysfs facts made up from the
/// link itself so every step of the classifier is reachable.
private func event(_ decoded: DecodedMessage) -> NetworkEvent? {
    switch decoded.message {
    case let .link(link): .link(link, device: deviceFacts(link))
    case let .linkRemoved(link): .linkRemoved(index: link.index)
    case let .address(address): .address(address)
    case let .addressRemoved(address): .addressRemoved(address)
    case let .route(route): .route(route, replace: decoded.header.isReplace)
    case let .routeRemoved(route): .routeRemoved(route)
    case .ruleChanged: .rulesChanged
    case let .neighbour(neighbour): .neighbour(neighbour)
    case let .neighbourRemoved(neighbour): .neighbourRemoved(neighbour)
    // A fixed instant: the fuzzer's runs must not depend on the clock.
    case let .announcedPortal(portal): .announcedPortal(portal, received: fuzzOrigin)
    case let .nat64Prefix(announced): .nat64Prefix(announced, received: fuzzOrigin)
    case .done, .error, .ignored, .refusedAnnouncement: nil
    }
}

private func deviceFacts(_ link: Link) -> DeviceFacts? {
    let selector = Int(UInt32(bitPattern: link.index) % 8)
    if selector == 7 { return nil }  // keep what is known, as for a link seen before
    let types: [String?] = [nil, "wlan", "wwan", "bridge"]
    let drivers: [String?] = [nil, "iwlwifi", "qmi_wwan", "e1000e"]
    return DeviceFacts(deviceType: types[selector % 4], hasPhy80211: selector & 4 != 0, driver: drivers[(selector / 2) % 4])
}

/// The instant every announcement of a run is received at (see `event(_:)`).
private let fuzzOrigin = ContinuousClock.now

/// Rules of every shape, so configured kinds, ignored and metered links take part.
private let fuzzClassifier = Classifier(
    rules: [
        InterfaceRule(pattern: "wl*", kind: .wifi, metered: true),
        InterfaceRule(pattern: "[!a-m]?[0-9]", ignore: true),
        InterfaceRule(pattern: "tun*", kind: .vpn, priority: 10),
        InterfaceRule(pattern: "*\\**", kind: .cellular),
    ],
    priorities: [.wired: 5, .wifi: 5])
