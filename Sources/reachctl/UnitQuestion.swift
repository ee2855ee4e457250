import ArgumentParser
import Reachability

/// `--unit NAME` of check, why, is and status: reachd's CheckUnit, never in-process (the unit's
/// sandbox is systemd's to tell and reachd's to judge). A host name is resolved first as the
/// host resolves it (CheckHost), then each of its addresses is judged for the unit until one is
/// reachable; without a target, the internet ("").
enum UnitQuestion {
    /// `--unit NAME`, as check, why and is take it.
    struct Option: ParsableArguments {
        @ArgumentParser.Option(
            name: .customLong("unit"),
            help: ArgumentHelp(
                "Answer as this systemd service's own traffic would go: its user, namespace, IPAddressDeny=, RestrictNetworkInterfaces=, RestrictAddressFamilies= (reachd only).",
                valueName: "unit"))
        var unit: String?

        func validate() throws {
            if let unit, case let .failure(refusal) = UnitName.validate(unit) { throw ValidationError("--unit: \(refusal.description).") }
        }
    }

    static let needsReachd = "--unit needs reachd running: it reads the unit's sandbox from systemd and routes as the unit's traffic goes"

    static func ask(_ unit: String, _ target: String, options: CommonOptions, timeout: Duration? = nil) async throws
        -> (result: CheckResult, explanation: Explanation)
    {
        guard !options.answersInProcess else { throw ReachctlError(needsReachd + " (--netns and --sysfs-root answer in-process)") }
        let source: DaemonSource
        do {
            source = try DaemonSource.open(options.bus, probeTimeout: CommonOptions.probeTimeout)
        } catch {
            throw ReachctlError(needsReachd + "; reachd is not answering: \(error)")
        }
        defer { source.stop() }
        guard !target.isEmpty, !AddressTarget.looksLikeAddress(target) else { return try await source.checkUnit(unit, target) }
        let resolved = try await source.check(target, timeout: timeout, asUser: nil)
        if resolved.reason == .invalidTarget { throw ReachctlError("invalid target: \(resolved.message ?? target)") }
        guard !resolved.addresses.isEmpty else {
            var explanation = try await source.checkUnit(unit, "").explanation
            explanation = explanation.resolving(resolved)
            return (resolved, explanation)
        }
        var first: (result: CheckResult, explanation: Explanation)?
        for address in resolved.addresses.prefix(8) {
            var answer = try await source.checkUnit(unit, address.description)
            answer.result.target = target
            answer.result.addresses = resolved.addresses
            answer.explanation = answer.explanation.resolving(resolved)
            answer.explanation.target = target
            if answer.result.isReachable { return answer }
            first = first ?? answer
        }
        return first!
    }

    /// The unit's own traffic layer, when CheckUnit judged it apart from the host's (a unit
    /// reachd.conf's `[Units] Watch=` names: its reply's TrafficScope); nil when the traffic
    /// layer is the host's.
    static func ownTraffic(_ explanation: Explanation) -> Explanation.Layer? {
        explanation.trafficScope == .unit ? explanation[.traffic] : nil
    }
}
