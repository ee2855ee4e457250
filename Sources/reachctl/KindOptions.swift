import ArgumentParser
import Reachability

/// `--kind` and `--not-kind` of `status` and `monitor`: the host's path restricted to interface
/// kinds, as a program gets it from the library's `PathMonitor` (NWPathMonitor's
/// requiredInterfaceType and prohibitedInterfaceTypes) and reachd's WatchPath.
struct KindOptions: ParsableArguments {
    @Option(
        name: .customLong("kind"),
        help: ArgumentHelp(
            "Judge the host's path as if only interfaces of this kind were there (wired, wifi, cellular, vpn, loopback, bridge, virtual, other): online only when one of them carries a default route and is ready.",
            valueName: "kind"))
    var kind: String?

    @Option(
        name: .customLong("not-kind"),
        help: ArgumentHelp(
            "Judge the host's path as if interfaces of this kind were not there (repeatable: --not-kind cellular --not-kind vpn).",
            valueName: "kind"))
    var notKinds: [String] = []

    /// The restriction asked for; nil when neither option was given (the host's own answer).
    var restriction: Path.Restriction? {
        guard kind != nil || !notKinds.isEmpty, case let .success(restriction) = Path.Restriction.parse(required: kind, prohibited: notKinds)
        else { return nil }
        return restriction
    }

    func validate() throws {
        if case let .failure(error) = Path.Restriction.parse(required: kind, prohibited: notKinds) {
            throw ValidationError("--kind/--not-kind: \(error.description).")
        }
    }

    /// Shared by status's and monitor's help: what the restricted answer means.
    static let discussion = """
        With --kind K (the one kind allowed) or --not-kind K (repeatable: kinds left out), the \
        answer is the host's path as a program restricted to those kinds sees it (the library's \
        PathMonitor, Apple's NWPathMonitor requiredInterfaceType and prohibitedInterfaceTypes; \
        reachd's WatchPath): satisfied when a ready interface of an allowed kind carries a default \
        route (and no kill switch blocks everything), else unsatisfied with a reason (noRoute; \
        linkDown when an allowed link is down; policyBlocked). Through reachd and in-process the \
        answer is the same derivation. A text line reads (--verbose adds the flags, \
        [reachable|isWiFi], after the interfaces or the state):
          kind wifi: satisfied via wlan0 (wifi), IPv4 via 192.0.2.1
          not wired: unsatisfied (offline): noRoute
        and --json prints status, state, flags, primaryInterface, availableInterfaces, interfaces \
        (index, name, kind), isExpensive, supportsIPv4, supportsIPv6, gateways, reason, \
        requiredKind and prohibitedKinds.
        """
}
