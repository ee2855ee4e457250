extension NetworkState {
    /// The index of the visible-or-not link called `name`. Address checks resolve `%scope` with it.
    public func linkIndex(named name: String) -> Int32? { linkIndexByName[name] }

    public func linkName(index: Int32) -> String? { links[index]?.link.name }

    /// Combines the kernel's answer for one destination with the link states held here.
    /// `address` is the destination that was looked up.
    public func evaluate(lookup: RouteLookup, for address: IPAddress, target: String) -> CheckResult {
        var result = CheckResult(target: target, addresses: [address])
        if address.isUnspecified {
            return generalConnectivity(target: target, family: address.family)
        }
        let route: Route
        switch lookup {
        case let .failed(errno):
            // Refused by an unreachable, prohibit or blackhole route or rule: a kill switch, not
            // a missing route (the host's Reason says the same of its own path).
            result.reason = RouteType(refusal: errno) != nil ? .policyBlocked : .noRoute
            return result
        case let .route(found):
            route = found
        }
        if route.type == .local {
            // One of our own addresses: SC answers reachable, local and direct.
            let owner = addressOwners[address]?.min()
            result.flags = [.reachable, .isLocalAddress, .isDirect]
            result.interface = owner.flatMap { links[$0]?.link.name } ?? ""
            result.source = address
            return result
        }
        let path = evaluate(route: route, family: address.family, toward: address)
        result.flags = path.flags
        result.interface = path.interfaceName
        result.reason = path.reason
        result.gateway = path.gateway
        result.source = route.preferredSource
        if path.interfaceIndex != nil, path.gateway == nil { result.flags.insert(.isDirect) }
        return result
    }

    /// `0.0.0.0` and `::`: "is there general connectivity" (SC semantics), from the kernel's
    /// default route choice for that family.
    package func generalConnectivity(target: String, family: AddressFamily) -> CheckResult {
        var result = CheckResult(target: target, addresses: [family.any])
        let path = internetRoute(family: family).map { evaluate(route: $0, family: family) } ?? .noRoute
        let fallback = host
        if path.isReachable || fallback.primaryInterface.isEmpty {
            result.flags = path.flags
            result.interface = path.interfaceName
            result.reason = path.reason
            result.gateway = path.gateway
        } else {
            // This family has no way out, but the host does through the other one.
            result.flags = fallback.flags
            result.interface = fallback.primaryInterface
            result.reason = fallback.flags.contains(.reachable) ? nil : path.reason
        }
        return result
    }

    /// `0.0.0.0` and `::` for one user, from the kernel's internet paths for that user's traffic
    /// (`userPaths`, one lookup per family with RTA_UID). A user whose traffic follows the
    /// system's paths gets the system's answer; one that a rule sends elsewhere (a uidrange kill
    /// switch or split tunnel) gets its own: that family's path, else the other family's when
    /// only that one leads out.
    public func generalConnectivity(target: String, family: AddressFamily, userPaths: [AddressFamily: RouteLookup]) -> CheckResult {
        func route(_ family: AddressFamily) -> Route? { userPaths[family]?.route(family: family) }
        if AddressFamily.allCases.allSatisfy({ route($0) == internetRoute(family: $0) }) {
            return generalConnectivity(target: target, family: family)
        }
        var result = CheckResult(target: target, addresses: [family.any])
        let own = route(family).map { evaluate(route: $0, family: family) } ?? .noRoute
        let other = route(family.other).map { evaluate(route: $0, family: family.other) } ?? .noRoute
        let path = own.isReachable || !other.isReachable ? own : other
        result.flags = path.flags
        result.interface = path.interfaceName
        result.reason = path.reason
        result.gateway = path.gateway
        return result
    }
}
