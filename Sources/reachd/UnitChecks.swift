import Reachability

/// CheckUnit: the answer for a destination as a systemd service's traffic would go. Its sandbox
/// is read from systemd (`ServiceSandboxes`, asynchronous, under a deadline), its route asked as
/// its user in its namespace (the host's through `SharedState`; a namespace of its own through
/// `UnitRoutes`, whose socket a throwaway thread opens there), and `UnitPolicy` judges the rest.
///
/// Who may ask: root about any service; any other user about the services whose traffic is
/// theirs (the running main process's uid, else User='s): how another user's traffic is routed
/// is root's to ask, as CheckHostAsUser's. The refusal says whose the unit's traffic is.
final class UnitChecks {
    private let state: SharedState
    private let bus: BusConnection
    private let callers: Callers
    private let sandboxes: ServiceSandboxes
    /// A watched unit's own traffic stands in its explanation for the host's.
    private let traffic: UnitTraffic

    /// `sysfsRoot`: where sysfs is (`--sysfs-root`), whose fs/cgroup tells whether systemd can
    /// enforce IP address filters.
    init(state: SharedState, bus: BusConnection, callers: Callers, sysfsRoot: String, traffic: UnitTraffic) {
        self.state = state
        self.traffic = traffic
        self.bus = bus
        self.callers = callers
        sandboxes = ServiceSandboxes(bus: bus, sysfsRoot: sysfsRoot)
    }

    /// `CheckUnit(s unit, s target)`: replies once systemd answered (or did not, by its deadline).
    func check(_ message: BusMessage) throws(BusError) -> BusReply {
        let asked = try message.readString("unit", maximumBytes: ReachdContract.Bound.unit + 1)
        let target = try message.readString("target", maximumBytes: ReachdContract.Bound.address, refusal: ReachdContract.ErrorName.invalidTarget)
        let unit: String
        switch UnitName.validate(asked) {
        case let .success(name): unit = name
        case let .failure(refusal): throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: refusal.description)
        }
        let destinations = try Self.destinations(of: target)
        let call = OwnedBusMessage(retaining: message)
        try callers.withCaller(of: message) { [unowned self] caller in
            do throws(BusError) {
                let uid = try caller.get().uid
                try sandboxes.read(unit) { [unowned self] read in
                    do throws(BusError) {
                        let sandbox = try read.get()
                        try Self.admit(uid, to: sandbox)
                        let (result, explanation) = try answer(sandbox, target: target, destinations: destinations)
                        try bus.reply(to: call.message) { reply throws(BusError) in
                            try reply.append(result.flags.rawValue)
                            try reply.append(result.interface)
                            try reply.append(result.reason?.rawValue ?? "")
                            try ReachabilityService.appendDetails(reply, result, trafficScope: explanation.trafficScope)
                            try ReachabilityService.appendExplanation(reply, explanation)
                        }
                    } catch {
                        bus.reply(to: call.message, error: error)
                    }
                }
            } catch {
                bus.reply(to: call.message, error: error)
            }
        }
        return .later
    }

    /// An address, or the internet's destinations for "" (and `0.0.0.0`, `::`).
    private static func destinations(of target: String) throws(BusError) -> [IPAddress] {
        if target.isEmpty { return UnitRoutes.internetDestinations }
        switch AddressTarget.parse(target) {
        case let .failure(error): throw ReachabilityService.invalidTarget(error.description)
        case let .success(parsed) where parsed.scope != nil:
            throw ReachabilityService.invalidTarget("\(target.inertExcerpt()): a unit's check takes no scope (its links are not the host's to name)")
        case let .success(parsed): return parsed.address.isUnspecified ? UnitRoutes.internetDestinations : [parsed.address]
        }
    }

    private static func admit(_ caller: UInt32, to sandbox: UnitSandbox) throws(BusError) {
        guard caller != 0, sandbox.routedUID != caller else { return }
        let whose: String =
            switch sandbox.user {
            case let .known(uid): "uid \(uid)'s"
            case .dynamic: "a dynamic user's (DynamicUser=yes)"
            case let .unresolved(name): "User=\(name.inertExcerpt())'s"
            }
        throw BusError(
            name: "org.freedesktop.DBus.Error.AccessDenied",
            message: "uid \(caller) may ask about the services whose traffic is its own (root about any); \(sandbox.unit)'s traffic is \(whose)")
    }

    /// The unit's answer: each destination routed as the unit's would be and judged; reachable
    /// when any is, explained by the first reachable one (else the first).
    private func answer(_ sandbox: UnitSandbox, target: String, destinations: [IPAddress]) throws(BusError) -> (CheckResult, Explanation) {
        let namespace = UnitRoutes.namespace(of: sandbox)
        let uid = sandbox.routedUID ?? 0
        let routes: [CheckResult]
        switch namespace {
        case .host:
            routes = destinations.map { state.evaluate(addresses: [$0], target: target, uid: uid) }
        case .loopbackOnly:
            routes = destinations.map { CheckResult(target: target, addresses: [$0], reason: .noRoute) }
        case let .path(path):
            switch UnitRoutes.answers(destinations, target: target, in: path, uid: uid) {
            case let .success(found): routes = found
            case let .failure(error):
                throw BusError(
                    name: ReachdContract.ErrorName.noSuchUnit,
                    message: "reachd cannot route in \(sandbox.unit)'s network namespace \(path): \(error) "
                        + "(entering it needs CAP_SYS_ADMIN, which reachd as packaged does not hold)")
            }
        }
        let verdicts = zip(destinations, routes).map { UnitPolicy.judge(sandbox, namespace: namespace, destination: $0, route: $1) }
        let chosen = verdicts.first { $0.result.isReachable } ?? verdicts[0]
        let explained = chosen.result.addresses.first.map(\.description) ?? ""
        let host: Explanation
        switch state.explain(target.isEmpty ? "" : explained, uid: uid) {
        case let .success(found): host = found
        case let .failure(refusal): throw ReachabilityService.invalidTarget(refusal.description)
        }
        var explanation = UnitPolicy.explanation(host, chosen, namespace: namespace, unit: sandbox.unit)
        explanation.target = target
        if let own = traffic.verdicts(of: sandbox.unit), let index = explanation.layers.firstIndex(where: { $0.name == .traffic }) {
            explanation.layers[index] = state.withState { $0.unitTrafficLayer(sandbox.unit, own) }
            explanation.trafficScope = .unit
        }
        return (chosen.result, explanation)
    }
}
